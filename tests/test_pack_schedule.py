"""How a local run hands packs to its CPU workers: longest first, and split so that no worker idles.

Both change only which process trains a cell and when, never its numbers (the packed engine's invariance,
tests/test_engine.py), so these tests check the plan itself: every cell exactly once, the order, the split."""

from __future__ import annotations

from pathlib import Path

import pytest

from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.pack_plan import pack_cost, spread_over_workers
from initmem.collect.execution.runner import plan_tasks
from initmem.collect.execution.shards import all_cells
from initmem.grid import load_grid

ROOT = Path(__file__).resolve().parents[1]


def _quick():
    """The quick preset's pipelines on five sigma_w levels: 20 cells a pipeline at 4 seeds, an even split."""
    return load_grid(ROOT / "configs" / "quick.yaml").model_copy(update={"sigma_w": [0.25, 0.5, 1.0, 2.0, 4.0]})


def _cells(tasks) -> list[tuple[str, float, int]]:
    return sorted((t.pipeline, s, k) for t in tasks for s, k in t.cells)


@pytest.mark.slow
def test_one_pipeline_is_split_over_two_workers_and_every_cell_is_trained_once(tmp_path: Path) -> None:
    grid = _quick()
    todo = {c for c in all_cells(grid) if c[0] == "sgd_l2"}
    run = GridFolder(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    one = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=1)
    two = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=2)
    assert [len(t.cells) for t in one] == [20]
    assert [len(t.cells) for t in two] == [10, 10]
    assert _cells(one) == _cells(two) == sorted(todo)
    # An explicit pack size is the user's: never split.
    fixed = plan_tasks(run, grid, todo, device="cpu", pack_size=20, workers=2)
    assert [len(t.cells) for t in fixed] == [20]


def test_a_second_look_packs_only_its_new_seeds_in_equal_halves(tmp_path: Path) -> None:
    """Seeds 4-7 added to one pipeline of an 8-seed grid: two packs of 10, not the 8 and 12 left by packing
    the whole grid (sigma_w-major) and dropping the cells seeds 0-3 already trained."""
    grid = _quick()
    grid = grid.model_copy(update={"seeds": list(range(8))})
    todo = {c for c in all_cells(grid) if c[0] == "sgd_low_lr" and c[2] >= 4}
    run = GridFolder(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    two = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=2)
    assert [len(t.cells) for t in two] == [10, 10]
    assert _cells(two) == sorted(todo)
    one = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=1)
    assert [len(t.cells) for t in one] == [20] and _cells(one) == sorted(todo)


@pytest.mark.slow
def test_packs_go_longest_first_when_workers_share_them(tmp_path: Path) -> None:
    grid = _quick()
    todo = set(all_cells(grid))
    run = GridFolder(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    tasks = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=2)
    costs = [pack_cost(grid, t.pipeline, len(t.cells)) for t in tasks]
    assert costs == sorted(costs, reverse=True)
    assert len(tasks) == len(grid.pipelines)              # 7 packs already keep 2 workers busy
    assert _cells(tasks) == sorted(todo)
    # 60 epochs x 32 steps (1,000 signals, batch 32) x 20 cells: steps times members
    assert pack_cost(grid, "sgd_low_lr", 20) == 60 * 32 * 20
    alone = plan_tasks(run, grid, todo, device="cpu", pack_size=None, workers=1)
    assert [t.pipeline for t in alone] == list(grid.pipelines)   # one worker: the grid's order


def test_spread_over_workers_halves_the_largest_pack_and_stops_at_single_cells() -> None:
    packs = [("a", [(1.0, 0), (1.0, 1), (2.0, 0)]), ("b", [(1.0, 0)])]
    out = spread_over_workers(packs, 4)
    assert sorted(len(c) for _, c in out) == [1, 1, 1, 1]
    assert sorted((p, c) for p, cells in out for c in cells) == sorted((p, c) for p, cells in packs for c in cells)
    assert len(spread_over_workers(packs, 8)) == 4     # 4 cells: no pack can be split further
    assert spread_over_workers(packs, 1) == packs

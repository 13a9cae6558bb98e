"""``initmem run --until-decided``: seeds added only where a pipeline is still undecided, with the error
spent across looks (docs/sequential.md).

A fixed design spends every seed on every pipeline, though a pipeline that clearly forgets (or remembers)
is decided by its first few. The sequential design collects the first look's seeds for every pipeline,
analyzes, freezes the verdict of every decided pipeline, adds seeds only to the undecided ones at the
next look, and stops when all are decided or the last look is reached.

Looking several times inflates the false-verdict rate of a rule used at a fixed level. Each look k
therefore decides at its own level alpha_k (models/sequential.py, ``SEQUENTIAL_DESIGN``): a Lan-DeMets
spending function of the O'Brien-Fleming type, alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at the
information fraction t_k = n_k / n_max (seeds at look k over seeds at the last look), with each look's
nominal level set so that the seeds' paired t tests on nested seeds spend exactly alpha*(t_k) by look k
(``PAIRED_T``; the union bound, ``UNION``, gives later looks less, and is kept for comparison). Measured on
the whole rule, every false verdict stays within alpha on every design (docs/sequential.md).
O'Brien-Fleming spending keeps almost nothing for early looks, so only an overwhelming early result stops
early, and the last look keeps most of alpha.

The cube grows along ``seed`` in one run folder: a cell trained at look k is the same cell a fixed
design with those seeds trains (seeds are common random numbers), so the sequential cube's cells are
bitwise those of the fixed run; cells never trained (decided pipelines at later seeds) are missing.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from initmem import names as N
from initmem import results as R
from initmem.atomic import atomic_path
from initmem.errors import OptionError
from initmem.jsonio import write_json
from initmem.models.sequential import DESIGNS, SEQUENTIAL_DESIGN, design_levels
from initmem.names import ALPHA

DEFAULT_LOOKS = (4, 8, 12, 16)
SEQUENTIAL_JSON = "sequential.json"
DECIDED = (N.REMEMBERS, N.FORGETS)


def check_looks(looks: Sequence[int], max_seeds: int | None) -> list[int]:
    """Looks as strictly increasing seed counts (>= 2), cut at ``max_seeds``."""
    out = [int(n) for n in looks]
    if not out or any(n < 2 for n in out) or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise OptionError("looks", f"{{option}} must be strictly increasing seed counts of at least 2 (got {out})")
    if max_seeds is not None:
        if max_seeds < out[0]:
            raise OptionError("max_seeds", f"{{option}} must be at least the first look's {out[0]} seeds")
        out = [n for n in out if n <= max_seeds]
    return out


def seeds_for(grid_seeds: Sequence[int], n: int) -> list[int]:
    """The first ``n`` seeds: the grid's own, then the next integers after its largest."""
    seeds = list(dict.fromkeys(int(s) for s in grid_seeds))
    nxt = max(seeds) + 1 if seeds else 0
    while len(seeds) < n:
        seeds.append(nxt)
        nxt += 1
    return seeds[:n]


def run_until_decided(
    grid: Any,
    out: Path,
    *,
    looks: Sequence[int],
    collect_fn: Callable[..., Path],
    analyze_fn: Callable[..., Any],
    analyze_options: dict[str, Any],
    say: Callable[[str], None],
    alpha: float = ALPHA,
    design: str = SEQUENTIAL_DESIGN,
) -> tuple[Path, Path, dict[str, Any]]:
    """Collect and analyze look by look; returns (cube, the final analysis folder, the look history).

    ``collect_fn(grid, out, only=cells)`` trains the cells asked for into ``out`` (resumable) and returns the
    cube; ``analyze_fn(cube, folder, alpha=..., **options)`` writes an analysis folder. Each look's analysis
    goes to ``out/analysis/looks/<n>-seeds``; the final folder ``out/analysis`` is the last look's, with every
    pipeline's verdict the one it was decided with, and its history under ``looks``. Look k's analysis runs
    at its level under ``design`` (models/sequential.py).
    """
    design = DESIGNS.get(design, design)
    levels = design_levels(looks, alpha, design)
    undecided = list(grid.pipelines)
    history: dict[str, list[dict[str, Any]]] = {p: [] for p in grid.pipelines}
    decided: dict[str, dict[str, Any]] = {}
    seeds_used: dict[str, int] = {}
    cube_path = out / R.CUBE_NC
    last_dir = out / R.RUN_ANALYSIS_DIR
    for k, (n, level) in enumerate(zip(looks, levels, strict=True)):
        g = grid.model_copy(update={"seeds": seeds_for(grid.seeds, n)})
        only = {(p, float(s), int(seed)) for p in undecided for s, seed in g.cells(p)}
        say(f"look {k + 1}/{len(looks)}: {n} seeds for {len(undecided)} undecided pipeline(s), level {level:.4g}")
        cube_path = collect_fn(g, out, only=only)
        look_dir = out / R.RUN_ANALYSIS_DIR / "looks" / f"{n}-seeds"
        summary = analyze_fn(cube_path, look_dir, alpha=level, **analyze_options)
        for p in undecided:
            res = summary.pipelines.get(p)
            verdict = res.verdict if res is not None else None
            history[p].append({"look": k + 1, "seeds": n, "level": level, "verdict": verdict,
                               "p_spread_gt_delta": getattr(res, "p_spread_gt_delta", None),
                               "p_spread_lt_delta": getattr(res, "p_spread_lt_delta", None)})
            seeds_used[p] = n
            if verdict in DECIDED:
                decided[p] = {"verdict": verdict, "look": k + 1, "seeds": n}
        undecided = [p for p in undecided if p not in decided]
        last_dir = look_dir
        if not undecided:
            break
    n_levels = len(grid.sigma_w)
    record = {
        "design": design,
        "alpha": alpha, "looks": list(looks), "levels": levels,
        "decided": decided, "undecided": undecided, "seeds_used": seeds_used,
        "runs_used": sum(seeds_used.values()) * n_levels,
        "runs_fixed": looks[-1] * n_levels * len(grid.pipelines),
        "history": history,
    }
    final_dir = out / R.RUN_ANALYSIS_DIR
    for path in last_dir.iterdir():  # the last look's posterior, curves and collapse test are the final ones
        if path.is_file():
            with atomic_path(final_dir / path.name) as tmp:  # a kill mid-copy leaves no half-written output
                shutil.copyfile(path, tmp)
    R.write_summary(final_dir, _final_summary(R.load_summary(last_dir), decided, history, record))
    write_json(out / R.RUN_ANALYSIS_DIR / SEQUENTIAL_JSON, record)
    return cube_path, final_dir, record


def _final_summary(last: R.Summary, decided: dict[str, dict[str, Any]], history: dict[str, list[dict]],
                   record: dict[str, Any]) -> R.Summary:
    """The last look's summary with each pipeline's sequential verdict and its look history."""
    for p, res in last.pipelines.items():
        if p in decided:
            res.verdict = decided[p]["verdict"]
        res.looks = [R.Look(**h) for h in history.get(p, [])]
    last.sequential = R.Sequential(**{k: v for k, v in record.items() if k != "history"})
    return last


__all__ = ["DEFAULT_LOOKS", "check_looks", "run_until_decided", "seeds_for"]

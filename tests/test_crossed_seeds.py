"""Crossed seed designs (grid ``seeds: {init: [...], data: [...]}``): the grid field and its run index, the
engine's random streams (exact identities: shared init seed -> bitwise the same initial kernels, shared data
seed -> the same batches, init = data = s -> what the plain seed s trains), the cube's ``init_seed`` and
``data_seed`` coordinates through every path that builds a cube (one pack, several packs, a grid folder's
shards, ``initmem import``), their validation, ``initmem inspect``, and the refusals (a resume that changes
a crossed design, a sequential run)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import xarray as xr

from initmem import cube
from initmem.analysis.sequential import run_until_decided
from initmem.collect.execution.grid_folder import grid_changes
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.execution.runner import collect
from initmem.collect.train.data import load_split
from initmem.collect.train.engine import PackTrainer, train_pack
from initmem.collect.train.nets import scaled_kernels
from initmem.errors import UserError
from initmem.grid import grid_hash, load_grid, parse_grid
from initmem.importers.table import cube_to_frame, frame_to_cube
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._collect_fake import fake_train_pack

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

SGD = {"optimizer": "sgd", "lr": 0.05, "batch_size": 128, "epochs": 1}


def tiny(seeds: object, *, sigma=(1.0, 2.0), augment: str = "none", epochs: int = 1) -> object:
    """A digits grid small enough to train in a second (resnet_tiny of width 4, one CPU thread)."""
    return parse_grid({
        "name": "tiny", "dataset": {"name": "digits", "augment": augment},
        "model": {"arch": "resnet_tiny", "width": 4}, "sigma_w": list(sigma), "seeds": seeds,
        "pipelines": {"a": {**SGD, "epochs": epochs}}, "engine": {"cpu_threads": 1},
    })


# -- the grid field --------------------------------------------------------------------------------------

def test_a_crossed_design_numbers_its_runs_row_major_over_init_then_data():
    g = tiny({"init": [7, 3], "data": [5, 0, 9]})
    assert g.crossed and g.seeds.init == [3, 7] and g.seeds.data == [0, 5, 9]   # sorted, as plain seeds are
    assert g.runs == list(range(6))
    assert [g.seed_pair(r) for r in g.runs] == [(3, 0), (3, 5), (3, 9), (7, 0), (7, 5), (7, 9)]
    assert g.seed_coords() == {"init_seed": [3, 3, 3, 7, 7, 7], "data_seed": [0, 5, 9, 0, 5, 9]}
    assert g.cells("a") == [(s, r) for s in (1.0, 2.0) for r in range(6)]
    with pytest.raises(ValueError, match="run index 6"):
        g.seed_pair(6)
    again = parse_grid(__import__("yaml").safe_load(g.to_yaml()))
    assert again == g and grid_hash(again) == grid_hash(g)
    assert grid_hash(g) != grid_hash(tiny({"init": [3, 7], "data": [0, 5]}))


def test_a_plain_list_keeps_its_meaning_and_its_canonical_form():
    g = tiny([4, 1])
    assert not g.crossed and g.runs == [1, 4] and g.seed_pair(4) == (4, 4) and g.seed_coords() == {}
    assert g.to_dict()["seeds"] == [1, 4]
    atlas = load_grid("atlas")
    assert atlas.to_yaml() == parse_grid(__import__("yaml").safe_load(atlas.to_yaml())).to_yaml()
    assert "seeds: [" in atlas.to_yaml()


@pytest.mark.parametrize(("seeds", "needle"), [
    ({"init": [0, 0], "data": [1]}, "seeds.init: seeds must be distinct"),
    ({"init": [0], "data": []}, "seeds.data: give at least one seed"),
    ({"init": [0]}, "seeds.data: required field is missing"),
    ({"init": [0], "data": [1], "order": [2]}, "seeds.order: unknown key"),
    ({"init": [True], "data": [1]}, "seeds.init.0: must be a whole number, not a boolean"),
    ({"init": [0], "data": ["1"]}, "seeds.data.0: must be a whole number, not a string"),
    ({"init": [-1], "data": [1]}, "seeds.init: every seed must be a whole number in 0..9223372036854775807"),
    ({"init": [0], "data": [2**63]}, "seeds.data: every seed must be a whole number in 0..9223372036854775807"),
    ({"init": 3, "data": [1]}, "seeds.init: must be a list of seeds"),
    (5, "seeds: must be a list of seeds"),
])
def test_bad_crossed_seeds_are_one_line_naming_the_field(seeds, needle):
    with pytest.raises(UserError) as err:
        tiny(seeds)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_resume_may_not_change_a_crossed_design():
    crossed = tiny({"init": [0, 1], "data": [0, 1]})
    assert grid_changes(crossed, tiny({"init": [1, 0], "data": [0, 1]})) == ([], {"pipelines": [], "sigma_w": [],
                                                                                  "seeds": []})
    for other in (tiny({"init": [0, 1], "data": [0, 1, 2]}), tiny([0, 1, 2, 3])):
        changed, added = grid_changes(crossed, other)
        assert len(changed) == 1 and changed[0].startswith("seeds (") and "renumber" in changed[0]
        assert added["seeds"] == []
        assert grid_changes(other, crossed)[0]
    assert grid_changes(tiny([0, 1]), tiny([0, 1, 2]))[1]["seeds"] == [2]   # a plain list still extends


# -- the engine's random streams: exact identities -------------------------------------------------------

def _kernels(tr: PackTrainer, g: int) -> list[torch.Tensor]:
    return [mod.weight[g].detach().clone() for _, mod in tr.net.kernels()]


def test_runs_that_share_an_init_seed_start_from_bitwise_the_same_kernels():
    g = tiny({"init": [3, 5], "data": [0, 1]})          # runs: 0 (3, 0), 1 (3, 1), 2 (5, 0), 3 (5, 1)
    cells = [(1.0, 0), (1.0, 1), (2.0, 1), (1.0, 2), (1.0, 3)]
    tr = PackTrainer(g, "a", cells, load_split(g.dataset), "cpu")
    chosen = scaled_kernels(tr.net, g.init.scale)
    names = [name for name, _ in tr.net.kernels()]
    w = [_kernels(tr, i) for i in range(len(cells))]
    for k, name in enumerate(names):
        assert torch.equal(w[0][k], w[1][k]), name                        # init 3, data 0 and 1
        assert torch.equal(w[2][k], w[1][k] * (2.0 if name in chosen else 1.0)), name   # sigma_w scales the draw
        assert torch.equal(w[3][k], w[4][k]), name                        # init 5, data 0 and 1
        assert not torch.equal(w[0][k], w[3][k]), name                    # another init seed: another draw


def test_runs_that_share_a_data_seed_see_the_same_batches_and_augmentation():
    g = tiny({"init": [3, 5], "data": [0, 1]}, augment="crop_flip")
    split = load_split(g.dataset)
    tr = PackTrainer(g, "a", [(1.0, 0), (2.0, 2), (1.0, 1), (1.0, 3)], split, "cpu")  # data 0, 0, 1, 1
    C = split.in_channels
    for _ in range(2):
        order = tr.epoch_order()
        assert torch.equal(order[0], order[1]) and torch.equal(order[2], order[3])
        assert not torch.equal(order[0], order[2])
        x, y = tr.batch(order[:, :16])
        assert torch.equal(x[:, 0:C], x[:, C:2 * C]) and torch.equal(x[:, 2 * C:3 * C], x[:, 3 * C:4 * C])
        assert torch.equal(y[:, 0], y[:, 1])
        assert not torch.equal(x[:, 0:C], split.x_train[order[0, :16]])   # the augmentation drew something


@pytest.mark.parametrize("s", [0, 6])
@pytest.mark.slow
def test_init_seed_equal_to_data_seed_trains_what_the_plain_seed_trains(s):
    """``{init: [s], data: [s]}`` draws the weights, batches and augmentation of ``seeds: [s]``, so the
    whole trained cube agrees, variable by variable, bit for bit; only the seed index and the grid differ."""
    crossed, plain = tiny({"init": [s], "data": [s]}, augment="crop_flip"), tiny([s], augment="crop_flip")
    split = load_split(plain.dataset)
    a = PackTrainer(crossed, "a", [(1.0, 0), (2.0, 0)], split, "cpu")
    b = PackTrainer(plain, "a", [(1.0, s), (2.0, s)], split, "cpu")
    for i in range(2):
        assert all(torch.equal(u, v) for u, v in zip(_kernels(a, i), _kernels(b, i), strict=True))
    oa, ob = a.epoch_order(), b.epoch_order()
    assert torch.equal(oa, ob)
    assert torch.equal(a.batch(oa[:, :16])[0], b.batch(ob[:, :16])[0])

    got = train_pack(crossed, "a", crossed.cells("a"))
    want = train_pack(plain, "a", plain.cells("a"))
    assert list(got[cube.SEED].values) == [0] and list(want[cube.SEED].values) == [s]
    assert got[cube.INIT_SEED].values.tolist() == [s] and got[cube.DATA_SEED].values.tolist() == [s]
    assert not set(cube.SEED_COORDS) & set(want.coords)           # a plain cube holds what it held before
    assert set(got.data_vars) == set(want.data_vars)
    for name in got.data_vars:
        if name == cube.WALL_SECONDS:
            continue
        assert np.array_equal(got[name].values, want[name].values, equal_nan=True), name


# -- the cube's coordinates through every path -----------------------------------------------------------

@pytest.mark.slow
def test_a_pack_and_a_merge_of_packs_carry_init_seed_and_data_seed():
    g = tiny({"init": [3, 5], "data": [0, 1]}, sigma=(1.0,))
    one = train_pack(g, "a", [(1.0, 3), (1.0, 0)])
    assert one[cube.SEED].values.tolist() == [0, 3]
    assert one[cube.INIT_SEED].values.tolist() == [3, 5] and one[cube.DATA_SEED].values.tolist() == [0, 1]
    ds = collect_grid(g, pack_size=3)                      # packs of 2 + 2 runs
    assert not cube.errors(ds)
    assert ds[cube.SEED].values.tolist() == [0, 1, 2, 3]
    assert ds[cube.INIT_SEED].values.tolist() == [3, 3, 5, 5] and ds[cube.DATA_SEED].values.tolist() == [0, 1, 0, 1]
    assert ds[cube.INIT_SEED].dtype == np.int64 and (ds[cube.STATUS] == cube.OK).all()


@pytest.mark.slow
def test_a_grid_folder_merges_its_shards_with_the_grids_seeds(tmp_path):
    g = tiny({"init": [2, 4], "data": [1, 8, 9]})
    path = collect(g, tmp_path / "run", train_fn=fake_train_pack, device="cpu", progress=False, quiet=True)
    ds = cube.open_cube(path)
    assert not cube.errors(ds)
    assert ds[cube.SEED].values.tolist() == list(range(6))
    assert ds[cube.INIT_SEED].values.tolist() == [2, 2, 2, 4, 4, 4]
    assert ds[cube.DATA_SEED].values.tolist() == [1, 8, 9, 1, 8, 9]
    assert (ds[cube.STATUS] == cube.OK).all()
    with pytest.raises(UserError, match="renumber"):
        collect(tiny({"init": [2, 4], "data": [1, 8]}), tmp_path / "run", train_fn=fake_train_pack, device="cpu",
                progress=False, quiet=True, resume=True)
    plain = cube.open_cube(collect(tiny([0, 1]), tmp_path / "plain", train_fn=fake_train_pack, device="cpu",
                                   progress=False, quiet=True))
    assert not set(cube.SEED_COORDS) & set(plain.coords)


def _crossed_cube() -> xr.Dataset:
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1, 2, 3])
    ds[cube.SELECTED_TEST_ACC] = (cube.CELL_DIMS, np.full((1, 2, 4), 0.5, dtype="float32"))
    ds[cube.STATUS] = (cube.CELL_DIMS, np.zeros((1, 2, 4), dtype="int8"))
    return ds.assign_coords({cube.INIT_SEED: (cube.SEED, np.array([0, 0, 1, 1])),
                             cube.DATA_SEED: (cube.SEED, np.array([0, 1, 0, 1]))})


def test_validation_accepts_a_crossed_design_and_refuses_a_broken_one():
    ds = _crossed_cube()
    assert cube.errors(ds) == []
    codes = {
        "one coordinate alone": ds.drop_vars(cube.DATA_SEED),
        "a pair twice": ds.assign_coords({cube.DATA_SEED: (cube.SEED, np.array([0, 1, 1, 1]))}),
        "not integers": ds.assign_coords({cube.INIT_SEED: (cube.SEED, np.array([0.0, 0.0, 1.0, np.nan]))}),
        "negative": ds.assign_coords({cube.INIT_SEED: (cube.SEED, np.array([0, 0, -1, -1]))}),
        "on another dim": ds.assign_coords({cube.INIT_SEED: (cube.SIGMA, np.array([0, 1]))}),
    }
    want = {"one coordinate alone": "missing_coord", "a pair twice": "duplicate_coord",
            "not integers": "wrong_dtype", "negative": "bad_coord", "on another dim": "wrong_dims"}
    for what, bad in codes.items():
        assert [p.code for p in cube.errors(bad)] == [want[what]], what


def test_inspect_shows_the_crossed_design(tmp_path):
    path = tmp_path / "c.nc"
    cube.write_cube(_crossed_cube(), path)
    assert cube.describe(cube.open_cube(path))["crossed"] == {"init": [0, 1], "data": [0, 1]}
    proc = invoke("inspect", path)
    assert proc.returncode == 0, proc.stderr
    assert "crossed: 2 init x 2 data seeds" in proc.stdout
    plain = tmp_path / "p.nc"
    cube.write_cube(_crossed_cube().drop_vars(list(cube.SEED_COORDS)), plain)
    assert cube.describe(cube.open_cube(plain))["crossed"] is None
    assert "crossed:" not in invoke("inspect", plain).stdout


# -- import -----------------------------------------------------------------------------------------------

def _table(**extra: object) -> pd.DataFrame:
    rows = [{"pipeline": "a", "sigma_w": str(s), "seed": str(2 * i + d), "init_seed": str(10 + i),
             "data_seed": str(20 + d), "selected_test_acc": str(0.5 + 0.01 * (2 * i + d))}
            for s in (0.5, 1.0) for i in range(2) for d in range(2)]
    return pd.DataFrame(rows).assign(**extra)


def test_import_writes_init_seed_and_data_seed(tmp_path):
    ds = frame_to_cube(_table(), seeds="paired")
    assert not cube.errors(ds)
    assert ds[cube.INIT_SEED].values.tolist() == [10, 10, 11, 11]
    assert ds[cube.DATA_SEED].values.tolist() == [20, 21, 20, 21]
    back = cube_to_frame(ds)
    assert back[[cube.SEED, cube.INIT_SEED, cube.DATA_SEED]].drop_duplicates().values.tolist() == [
        [0, 10, 20], [1, 10, 21], [2, 11, 20], [3, 11, 21]]
    for plain in (frame_to_cube(_table().drop(columns=list(cube.SEED_COORDS)), seeds="paired"),
                  frame_to_cube(_table(), seeds="paired", ignore_cols=list(cube.SEED_COORDS))):
        assert not set(cube.SEED_COORDS) & set(plain.coords)
    src = tmp_path / "t.csv"
    _table().to_csv(src, index=False)
    proc = invoke("import", src, "--seeds", "paired", "--out", tmp_path / "t.nc")
    assert proc.returncode == 0, proc.stderr
    assert "crossed: 2 init x 2 data seeds" in invoke("inspect", tmp_path / "t.nc").stdout


@pytest.mark.parametrize(("change", "needle"), [
    (lambda t: t.drop(columns="data_seed"), "column 'init_seed' needs a column 'data_seed' too"),
    (lambda t: t.assign(init_seed=t.init_seed.where(t.index != 4, "12")), "seed 0 has more than one init_seed"),
    (lambda t: t.assign(data_seed="20"), "seeds 0, 1 share init_seed 10 and data_seed 20"),
    (lambda t: t.assign(data_seed="x"), "data_seed = 'x' is not an integer >= 0"),
])
def test_import_refuses_inconsistent_seed_columns(tmp_path, change, needle):
    with pytest.raises(UserError, match=needle):
        frame_to_cube(change(_table()), seeds="paired")
    src = tmp_path / "t.csv"
    change(_table()).to_csv(src, index=False)
    assert_user_error(invoke("import", src, "--seeds", "paired", "--out", tmp_path / "t.nc"), needle)


# -- a sequential run is refused ---------------------------------------------------------------------------

def test_until_decided_refuses_a_crossed_grid(tmp_path):
    g = tiny({"init": [0, 1], "data": [0, 1]})

    def never(*_a: object, **_k: object) -> object:
        raise AssertionError("nothing may be trained or analyzed")

    with pytest.raises(UserError, match="crossed design"):
        run_until_decided(g, tmp_path / "run", looks=[4, 8], collect_fn=never, analyze_fn=never,
                          analyze_options={}, say=lambda _m: None)
    path = tmp_path / "crossed.yaml"
    path.write_text(g.to_yaml())
    proc = invoke("run", path, "--until-decided", "--looks", "4,8", "--out", tmp_path / "out")
    assert_user_error(proc, "--until-decided", "crossed design")
    assert not (tmp_path / "out").exists()

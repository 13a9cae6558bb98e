"""The recorder on a plain training loop (initmem.Recorder): the quick preset's network trained by a user's loop
gives the engine's curves, clocks, kernel norms, selection and predictions bitwise; divergence, resume, unknown
optimizers and per-layer rates are recorded as the engine would, never guessed; its record merges as a shard."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from initmem import clocks, cube
from initmem.collect.custom.recorder import Recorder, state_path
from initmem.collect.execution.shards import merge, read_shard, write_shard
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import train_pack
from initmem.errors import UserError

from ._quick_entry import EVERY, user_loop
from ._quick_small import quick_small

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

PIPELINES = ("sgd_low_lr", "sgd_mom_wd_cos", "adamw")
CELLS = [(0.25, 0), (4.0, 1)]
EPOCHS = 3


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    return quick_small(tmp_path_factory.getbasetemp() / "mnist1d-cache", pipelines=PIPELINES, epochs=EPOCHS,
                       every=EVERY, seeds=(0, 1))


@pytest.fixture(scope="module")
def engine_cubes(grid):
    return {p: train_pack(grid, p, CELLS) for p in PIPELINES}


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_a_plain_loop_records_the_engines_curves_bitwise(grid, engine_cubes, pipeline):
    """Constant SGD, Nesterov SGD with L2, warm-up and cosine decay, AdamW with decoupled decay: every curve,
    clock (schedule and measured), kernel norm, selection and per-example prediction equals the engine's bit for
    bit (the loop draws the engine's data order and runs under the engine's deterministic CPU settings)."""
    ref = engine_cubes[pipeline]
    for sigma, seed in CELLS:
        with deterministic("cpu", 1):
            rec = user_loop(grid, pipeline, sigma, seed)
        mine = rec.dataset()
        theirs = ref.sel({cube.SIGMA: [sigma], cube.SEED: [seed]})
        assert list(mine[cube.LAYER].values) == list(theirs[cube.LAYER].values)
        assert list(mine[cube.EPOCH].values) == list(range(EPOCHS + 1))
        compared = [v for v in theirs.data_vars if v != cube.WALL_SECONDS]
        assert set(compared) <= set(mine.data_vars)
        for v in compared:
            np.testing.assert_array_equal(mine[v].values, theirs[v].values, err_msg=f"{pipeline} {sigma} {seed} {v}")
        assert np.isfinite(mine[clocks.T_ANGLE].values[0, 0, 0, 1:]).all()
        assert np.isnan(mine[cube.VAL_ACC].values[0, 0, 0, 1])        # epoch 1 not evaluated (every 2)
        assert int(mine[cube.STATUS].values.ravel()[0]) == cube.OK and mine.attrs["run_complete"] == 1


def test_a_record_merges_with_the_engines_shards(grid, engine_cubes, tmp_path):
    with deterministic("cpu", 1):
        rec = user_loop(grid, "sgd_low_lr", 0.25, 0, path=tmp_path / "run.nc")
    mine = rec.dataset()
    pipe = "sgd_low_lr"
    ref = engine_cubes[pipe].sel({cube.SIGMA: [4.0], cube.SEED: [1]})
    write_shard(mine, tmp_path / "shards", (pipe, 0.25, 0), grid_hash="h")
    write_shard(ref, tmp_path / "shards", (pipe, 4.0, 1), grid_hash="h")
    infos = [read_shard(p) for p in sorted((tmp_path / "shards").iterdir())]
    out = merge(infos, pipelines=[pipe], sigma_w=[0.25, 4.0], seeds=[0, 1], attrs=dict(ref.attrs),
                pipeline_defaults={})
    assert (out[cube.STATUS].values == [[[cube.OK, cube.MISSING], [cube.MISSING, cube.OK]]]).all()
    both = engine_cubes[pipe][cube.TEST_ACC].values
    np.testing.assert_array_equal(out[cube.TEST_ACC].values[0, 0, 0], both[0, 0, 0])
    np.testing.assert_array_equal(out[cube.TEST_ACC].values[0, 1, 1], both[0, 1, 1])
    assert cube.open_cube(tmp_path / "run.nc").attrs["run_complete"] == 1


def test_resuming_from_the_last_evaluation_gives_the_uninterrupted_record(grid, tmp_path):
    pipe = "sgd_mom_wd_cos"
    with deterministic("cpu", 1):
        whole = user_loop(grid, pipe, 4.0, 1, path=tmp_path / "a.nc").dataset()
        user_loop(grid, pipe, 4.0, 1, path=tmp_path / "b.nc", stop_after=2)   # killed after epoch 2's evaluation
        part = cube.open_cube(tmp_path / "b.nc")
        assert part.attrs["run_complete"] == 0 and list(part[cube.EPOCH].values) == [0, 1, 2]
        resumed = user_loop(grid, pipe, 4.0, 1, path=tmp_path / "b.nc", resume=True).dataset()
    for v in whole.data_vars:
        if v != cube.WALL_SECONDS:
            np.testing.assert_array_equal(resumed[v].values, whole[v].values, err_msg=v)
    assert state_path(tmp_path / "b.nc").is_file()


def test_a_non_finite_loss_marks_the_run_diverged(grid):
    spec = grid.pipelines["sgd_low_lr"]

    def explosive(net):
        return torch.optim.SGD(net.parameters(), lr=1e30, foreach=True)

    with deterministic("cpu", 1):
        rec = user_loop(grid, "sgd_low_lr", 4.0, 0, make_optimizer=explosive, set_lr=False)
    ds = rec.dataset()
    assert int(ds[cube.STATUS].values.ravel()[0]) == cube.DIVERGED and rec.diverged
    assert np.isfinite(ds[cube.TEST_ACC].values[0, 0, 0, 0])                # epoch 0 recorded
    assert np.isnan(ds[cube.KERNEL_NORM].values[0, 0, 0, rec.diverged_epoch:]).all()
    assert rec.diverged_epoch <= spec.epochs


def test_unknown_optimizers_and_per_layer_rates_leave_clocks_absent(grid):
    class MySGD(torch.optim.SGD):          # not in the optimizer table: its decay, adaptivity, momentum unknown
        pass

    with deterministic("cpu", 1):
        rec = user_loop(grid, "sgd_low_lr", 1.0, 0,
                        make_optimizer=lambda net: MySGD(net.parameters(), lr=0.3, weight_decay=1e-3, foreach=True))
    ds = rec.dataset()
    at = {c: ds[c].values[0, 0, 0] for c in cube.SCHEDULE_CLOCKS}
    assert np.isfinite(at[clocks.T_ETA]).all() and np.isfinite(at[clocks.T_SGD]).all()
    for c in (clocks.T_L2, clocks.T_WD, clocks.T_ADAPT, clocks.T_L2_MOM):
        assert np.isnan(at[c][1:]).all(), c
    assert at[clocks.T_ETA_MOM][-1] == at[clocks.T_ETA][-1]     # momentum 0: no heavy-ball factor, known exactly

    with deterministic("cpu", 1):
        declared = user_loop(grid, "sgd_low_lr", 1.0, 0, rec_kwargs={"decay": "coupled", "adaptive": False},
                             make_optimizer=lambda net: MySGD(net.parameters(), lr=0.3, weight_decay=1e-3,
                                                              foreach=True)).dataset()
    t_l2 = declared[clocks.T_L2].values[0, 0, 0]
    np.testing.assert_allclose(t_l2, 1e-3 * declared[clocks.T_ETA].values[0, 0, 0], rtol=1e-6)

    def layerwise(net):
        head = list(net.head.parameters())
        rest = [p for p in net.parameters() if all(p is not h for h in head)]
        return torch.optim.SGD([{"params": rest}, {"params": head, "lr": 0.03}], lr=0.3, foreach=True)

    with deterministic("cpu", 1):
        ds = user_loop(grid, "sgd_low_lr", 1.0, 0, make_optimizer=layerwise, set_lr=False).dataset()
    assert np.isnan(ds[clocks.T_ETA].values[0, 0, 0, 1:]).all()    # the kernels' groups disagree: no one T_eta
    assert ds[clocks.T_ETA].values[0, 0, 0, 0] == 0.0


def test_the_clocks_follow_the_steps_the_optimizer_took_not_the_call_order():
    """A scheduler stepped before rec.step, a decay that changes, a step skipped (as a gradient scaler skips one):
    T_eta sums the rates the steps used, T_l2 the products, and the skipped step counts for nothing."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    rec = Recorder(opt, model, batch_size=4, n_test=5)
    rec.evaluate(0)
    used, wds = [], []
    for k in range(6):
        opt.param_groups[0]["weight_decay"] = 0.01 * (k + 1)
        loss = F.cross_entropy(model(torch.randn(4, 4)), torch.randint(0, 3, (4,)))
        opt.zero_grad()
        loss.backward()
        if k != 3:                       # step 3 skipped
            used.append(opt.param_groups[0]["lr"])
            wds.append(opt.param_groups[0]["weight_decay"])
            opt.step()
        sched.step()
        rec.step(loss)
    rec.evaluate(1, test=(0.4, 1.0), predictions=[0, 1, 2, 0, 1])
    table = rec.clock_table()
    assert list(table[clocks.STEP]) == [0.0, 5.0]
    assert abs(table[clocks.T_ETA][-1] - sum(used)) < 1e-15
    assert abs(table[clocks.T_SGD][-1] - sum(u * u for u in used) / 4) < 1e-15
    assert abs(table[clocks.T_L2][-1] - sum(u * w for u, w in zip(used, wds, strict=True))) < 1e-15
    assert abs(table[clocks.T_ETA_MOM][-1] - 2 * sum(used)) < 1e-15
    assert table[clocks.T_ADAPT][-1] == 0.0 and table[clocks.T_WD][-1] == 0.0
    assert table[clocks.LR_NOW][-1] == used[-1] and table[clocks.LR_NOW][0] == used[0]
    ds = rec.dataset()
    # no selection without all three splits: the selected checkpoint stays absent
    assert int(ds[cube.SELECTED_TEST_CORRECT].values.ravel()[0]) == -1 and ds.attrs[cube.A_N_TEST] == 5
    assert np.isnan(ds[cube.TAU_BEST].values.ravel()[0])


def test_refusals_are_one_line_user_errors():
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(UserError, match="decay: SGD's weight decay is coupled"):
        Recorder(opt, model, decay="decoupled")
    with pytest.raises(UserError, match="coords: unknown coordinate 'sigma'"):
        Recorder(opt, model, coords={"sigma": 1.0})
    rec = Recorder(opt, model)
    rec.evaluate(0)
    with pytest.raises(UserError, match="epoch: 0 was already recorded"):
        rec.evaluate(0)
    with pytest.raises(UserError, match="path: the recorder has no path"):
        rec.save()
    other = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.1)
    with pytest.raises(UserError, match="optimizer: none of its parameter groups holds a kernel"):
        Recorder(other, model)

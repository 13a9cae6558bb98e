"""Clocks: the simulator's are the engine's; the measured clocks obey their identities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train.data import load_split
from initmem.collect.train.engine import SCHEDULE_CURVES
from initmem.collect.train.measure import StepMeter, cosine
from initmem.grid import parse_grid
from initmem.grid.select import select_epoch
from initmem.schedule import LrSchedule, pipeline_clocks
from initmem.simulate import SimPipeline, clocks, lr_per_step

PIPES = {
    "nesterov_cos": {"optimizer": "sgd", "lr": 0.1, "batch_size": 100, "momentum": 0.9, "nesterov": True,
                     "weight_decay": 0.003, "epochs": 3, "schedule": "cosine", "warmup_epochs": 1},
    "adam_step": {"optimizer": "adam", "lr": 0.003, "batch_size": 128, "weight_decay": 0.01, "epochs": 3,
                  "schedule": "step", "milestones": [1, 2], "gamma": 0.5},
}


@pytest.fixture(scope="module")
def run():
    g = parse_grid({"name": "clocks", "dataset": {"name": "digits"},
                    "model": {"arch": "resnet_tiny", "width": 4}, "sigma_w": [1.0, 4.0], "seeds": [0],
                    "pipelines": PIPES, "eval": {"interp_threshold": 0.8}, "engine": {"cpu_threads": 1}})
    return g, collect_grid(g)


@pytest.mark.slow
def test_the_simulators_clocks_are_the_engines_exactly(run):
    g, ds = run
    n_train = int(load_split(g.dataset).y_train.numel())
    for name, spec in g.pipelines.items():
        sim = clocks(spec, spec.epochs, n_train)
        for c in SCHEDULE_CURVES:
            got = ds[c].sel(pipeline=name).values            # (sigma_w, seed, epoch), float32
            want = sim[c].astype(cube.FLOAT_DTYPE)
            assert np.array_equal(got, np.broadcast_to(want, got.shape)), (name, c)


def test_decoupled_decay_clock_is_the_twin_of_t_l2():
    """T_wd = lambda_dec * T_eta for AdamW and 0 for coupled L2; T_l2 the other way round; it stays
    out of the collapse family unless asked for."""
    from initmem import clocks as clock_table

    g = parse_grid({"name": "wd", "sigma_w": [1.0], "seeds": [0], "pipelines": {
        "adamw": {"optimizer": "adamw", "lr": 0.002, "batch_size": 64, "weight_decay": 0.05, "epochs": 4,
                  "schedule": "cosine"},
        "sgd": {"optimizer": "sgd", "lr": 0.1, "batch_size": 64, "weight_decay": 0.01, "epochs": 4}}})
    adamw, sgd = (pipeline_clocks(g.pipelines[p], 1000) for p in ("adamw", "sgd"))
    np.testing.assert_allclose(adamw[cube.T_WD], 0.05 * adamw[cube.T_ETA], rtol=1e-12)
    assert not adamw[cube.T_L2].any() and not sgd[cube.T_WD].any()
    np.testing.assert_allclose(sgd[cube.T_L2], 0.01 * sgd[cube.T_ETA], rtol=1e-12)
    assert cube.T_WD in cube.SCHEDULE_CLOCKS and cube.T_WD not in clock_table.family()


RECIPE_PIPES = {
    "lion": {"optimizer": "lion", "lr": 0.001, "batch_size": 256, "weight_decay": 0.3, "epochs": 2,
             "schedule": "cosine", "warmup_epochs": 1},
    "sf_adamw": {"optimizer": "sf_adamw", "lr": 0.004, "batch_size": 200, "weight_decay": 0.02, "epochs": 2,
                 "warmup_epochs": 1},
    "sgd_recipes": {"optimizer": "sgd", "lr": 0.05, "batch_size": 256, "momentum": 0.9, "weight_decay": 0.004,
                    "epochs": 2, "schedule": "cosine", "label_smoothing": 0.1, "ema_decay": 0.9, "sam_rho": 0.05},
}


def test_new_kinds_record_the_schedules_clocks_exactly():
    """Lion and Schedule-Free AdamW: adaptive with decoupled decay, so T_adapt = T_eta, T_l2 = 0 and
    T_wd = lambda T_eta, no momentum correction; SAM, label smoothing and an EMA leave the base
    optimizer's clocks as they are (one optimizer step per batch at the schedule's rate)."""
    g = parse_grid({"name": "recipe_clocks", "dataset": {"name": "digits"},
                    "model": {"arch": "resnet_tiny", "width": 4}, "sigma_w": [1.0], "seeds": [0],
                    "pipelines": RECIPE_PIPES, "eval": {"every": 2}, "engine": {"cpu_threads": 1}})
    ds = collect_grid(g)
    n_train = int(load_split(g.dataset).y_train.numel())
    f32 = cube.FLOAT_DTYPE
    for name, spec in g.pipelines.items():
        run_ = ds.sel(pipeline=name, sigma_w=1.0, seed=0)
        sched = pipeline_clocks(spec, n_train)
        for c in SCHEDULE_CURVES:
            assert np.array_equal(run_[c].values, sched[c].astype(f32)), (name, c)
        if name == "sgd_recipes":   # the clocks of the same SGD without the knobs
            plain = pipeline_clocks(spec.model_copy(update={"label_smoothing": 0.0, "ema_decay": 0.0,
                                                            "sam_rho": 0.0}), n_train)
            for c in SCHEDULE_CURVES:
                assert np.array_equal(sched[c], plain[c]), c
            np.testing.assert_array_equal(sched[cube.T_L2], 0.004 * sched[cube.T_ETA])
            assert not sched[cube.T_ADAPT].any() and not sched[cube.T_WD].any()
            continue
        assert np.array_equal(sched[cube.T_ADAPT], sched[cube.T_ETA]), name
        assert not sched[cube.T_L2].any() and not sched[cube.T_L2_MOM].any(), name
        np.testing.assert_array_equal(sched[cube.T_WD], spec.weight_decay * sched[cube.T_ETA])
        for plain_clock, corrected in zip(cube.CLOCKS, cube.MOMENTUM_CLOCKS, strict=False):
            assert np.array_equal(sched[plain_clock], sched[corrected]), (name, corrected)
    assert not cube.errors(ds), cube.errors(ds)


@pytest.mark.slow
def test_momentum_clocks_use_the_effective_step(run):
    g, ds = run
    mom = ds.sel(pipeline="nesterov_cos", sigma_w=1.0, seed=0)
    np.testing.assert_allclose(mom[cube.T_ETA_MOM].values, mom[cube.T_ETA].values / (1 - 0.9), rtol=1e-6)
    np.testing.assert_allclose(mom[cube.T_SGD_MOM].values, mom[cube.T_SGD].values / (1 - 0.9) ** 2, rtol=1e-6)
    np.testing.assert_allclose(mom[cube.T_L2_MOM].values, 0.003 * mom[cube.T_ETA_MOM].values, rtol=1e-6)
    adam = ds.sel(pipeline="adam_step", sigma_w=1.0, seed=0)
    for plain, corrected in zip(cube.CLOCKS, cube.MOMENTUM_CLOCKS, strict=False):
        np.testing.assert_array_equal(adam[plain].values, adam[corrected].values)


@pytest.mark.slow
def test_measured_clocks_obey_their_identities(run):
    g, ds = run
    assert not cube.errors(ds), cube.errors(ds)
    path = ds[cube.ANGULAR_PATH]
    cos = ds[cube.COS_TO_INIT]
    assert (path.sel(epoch=0) == 0).all()
    assert (cos.sel(epoch=0) == 1).all()
    assert (path.sel(epoch=ds.sizes[cube.EPOCH] - 1) > 0).all()
    # triangle inequality on the sphere: the path is at least the angle to the init
    gap = path.values - np.arccos(np.clip(cos.values.astype(np.float64), -1, 1))
    assert np.nanmin(gap) >= -1e-6
    for clock in cube.MEASURED_CLOCKS:
        assert (ds[clock].diff(cube.EPOCH) >= 0).all(), clock
    np.testing.assert_allclose(ds[cube.T_ANGLE].values, path.mean(cube.LAYER).values, rtol=1e-5)
    # eff_lr = lr_now / ||w||^2 for kernels followed by BatchNorm, NaN for the head
    eff = ds[cube.EFF_LR]
    head = [str(n) for n in ds[cube.LAYER].values if "head" in str(n)]
    assert head and eff.sel(layer=head).isnull().all()
    convs = [str(n) for n in ds[cube.LAYER].values if str(n) not in head]
    want = ds[cube.LR_NOW] / ds[cube.LAYER_NORM].sel(layer=convs) ** 2
    np.testing.assert_allclose(eff.sel(layer=convs).values, want.values, rtol=1e-5)
    # T_eff starts at 0 and grows by at most eta / min ||w||^2 per step
    assert (ds[cube.T_EFF].sel(epoch=0) == 0).all()


def test_cosine_of_a_pure_rescaling_is_exactly_one_and_tiny_angles_are_exact():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(3, 500, generator=gen, dtype=torch.float64)
    assert torch.equal(cosine(a, 2.0 * a), torch.ones(3, dtype=torch.float64))
    assert torch.equal(cosine(a, a), torch.ones(3, dtype=torch.float64))
    # one step that turns the kernel by 1e-9 rad and rescales it 1.7x: the angle to full precision
    # (arccos of the cosine, or a formula from the three lengths, would not get it)
    theta = 1e-9
    w = a[:, :2].clone()
    w[:, 0], w[:, 1] = 1.0, 0.0
    meter = StepMeter([w], [True])
    w[:, 0], w[:, 1] = 1.7 * math.cos(theta), 1.7 * math.sin(theta)
    meter.after_step()
    assert (meter.path[:, 0] - theta).abs().max() < 1e-20
    w[:, 0], w[:, 1] = 0.0, 3.0                                   # on to a quarter turn in all
    meter.after_step()
    assert (meter.path[:, 0] - math.pi / 2).abs().max() < 1e-15


def test_step_meter_sums_the_angles_of_a_known_rotation():
    """A kernel turned by theta at every step, while its norm changes: path = n theta, cos = cos(n theta)."""
    theta, n = 0.01, 25
    w = torch.zeros(2, 2)
    w[:, 0] = 1.0
    meter = StepMeter([w], [True])
    for k in range(n):
        meter.before_step(0.1)
        r = 1.0 + 0.5 * k
        w[0] = torch.tensor([r * math.cos((k + 1) * theta), r * math.sin((k + 1) * theta)])
        meter.after_step()                       # member 1 is never moved: its path stays 0
    path = meter.path[:, 0]
    assert abs(float(path[0]) - n * theta) < 1e-6 and float(path[1]) == 0.0
    assert abs(float(meter.cos_to_init()[0, 0]) - math.cos(n * theta)) < 1e-6
    want_eff = 0.1 * sum(1.0 / (1.0 + 0.5 * (k - 1)) ** 2 if k else 1.0 for k in range(n))
    assert abs(float(meter.t_eff[0]) - want_eff) < 1e-5
    assert torch.isnan(StepMeter([w], [False]).t_eff_now()).all()


def test_schedule_has_warmup_and_floor_steps_per_epoch():
    spec = parse_grid({"name": "s", "sigma_w": [1], "seeds": [0], "pipelines": {"a": {
        "optimizer": "sgd", "lr": 0.4, "batch_size": 30, "epochs": 4, "warmup_epochs": 1,
        "schedule": "step", "milestones": [2], "gamma": 0.25}}}).pipelines["a"]
    c = pipeline_clocks(spec, n_train=100)          # floor(100 / 30) = 3 steps per epoch
    assert list(c[cube.STEP]) == [0, 3, 6, 9, 12]
    eta = LrSchedule.of(spec, 3).per_step()
    np.testing.assert_allclose(eta, [0.4 / 3, 0.8 / 3, 0.4, 0.4, 0.4, 0.4, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(c[cube.T_ETA], np.concatenate([[0], np.cumsum(eta)[2::3]]))
    # the simulator's own pipelines go through the same schedule
    sim = SimPipeline("s", lr=0.1, batch_size=10, schedule="step")
    np.testing.assert_allclose(lr_per_step(sim, 4, 2), [0.1] * 4 + [0.01] * 2 + [0.001] * 2)


@pytest.mark.slow
def test_the_engine_selects_by_the_default_rule(run):
    g, ds = run
    assert ds.attrs[cube.A_SELECT] == "best_val_acc_interp"
    for name in g.pipelines:
        for s in g.sigma_w:
            r = ds.sel(pipeline=name, sigma_w=s, seed=0)
            want = select_epoch("best_val_acc_interp", r[cube.TRAIN_ACC].values, r[cube.VAL_ACC].values,
                                r[cube.VAL_LOSS].values, 0.8)
            assert float(r[cube.TAU_BEST]) == want, (name, s)
            assert float(r[cube.SELECTED_TEST_ACC]) == float(r[cube.TEST_ACC].sel(epoch=want))
            if np.isfinite(float(r[cube.TAU_INTERP])):
                assert want >= float(r[cube.TAU_INTERP])

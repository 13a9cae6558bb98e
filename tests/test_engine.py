"""The training engine: exact clock identities, common random numbers across sigma_w, packing
that changes nothing, divergence isolation, checkpoint selection, resume, determinism, and the
memory phenomenon on a reduced quick grid."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import xarray as xr

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.execution.pack_plan import plan_packs
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic, resolve_device
from initmem.collect.train.engine import CURVES, PackTrainer, train_pack
from initmem.collect.train.nets import build_net, scaled_kernels
from initmem.collect.train.optim import PackedOptimizer
from initmem.collect.train.packed import PBatchNorm
from initmem.errors import UserError
from initmem.grid import load_grid, parse_grid
from initmem.tests._collect_util import checkpoint_recorder


def tiny(pipelines: dict, *, sigma=(0.5, 1.0, 2.0), seeds=(0, 1), width=4, norm="batch", scale="all_kernels",
         augment="none", select="best_val_acc", threshold=0.995, channels_last=None) -> object:
    return parse_grid({
        "name": "tiny", "dataset": {"name": "digits", "augment": augment},
        "model": {"arch": "resnet_tiny", "width": width, "norm": norm}, "init": {"scale": scale},
        "sigma_w": list(sigma), "seeds": list(seeds), "pipelines": pipelines,
        "eval": {"select": select, "interp_threshold": threshold},
        # the test machine's 2 cores are shared: no oversubscription
        "engine": {"cpu_threads": 1, "channels_last": channels_last},
    })


SGD = {"optimizer": "sgd", "lr": 0.05, "batch_size": 128, "epochs": 2}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def strip_volatile(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.drop_vars("wall_seconds")
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return ds


# -- clocks ----------------------------------------------------------------------------------------

def hand_lr(k: int, *, base: float, spe: int, epochs: int, warmup: int, schedule: str,
            milestones=(), gamma=0.1) -> float:
    """The schedule written out independently of the engine."""
    W, K = warmup * spe, epochs * spe
    if k < W:
        return base * (k + 1) / W
    if schedule == "cosine":
        return base * 0.5 * (1 + math.cos(math.pi * (k - W) / (K - W)))
    if schedule == "step":
        return base * gamma ** sum(k // spe >= m for m in milestones)
    return base


@pytest.mark.slow
def test_clocks_are_exact_sums_of_the_lr_used_at_every_step():
    pipes = {
        "sgd_cos": {"optimizer": "sgd", "lr": 0.2, "batch_size": 100, "momentum": 0.9, "weight_decay": 0.003,
                    "epochs": 4, "schedule": "cosine", "warmup_epochs": 1},
        "adam_step": {"optimizer": "adam", "lr": 0.002, "batch_size": 200, "weight_decay": 0.01, "epochs": 4,
                      "schedule": "step", "milestones": [2, 3], "gamma": 0.5, "warmup_epochs": 1},
        "adamw": {"optimizer": "adamw", "lr": 0.003, "batch_size": 256, "weight_decay": 0.05, "epochs": 3},
    }
    g = tiny(pipes, sigma=(1.0,), seeds=(0,))
    ds = collect_grid(g)
    n_train = load_split(g.dataset).y_train.numel()
    for name, p in g.pipelines.items():
        spe = n_train // p.batch_size
        lrs = np.array([hand_lr(k, base=p.lr, spe=spe, epochs=p.epochs, warmup=p.warmup_epochs,
                                schedule=p.schedule, milestones=p.milestones, gamma=p.gamma)
                        for k in range(p.epochs * spe)])
        lam = p.weight_decay if p.optimizer != "adamw" else 0.0
        adaptive = p.optimizer in ("adam", "adamw")
        run = ds.sel(pipeline=name, sigma_w=1.0, seed=0)
        for e in range(p.epochs + 1):
            used = lrs[: e * spe]
            want = {"T_eta": used.sum(), "T_sgd": (used ** 2).sum() / p.batch_size, "T_l2": lam * used.sum(),
                    "T_adapt": used.sum() if adaptive else 0.0, "step": e * spe}
            for clock, value in want.items():
                np.testing.assert_allclose(float(run[clock].sel(epoch=e)), value, rtol=1e-6, atol=1e-12,
                                           err_msg=f"{name} {clock} epoch {e}")
            if e > 0:
                np.testing.assert_allclose(float(run["lr_now"].sel(epoch=e)), lrs[e * spe - 1], rtol=1e-6)
    # the decoupled decay is recorded separately from the coupled L2 coefficient
    assert float(ds["l2"].sel(pipeline="adamw")) == 0.0
    assert float(ds["decoupled_wd"].sel(pipeline="adamw")) == 0.05
    assert float(ds["l2"].sel(pipeline="adam_step")) == 0.01
    assert not cube.errors(ds)


# -- common random numbers ---------------------------------------------------------------------------

@pytest.mark.parametrize("scale", ["all_kernels", "normalized_kernels", "head"])
def test_kernels_at_sigma_2_are_exactly_twice_those_at_sigma_1(scale):
    g = tiny({"a": SGD}, sigma=(1.0, 2.0), seeds=(3,), scale=scale)
    tr = PackTrainer(g, "a", [(1.0, 3), (2.0, 3), (1.0, 4)], load_split(g.dataset), "cpu")
    chosen = scaled_kernels(tr.net, scale)
    assert chosen, scale
    for name, mod in tr.net.kernels():
        w1, w2, other = mod.weight[0], mod.weight[1], mod.weight[2]
        factor = 2.0 if name in chosen else 1.0
        assert torch.equal(w2, w1 * factor), name
        assert not torch.equal(w1, other), name   # another seed: other draws
    if scale == "head":
        assert chosen == {"head"}
    if scale == "normalized_kernels":
        assert "head" not in chosen and len(chosen) == len(list(tr.net.kernels())) - 1


def test_data_order_and_augmentation_are_the_same_at_every_sigma():
    g = tiny({"a": SGD}, augment="crop_flip")
    split = load_split(g.dataset)
    tr = PackTrainer(g, "a", [(0.5, 7), (4.0, 7), (1.0, 8)], split, "cpu")
    alone = PackTrainer(g, "a", [(2.0, 7)], split, "cpu")
    for _ in range(2):
        order, order_alone = tr.epoch_order(), alone.epoch_order()
        assert torch.equal(order[0], order[1]) and torch.equal(order[0], order_alone[0])
        assert not torch.equal(order[0], order[2])
        x, _ = tr.batch(order[:, :16])
        xa, _ = alone.batch(order_alone[:, :16])
        C = split.in_channels
        assert torch.equal(x[:, 0:C], x[:, C:2 * C]) and torch.equal(x[:, 0:C], xa)
        assert not torch.equal(x[:, 0:C], split.x_train[order[0, :16]])   # augmentation did something


# -- packing changes nothing ----------------------------------------------------------------------------

def assert_pack_is_bitwise_alone(g, pipeline: str, cells: list[tuple[float, int]], steps: int,
                                 check: list[int] | None = None, split=None) -> None:
    """Train ``cells`` as one pack and each checked cell alone, under the engine's CPU settings;
    parameters, BatchNorm statistics and eval logits must be bitwise equal (``torch.equal``)."""
    split = split if split is not None else load_split(g.dataset)
    b = g.pipelines[pipeline].batch_size
    with deterministic("cpu", 1):
        pack = PackTrainer(g, pipeline, cells, split, "cpu")
        alone = {gi: PackTrainer(g, pipeline, [cells[gi]], split, "cpu") for gi in (check or range(len(cells)))}
        order = pack.epoch_order()
        orders = {gi: a.epoch_order() for gi, a in alone.items()}
        for i in range(steps):
            pack.train_step(order[:, b * i:b * (i + 1)])
            for gi, a in alone.items():
                a.train_step(orders[gi][:, b * i:b * (i + 1)])
        xs = split.x_test[:64]
        fmt = torch.channels_last if pack.channels_last else torch.contiguous_format
        pack.net.eval()
        with torch.no_grad():
            logits = pack.net(xs.repeat(1, len(cells), 1, 1).contiguous(memory_format=fmt))
            for gi, a in alone.items():
                a.net.eval()
                assert torch.equal(logits[:, gi], a.net(xs.contiguous(memory_format=fmt))[:, 0]), (pipeline, gi)
                for (name, p), (_, q) in zip(pack.net.named_parameters(), a.net.named_parameters(), strict=True):
                    assert torch.equal(p[gi], q[0]), (pipeline, gi, name, float((p[gi] - q[0]).abs().max()))
                # the measured clocks accumulated at every step: per member, exactly
                assert torch.equal(pack.meter.path[gi], a.meter.path[0]), (pipeline, gi)
                assert torch.equal(pack.meter.t_eff[gi], a.meter.t_eff[0]), (pipeline, gi)
                for m, ma in zip(pack.net.modules(), a.net.modules(), strict=True):
                    if isinstance(m, PBatchNorm):   # own BatchNorm statistics
                        assert torch.equal(m.running_mean[gi], ma.running_mean[0])
                        assert torch.equal(m.running_var[gi], ma.running_var[0])


@pytest.mark.slow
@pytest.mark.parametrize("opt", [
    {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001},
    {"optimizer": "adam", "lr": 0.003, "weight_decay": 0.001},
    {"optimizer": "rmsprop", "lr": 0.001, "weight_decay": 0.001},
])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_member_of_a_pack_is_bitwise_the_same_cell_trained_alone(opt, layout):
    # channels_last is exact when members' channel counts are multiples of 8 (grid.py).
    cl = layout == "channels_last"
    g = tiny({"a": {**opt, "batch_size": 32, "epochs": 1}}, width=8 if cl else 6, augment="crop_flip",
             channels_last=cl)
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (2.0, 1), (1.0, 2)], steps=6)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["resnet20", "resnet9"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_rgb_architectures_pack_bitwise_too(arch, channels_last):
    """32x32 RGB inputs: a 3-channel stem in few groups is where oneDNN switches kernels."""
    g = parse_grid({
        "name": "rgb", "dataset": {"name": "cifar10", "root": "unused", "augment": "crop_flip"},
        "model": {"arch": arch, "width": 8}, "sigma_w": [0.5, 1.0], "seeds": [0, 1],
        "pipelines": {"a": {"optimizer": "sgd", "lr": 0.02, "momentum": 0.9, "batch_size": 16, "epochs": 1}},
        "engine": {"cpu_threads": 1, "channels_last": channels_last}})
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 3, 32, 32, generator=gen), torch.randint(0, 10, (256,), generator=gen)
    split = Split(x, y, x[:64], y[:64], x[:64], y[:64], 10, "synthetic")
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (1.0, 1), (0.5, 1), (1.0, 0)], steps=2, check=[0, 3], split=split)
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (1.0, 1)], steps=2, check=[1], split=split)


def test_digits_preset_cells_are_bitwise_the_same_in_any_pack():
    """Every digits pipeline (its batch size, optimizer and channels_last): pack of 3 vs alone (the quick
    preset's 1-D nets: tests/test_mnist1d_nets.py)."""
    quick = load_grid("digits")
    for pipeline in quick.pipelines:
        assert_pack_is_bitwise_alone(quick, pipeline, [(0.25, 0), (8.0, 1), (1.0, 2)], steps=3, check=[1])


@pytest.mark.parametrize("spec", [
    {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    {"optimizer": "sgd", "lr": 0.1, "momentum": 0.0, "weight_decay": 0.01},
    {"optimizer": "adam", "lr": 0.01, "weight_decay": 0.01},
    {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1},
    {"optimizer": "rmsprop", "lr": 0.01, "weight_decay": 0.01},
    {"optimizer": "lion", "lr": 0.001, "weight_decay": 0.1},
    {"optimizer": "sf_adamw", "lr": 0.01, "weight_decay": 0.1},
])
def test_packed_optimizer_matches_torch_optim(spec):
    g = tiny({"a": {**spec, "batch_size": 32, "epochs": 1}})
    p = g.pipelines["a"]
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(3, 5, 4))]
    ref = [torch.nn.Parameter(ours[0].detach().clone())]
    opt = PackedOptimizer(ours, p)
    kw = {"lr": p.lr, "weight_decay": p.weight_decay}
    if p.optimizer == "sgd":
        tref = torch.optim.SGD(ref, momentum=p.momentum, nesterov=p.nesterov, **kw)
    elif p.optimizer == "rmsprop":
        tref = torch.optim.RMSprop(ref, eps=p.eps, **kw)
    elif p.optimizer == "lion":   # the library's class, its own default betas
        from lion_pytorch import Lion

        assert p.betas == (0.9, 0.99)
        tref = Lion(ref, betas=p.betas, **kw)
    elif p.optimizer == "sf_adamw":
        from schedulefree import AdamWScheduleFree

        tref = AdamWScheduleFree(ref, betas=p.betas, eps=p.eps, **kw)
        tref.train()
    else:
        tref = getattr(torch.optim, {"adam": "Adam", "adamw": "AdamW"}[p.optimizer])(ref, betas=p.betas, eps=p.eps,
                                                                                     **kw)
    for _ in range(5):
        grad = torch.randn(3, 5, 4)
        ours[0].grad, ref[0].grad = grad.clone(), grad.clone()
        opt.step(p.lr)
        tref.step()
    assert torch.equal(ours[0].detach(), ref[0].detach())   # it is torch.optim (foreach) underneath
    # a frozen member is left untouched, the others move exactly as before
    before = ours[0].detach().clone()
    ours[0].grad = torch.randn(3, 5, 4)
    state_before = [t.clone() for t in opt._member_state()]
    opt.step(p.lr, frozen=[1])
    assert torch.equal(ours[0][1], before[1]) and not torch.equal(ours[0][0], before[0])
    for t, old in zip(opt._member_state(), state_before, strict=True):   # its optimizer state too
        assert torch.equal(t[1], old[1]) and not torch.equal(t[0], old[0])


@pytest.mark.slow
def test_a_diverging_member_does_not_disturb_the_others():
    pipes = {"hot": {"optimizer": "sgd", "lr": 2.0, "batch_size": 128, "epochs": 3}}
    g = tiny(pipes, sigma=(1.0, 2.0, 64.0), seeds=(0,), norm="none")
    diverging = train_pack(g, "hot", [(1.0, 0), (64.0, 0)])
    calm = train_pack(g, "hot", [(1.0, 0), (2.0, 0)])
    st = diverging["status"].sel(pipeline="hot", seed=0)
    assert int(st.sel(sigma_w=64.0)) == cube.DIVERGED
    assert int(st.sel(sigma_w=1.0)) == cube.OK
    bad = diverging.sel(pipeline="hot", sigma_w=64.0, seed=0)
    assert np.isfinite(float(bad["train_loss"].sel(epoch=0)))            # kept up to divergence
    assert np.isnan(bad["train_loss"].sel(epoch=3)).item()                # NaN after
    assert np.isfinite(float(bad["selected_val_acc"]))                    # selected before divergence
    a = diverging.sel(pipeline="hot", sigma_w=1.0, seed=0)
    b = calm.sel(pipeline="hot", sigma_w=1.0, seed=0)
    for v in (*CURVES, "layer_norm", "selected_test_acc", "test_pred"):
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


# -- run variables ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_tau_interp_tau_best_and_selection_follow_the_curves():
    pipes = {"fit": {"optimizer": "adam", "lr": 0.01, "batch_size": 64, "epochs": 6}}
    g = tiny(pipes, sigma=(0.5, 8.0), seeds=(0,), width=8, threshold=0.9)
    ds = train_pack(g, "fit", g.cells("fit"))
    n_test = ds.attrs["n_test"]
    seen_never = False
    for s in (0.5, 8.0):
        r = ds.sel(pipeline="fit", sigma_w=s, seed=0)
        tr_acc, val = r["train_acc"].values, r["val_acc"].values
        hit = np.nonzero(tr_acc >= 0.9)[0]
        if hit.size:
            assert float(r["tau_interp"]) == hit[0]
        else:
            seen_never = True
            assert np.isnan(float(r["tau_interp"]))
        best = int(np.argmax(val))                          # argmax: the earliest of ties
        assert float(r["tau_best"]) == best
        assert float(r["selected_val_acc"]) == val[best]
        assert float(r["selected_test_acc"]) == r["test_acc"].values[best]
        assert int(r["selected_test_correct"]) == round(float(r["test_acc"].values[best]) * n_test)
        correct = int((r["test_pred"].values == ds["test_label"].values).sum())
        assert correct == int(r["selected_test_correct"])   # predictions are those of the selected epoch
        assert float(r["final_test_acc"]) == r["test_acc"].values[-1]
        assert float(r["init_kernel_norm"]) == r["kernel_norm"].values[0]
        np.testing.assert_allclose(r["kernel_norm"].values, np.sqrt((r["layer_norm"].values ** 2).sum(-1)),
                                   rtol=1e-5)
    assert float(ds["tau_interp"].sel(sigma_w=0.5).squeeze()) <= 6
    del seen_never
    last = train_pack(tiny(pipes, sigma=(0.5,), seeds=(0,), width=8, select="last"), "fit", [(0.5, 0)])
    r = last.sel(pipeline="fit", sigma_w=0.5, seed=0)
    assert float(r["tau_best"]) == 6 and float(r["selected_test_acc"]) == float(r["final_test_acc"])


def test_pack_output_is_a_valid_cube_with_missing_cells():
    g = tiny({"a": SGD})
    ds = train_pack(g, "a", [(2.0, 1), (0.5, 0)])
    assert not cube.errors(ds), cube.errors(ds)
    assert list(ds.sigma_w.values) == [0.5, 2.0] and list(ds.seed.values) == [0, 1]
    st = ds["status"].sel(pipeline="a")
    assert int(st.sel(sigma_w=0.5, seed=0)) == cube.OK and int(st.sel(sigma_w=2.0, seed=1)) == cube.OK
    assert int(st.sel(sigma_w=0.5, seed=1)) == cube.MISSING
    assert np.isnan(ds["train_acc"].sel(pipeline="a", sigma_w=2.0, seed=0)).all()
    assert ds.sizes["epoch"] == 3 and ds["train_acc"].sel(epoch=0).notnull().sum() == 2
    for key in cube.GLOBAL_ATTRS:
        assert key in ds.attrs, key
    assert ds.attrs["grid"] == g.to_yaml() and len(ds.attrs["dataset_fingerprint"]) == 64
    for c in (*cube.PIPELINE_COORDS, "nesterov", "decoupled_wd", "warmup_epochs"):
        assert c in ds.coords, c
    assert (ds["test_label"].values == load_split(g.dataset).y_test.numpy()).all()


# -- determinism, resume, failures ---------------------------------------------------------------------

@pytest.mark.slow
def test_cpu_runs_are_deterministic_and_resume_is_bit_identical():
    pipes = {"m": {"optimizer": "sgd", "lr": 0.05, "batch_size": 128, "momentum": 0.9, "epochs": 4,
                   "schedule": "cosine", "warmup_epochs": 1}}
    g = tiny(pipes, sigma=(0.5, 2.0), seeds=(0,), augment="crop_flip")
    states, keep = checkpoint_recorder()
    full = train_pack(g, "m", g.cells("m"), checkpoint=keep, checkpoint_every_epochs=1)
    again = train_pack(g, "m", g.cells("m"))
    xr.testing.assert_identical(strip_volatile(full), strip_volatile(again))
    assert [s["epochs_done"] for s in states] == [1, 2, 3]
    resumed = train_pack(g, "m", g.cells("m"), resume=states[1])
    xr.testing.assert_identical(strip_volatile(full), strip_volatile(resumed))
    with pytest.raises(UserError, match="another pack"):
        train_pack(g, "m", [(0.5, 0)], resume=states[1])


def test_injected_failure_raises(monkeypatch):
    g = tiny({"a": SGD}, sigma=(1.0, 0.125), seeds=(0,))
    monkeypatch.setenv("INITMEM_FAIL_CELL", "a:0.125:0")
    with pytest.raises(RuntimeError, match="injected failure in cell a:0.125:0"):
        train_pack(g, "a", g.cells("a"))
    monkeypatch.setenv("INITMEM_FAIL_CELL", "a:4:0")   # not in this pack: trains
    assert int(train_pack(g, "a", [(1.0, 0)])["status"].item()) == cube.OK


def test_plan_packs_covers_every_cell_deterministically():
    g = tiny({"a": SGD, "b": {**SGD, "lr": 0.01}}, sigma=(0.5, 1.0, 2.0), seeds=(0, 1, 2))
    plan = plan_packs(g, device="cpu", pack_size=4)
    assert plan == plan_packs(g, device="cpu", pack_size=4)
    assert [p for p, _ in plan] == ["a", "a", "a", "b", "b", "b"]
    assert all(len(c) == 3 for _, c in plan)    # 9 cells in 3 balanced packs of <= 4
    for pipe in ("a", "b"):
        assert sorted(c for p, cells in plan if p == pipe for c in cells) == sorted(g.cells(pipe))
    auto = plan_packs(g, device="cpu")
    assert sum(len(c) for _, c in auto) == 18


@pytest.mark.slow
def test_collect_grid_merges_several_packs_of_one_pipeline():
    g = tiny({"a": {**SGD, "epochs": 1}, "b": {**SGD, "epochs": 2, "optimizer": "adam", "lr": 0.003}},
             sigma=(0.5, 2.0), seeds=(0, 1))
    ds = collect_grid(g, pack_size=3)
    assert not cube.errors(ds)
    assert (ds["status"] == cube.OK).all()
    assert ds.sizes["epoch"] == 3
    assert np.isnan(ds["train_acc"].sel(pipeline="a", epoch=2)).all()     # past the horizon
    assert ds["train_acc"].sel(pipeline="a", epoch=1).notnull().all()


@pytest.mark.slow
@pytest.mark.parametrize("channels_last", [False, True])
def test_the_cube_does_not_depend_on_the_pack_size(channels_last):
    """Whole cube, every variable, through collect_grid: one pack of 4 per pipeline, packs of
    3 + 1 (so one pack of one, shadow group and all), and packs of one."""
    g = tiny({"a": {**SGD, "epochs": 2, "momentum": 0.9}, "b": {**SGD, "epochs": 2, "optimizer": "adam", "lr": 0.003}},
             sigma=(0.5, 2.0), seeds=(0, 1), width=8, augment="crop_flip", channels_last=channels_last)
    cubes = [strip_volatile(collect_grid(g, pack_size=n)) for n in (4, 3, 1)]
    for other in cubes[1:]:
        xr.testing.assert_identical(cubes[0], other)


# -- models, devices, data -------------------------------------------------------------------------------

@pytest.mark.parametrize("arch,n_kernels", [("resnet9", 9), ("resnet20", 22), ("resnet32", 34)])
def test_architectures_build_and_run(arch, n_kernels):
    net = build_net(arch, 2, 3, 10, 4, "batch")
    assert len(list(net.kernels())) == n_kernels
    out = net(torch.randn(2, 6, 32, 32))
    assert out.shape == (2, 2, 10)


def test_devices_and_missing_data_are_user_errors(tmp_path):
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cuda", "mps", "cpu")
    with pytest.raises(UserError, match="must be one of"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA"):
            resolve_device("cuda")
    g = parse_grid({"name": "c", "dataset": {"name": "cifar10", "root": str(tmp_path / "nowhere")},
                    "model": {"arch": "resnet20"}, "sigma_w": [1], "seeds": [0],
                    "pipelines": {"a": SGD}})
    with pytest.raises(UserError, match="download=True"):
        load_split(g.dataset)
    (tmp_path / "empty").mkdir()
    g2 = parse_grid({**g.to_dict(), "dataset": {**g.to_dict()["dataset"], "root": str(tmp_path / "empty")}})
    with pytest.raises(UserError, match="not found or corrupt"):
        load_split(g2.dataset)


def test_splits_are_fixed_by_split_seed():
    g = tiny({"a": SGD})
    a, b = load_split(g.dataset), load_split(g.dataset.model_copy(update={"split_seed": 1}))
    assert a.fingerprint != b.fingerprint
    assert a.y_train.numel() + a.y_val.numel() + a.y_test.numel() == 1797
    assert a.x_train.shape[1:] == (1, 8, 8)


def _plain_tiny(x: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
    """ResNet-tiny written with plain (ungrouped) torch ops for one member: the reference."""
    import torch.nn.functional as F

    def bn(h, name):
        return F.batch_norm(h, None, None, p[f"{name}.weight"], p[f"{name}.bias"], True, 0.1, 1e-5)

    def block(h, pre, stride):
        out = F.relu(bn(F.conv2d(h, p[f"{pre}.conv1.weight"], stride=stride, padding=1), f"{pre}.bn1"))
        out = bn(F.conv2d(out, p[f"{pre}.conv2.weight"], padding=1), f"{pre}.bn2")
        sc = h
        if f"{pre}.shortcut.0.weight" in p:
            sc = bn(F.conv2d(h, p[f"{pre}.shortcut.0.weight"], stride=stride), f"{pre}.shortcut.1")
        return F.relu(out + sc)

    h = F.relu(bn(F.conv2d(x, p["stem.weight"], padding=1), "stem_bn"))
    h = block(block(h, "block1", 1), "block2", 2)
    return F.linear(h.mean((2, 3)), p["head.weight"], p["head.bias"])


def test_packed_net_equals_a_plain_reference_per_member():
    G, B = 3, 16
    torch.manual_seed(0)
    net = build_net("resnet_tiny", G, 1, 10, 4, "batch")
    with torch.no_grad():
        for prm in net.parameters():
            prm.copy_(torch.randn_like(prm) * 0.5)
    xs = torch.randn(G, B, 1, 8, 8)
    ys = torch.randint(0, 10, (G, B))
    net.train()
    logits = net(xs.transpose(0, 1).reshape(B, G, 8, 8))          # B G K
    loss = sum(torch.nn.functional.cross_entropy(logits[:, g], ys[g]) for g in range(G))
    loss.backward()
    for g in range(G):
        ref = {n: prm[g].detach().clone().requires_grad_(True) for n, prm in net.named_parameters()}
        out = _plain_tiny(xs[g], ref)
        torch.testing.assert_close(logits[:, g], out, rtol=1e-5, atol=1e-5)
        torch.nn.functional.cross_entropy(out, ys[g]).backward()
        for n, prm in net.named_parameters():
            torch.testing.assert_close(prm.grad[g], ref[n].grad, rtol=1e-4, atol=1e-5, msg=n)


# -- speed settings change no number -----------------------------------------------------------------------

ALLOCATOR_CHILD = """
import pickle, sys
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train import devices
from initmem.grid import parse_grid
import json
devices.TUNE_CPU_ALLOCATOR = False
grid = parse_grid(json.loads(open(sys.argv[1]).read()))
ds = collect_grid(grid)
assert not devices.keep_freed_memory()
pickle.dump(ds, open(sys.argv[2], "wb"))
"""


@pytest.mark.slow
def test_the_allocator_setting_leaves_the_cube_bitwise_the_same(tmp_path):
    """devices.keep_freed_memory only changes where buffers come from: a grid collected in a process
    with glibc's default malloc thresholds and in one with the engine's gives the identical cube.

    A mnist1d pack of width 16 (activations above glibc's 128 KiB mmap threshold in training and
    evaluation, so the default process really maps fresh pages), SGD with momentum and Adam.
    """
    import json
    import pickle
    import subprocess
    import sys

    from initmem.collect.train import devices

    g = parse_grid({
        "name": "alloc", "dataset": {"name": "mnist1d", "n_train": 256, "n_val": 128, "n_test": 512},
        "model": {"arch": "resnet1d", "width": 16, "depth": 3, "norm": "batch"},
        "sigma_w": [0.5, 2.0], "seeds": [0, 1],
        "pipelines": {"m": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "momentum": 0.9, "epochs": 2},
                      "a": {"optimizer": "adam", "lr": 0.003, "batch_size": 32, "epochs": 2}},
        "engine": {"cpu_threads": 1},
    })
    spec, out = tmp_path / "grid.json", tmp_path / "default.pkl"
    spec.write_text(json.dumps(g.to_dict()))
    subprocess.run([sys.executable, "-c", ALLOCATOR_CHILD, str(spec), str(out)], check=True)
    with out.open("rb") as fh:
        default = pickle.load(fh)
    tuned = collect_grid(g)
    if not devices.keep_freed_memory():
        pytest.skip("no glibc malloc here: the setting is a no-op")
    xr.testing.assert_identical(strip_volatile(default), strip_volatile(tuned))

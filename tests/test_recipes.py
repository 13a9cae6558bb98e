"""Training recipes: the Lion and Schedule-Free AdamW kinds, label smoothing, an EMA of the weights, SAM and
dropout (resnet1d).

Every one keeps a pack's members independent: a member trained in a pack is bitwise the same cell trained
alone, at the training point and at the evaluated weights (an EMA, Schedule-Free's average) with their
recomputed BatchNorm statistics. SAM's perturbation uses each member's own gradient norm (one norm over
the stacked tensors breaks that, and the test shows it does) and equals ``pytorch_optimizer.SAM`` for a
single model. Dropout draws each member's mask from that member's own stream (one draw over the stacked
features breaks pack invariance, and the test shows it does) and, at 0, draws nothing. The new grid fields
leave every preset's hash as it was."""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from initmem import cube, optimizers
from initmem.collect.train import engine
from initmem.collect.train import recipes as R
from initmem.collect.train.data import load_split
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import PackTrainer
from initmem.collect.train.packed import PBatchNorm
from initmem.cube.schema import A_LION_VERSION, A_SCHEDULEFREE_VERSION
from initmem.errors import UserError
from initmem.grid import grid_hash, load_grid, parse_grid
from initmem.tests._collect_util import checkpoint_recorder

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

# The presets' grid hashes before the recipe fields existed: a field added later must not change them.
PRESET_HASHES = {
    "arms": "40e24620c3e9cd16faeb1b92b6a454cb518418f52965a0463940363bac86e6ee",
    "clocks": "ad43fcc0b1c50096e56825e88401f3290016a96d6b7e2047c71900de1253a8bc",
    "digits": "caf83c89abec2c9afa16d48053901b8c598d7fc231fdf609578922958836c0c2",
    "paper": "2fcb321a89bbcfa76eefdc4ba2f11cc215ef79ff95a3b2fdf4f1c7c910b4e42e",
    "quick": "587444b9b7d83e6060e293064e8507d6335389ba3efeb8fece1ec678835c175a",
}

RECIPES = {
    "lion": {"optimizer": "lion", "lr": 0.001, "weight_decay": 0.1},
    "sf_adamw": {"optimizer": "sf_adamw", "lr": 0.003, "weight_decay": 0.01, "warmup_epochs": 1},
    "smooth_ema": {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "label_smoothing": 0.1, "ema_decay": 0.8},
    "sam": {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001, "sam_rho": 0.05},
    "sam_adamw_ema": {"optimizer": "adamw", "lr": 0.003, "weight_decay": 0.05, "sam_rho": 0.1, "ema_decay": 0.5},
}


def grid(pipelines: dict, *, norm: str = "batch", width: int = 8, epochs: int = 2, batch_size: int = 32,
         channels_last: bool = False) -> object:
    return parse_grid({
        "name": "recipes", "dataset": {"name": "digits"},
        "model": {"arch": "resnet_tiny", "width": width, "norm": norm},
        "sigma_w": [0.5, 1.0, 2.0], "seeds": [0, 1, 2],
        "pipelines": {k: {"batch_size": batch_size, "epochs": epochs, **v} for k, v in pipelines.items()},
        "engine": {"cpu_threads": 1, "channels_last": channels_last}})


@pytest.fixture(scope="module")
def split():
    return load_split(grid({"a": RECIPES["lion"]}).dataset)


def bn_stats(net: torch.nn.Module, g: int) -> list[torch.Tensor]:
    return [t[g] for m in net.modules() if isinstance(m, PBatchNorm) for t in (m.running_mean, m.running_var)]


def train_pack_and_alone(g, pipeline: str, cells: list, split, steps: int, check: list[int]
                         ) -> tuple[PackTrainer, dict[int, PackTrainer]]:
    """``steps`` training steps of ``cells`` as one pack and of each checked cell alone."""
    b = g.pipelines[pipeline].batch_size
    pack = PackTrainer(g, pipeline, cells, split, "cpu")
    alone = {gi: PackTrainer(g, pipeline, [cells[gi]], split, "cpu") for gi in check}
    order = pack.epoch_order()
    orders = {gi: a.epoch_order() for gi, a in alone.items()}
    for i in range(steps):
        pack.train_step(order[:, b * i:b * (i + 1)])
        for gi, a in alone.items():
            a.train_step(orders[gi][:, b * i:b * (i + 1)])
    return pack, alone


def assert_same_member(pack: PackTrainer, alone: dict[int, PackTrainer], xs: torch.Tensor, what: str) -> None:
    """Parameters, BatchNorm statistics and eval logits of every checked member, bitwise."""
    G = pack.G
    fmt = torch.channels_last if pack.channels_last else torch.contiguous_format
    with torch.no_grad():
        pack.net.eval()
        logits = pack.net(xs.repeat(1, G, 1, 1).contiguous(memory_format=fmt))
        for gi, a in alone.items():
            a.net.eval()
            assert torch.equal(logits[:, gi], a.net(xs.contiguous(memory_format=fmt))[:, 0]), (what, gi)
            for (name, p), (_, q) in zip(pack.net.named_parameters(), a.net.named_parameters(), strict=True):
                assert torch.equal(p[gi], q[0]), (what, gi, name, float((p[gi] - q[0]).abs().max()))
            for s, t in zip(bn_stats(pack.net, gi), bn_stats(a.net, 0), strict=True):
                assert torch.equal(s, t), (what, gi, "bn")


def assert_pack_is_bitwise_alone(g, pipeline: str, split, steps: int = 4) -> None:
    """At the training point and, inside ``evaluated_weights``, at the evaluated weights with their
    recomputed BatchNorm statistics; leaving the evaluated weights restores the training point bitwise."""
    cells = [(0.5, 0), (2.0, 1), (1.0, 2)]
    with deterministic("cpu", 1):
        pack, alone = train_pack_and_alone(g, pipeline, cells, split, steps, check=[0, 2])
        xs = split.x_test[:64]
        assert_same_member(pack, alone, xs, f"{pipeline} training point")
        before = [p.detach().clone() for p in pack.net.parameters()]
        stats = [b.clone() for b in R.bn_buffers(pack.net)]
        with contextlib.ExitStack() as stack:
            for tr in (pack, *alone.values()):
                stack.enter_context(tr.evaluated_weights())
            assert_same_member(pack, alone, xs, f"{pipeline} evaluated weights")
        for p, old in zip(pack.net.parameters(), before, strict=True):
            assert torch.equal(p, old), pipeline
        for b, old in zip(R.bn_buffers(pack.net), stats, strict=True):
            assert torch.equal(b, old), pipeline


@pytest.mark.parametrize("pipeline", list(RECIPES))
@pytest.mark.slow
def test_member_of_a_pack_is_bitwise_the_same_cell_trained_alone(pipeline, split):
    g = grid({pipeline: RECIPES[pipeline]})
    assert_pack_is_bitwise_alone(g, pipeline, split)


@pytest.mark.parametrize("pipeline", ["sf_adamw", "sam_adamw_ema"])
@pytest.mark.slow
def test_channels_last_packs_bitwise_too(pipeline, split):
    """The quick preset's layout (exact at channel counts that are multiples of 8)."""
    g = grid({pipeline: RECIPES[pipeline]}, channels_last=True)
    assert_pack_is_bitwise_alone(g, pipeline, split)


@pytest.mark.parametrize("pipeline", ["sam", "smooth_ema"])
def test_norm_free_nets_pack_bitwise_too(pipeline, split):
    g = grid({pipeline: RECIPES[pipeline]}, norm="none")
    assert_pack_is_bitwise_alone(g, pipeline, split)


def coupled_norms(params) -> torch.Tensor:
    """One gradient norm over the stacked tensors, every member's slices together (the wrong SAM)."""
    total = torch.stack([p.grad.norm() for p in params if p.grad is not None]).square().sum().sqrt()
    return total.expand(params[0].shape[0])


def test_sam_with_one_norm_over_the_stacked_tensors_breaks_pack_invariance(split, monkeypatch):
    """The check above can fail: with the coupled norm a member's step depends on its pack-mates."""
    monkeypatch.setattr(engine, "sam_perturb", lambda params, rho: R.sam_perturb(params, rho, norms=coupled_norms))
    g = grid({"sam": RECIPES["sam"]})
    with pytest.raises(AssertionError):
        assert_pack_is_bitwise_alone(g, "sam", split, steps=2)


def test_member_norms_are_each_members_own(split):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(3, 4, 5)), torch.nn.Parameter(torch.randn(3, 7))]
    for p in params:
        p.grad = torch.randn_like(p)
    want = torch.stack([torch.cat([p.grad[g].flatten() for p in params]).double().norm() for g in range(3)])
    np.testing.assert_allclose(R.member_grad_norms(params).double().numpy(), want.numpy(), rtol=1e-6)
    before = [p.detach().clone() for p in params]
    saved = R.sam_perturb(params, 0.5)
    moved = torch.stack([torch.cat([(p.detach() - b)[g].flatten() for p, b in zip(params, before, strict=True)]).norm()
                         for g in range(3)])
    np.testing.assert_allclose(moved.numpy(), 0.5, rtol=1e-6)   # every member moves by rho
    R.restore(params, saved)
    assert all(torch.equal(p, b) for p, b in zip(params, before, strict=True))


@pytest.mark.parametrize("base", ["sgd", "adamw"])
def test_sam_of_one_model_is_pytorch_optimizers_sam(base, split):
    """G = 1 through the engine against ``pytorch_optimizer.SAM`` over a copy of the net: the same
    parameters after 4 steps, bitwise (the same operations in the same order: per-tensor norms, their
    squares summed, square root plus 1e-12, e = g * rho / norm, restore by copy, base step)."""
    from pytorch_optimizer import SAM

    spec = {"sgd": {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001},
            "adamw": {"optimizer": "adamw", "lr": 0.003, "weight_decay": 0.05}}[base]
    g = grid({"a": {**spec, "sam_rho": 0.05}}, norm="none")
    p = g.pipelines["a"]
    with deterministic("cpu", 1):
        tr = PackTrainer(g, "a", [(1.0, 0)], split, "cpu")
        ref = copy.deepcopy(tr.net)
        kw = ({"momentum": p.momentum, "weight_decay": p.weight_decay} if base == "sgd"
              else {"betas": p.betas, "eps": p.eps, "weight_decay": p.weight_decay})
        opt = SAM(ref.parameters(), {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[base], rho=p.sam_rho,
                  lr=p.lr, foreach=True, **kw)
        order = tr.epoch_order()
        b = p.batch_size
        for i in range(4):
            idx = order[:, b * i:b * (i + 1)]
            x, y = tr.batch(idx)
            tr.train_step(idx)

            def closure(x=x, y=y) -> torch.Tensor:
                opt.zero_grad()
                logits = ref(x)
                B, G, K = logits.shape
                loss = F.cross_entropy(logits.reshape(B * G, K), y.reshape(-1), reduction="none").view(B, G).mean(0)
                loss.sum().backward()
                return loss

            ref.train()
            closure()
            opt.step(closure)
        for (name, q), r in zip(tr.net.named_parameters(), ref.parameters(), strict=True):
            assert torch.equal(q, r), (name, float((q - r).abs().max()))


def test_sam_keeps_the_first_passes_batchnorm_statistics(split):
    """The second pass (at the perturbed weights) leaves the running statistics where the first left them."""
    g = grid({"sam": RECIPES["sam"], "plain": {k: v for k, v in RECIPES["sam"].items() if k != "sam_rho"}})
    with deterministic("cpu", 1):
        sam, plain = (PackTrainer(g, name, [(1.0, 0)], split, "cpu") for name in ("sam", "plain"))
        idx = sam.epoch_order()[:, :32]
        sam.train_step(idx)
        plain.train_step(idx)
        # one step from the same init on the same batch: the same first-pass statistics, other weights
        for s, t in zip(R.bn_buffers(sam.net), R.bn_buffers(plain.net), strict=True):
            assert torch.equal(s, t)
        assert not torch.equal(sam.net.head.weight, plain.net.head.weight)


def test_evaluated_weights_are_the_average_with_their_own_batchnorm_statistics(split):
    g = grid({"ema": RECIPES["smooth_ema"], "sf": RECIPES["sf_adamw"]})
    with deterministic("cpu", 1):
        for name in ("ema", "sf"):
            tr = PackTrainer(g, name, [(1.0, 0), (2.0, 1)], split, "cpu")
            order = tr.epoch_order()
            for i in range(3):
                tr.train_step(order[:, 32 * i:32 * (i + 1)])
            params = tr.optimizer.params
            if name == "ema":   # AveragedModel's convention: a copy at the first update, then lerp
                want = tr.ema.shadow
            else:               # Schedule-Free: x = y + (1 - 1/beta1)(z - y), its .eval()
                beta1 = tr.spec.betas[0]
                want = [torch.lerp(p.detach(), tr.optimizer.opt.state[p]["z"], 1 - 1 / beta1) for p in params]
            with tr.evaluated_weights(evaluate=False):
                for p, w in zip(params, want, strict=True):
                    assert torch.equal(p, w), name
            with tr.evaluated_weights():
                # the statistics: the average of the per-batch statistics over the training split's full batches
                x = split.x_train
                n = x.shape[0] // 32
                bn = next(m for m in tr.net.modules() if isinstance(m, PBatchNorm))
                got = bn.running_mean.double().flatten().numpy().copy()
                seen = []
                hook = bn.register_forward_pre_hook(lambda _m, inp, seen=seen: seen.append(inp[0].detach()))
                tr.net.train()
                with torch.no_grad():
                    for i in range(n):
                        tr.net(x[32 * i:32 * (i + 1)].repeat(1, tr.G, 1, 1))
                hook.remove()
                means = torch.stack([s.double().mean((0, 2, 3)) for s in seen])
                # float32 running updates against a float64 mean of means: rounding only
                np.testing.assert_allclose(got, means.mean(0).numpy(), rtol=1e-5, atol=1e-7)


def test_ema_before_the_first_step_and_its_update():
    params = [torch.nn.Parameter(torch.zeros(2, 3))]
    ema = R.Ema(params, 0.9)
    with torch.no_grad():
        params[0].fill_(1.0)
        ema.update()                       # the first update copies
        assert torch.equal(ema.shadow[0], torch.ones(2, 3))
        params[0].fill_(2.0)
        ema.update()                       # then 0.9 * ema + 0.1 * w
    np.testing.assert_allclose(ema.shadow[0].numpy(), 1.1, rtol=1e-6)


def test_label_smoothing_is_in_the_training_loss_only(split):
    smooth = {**RECIPES["sam"], "label_smoothing": 0.2}
    smooth.pop("sam_rho")
    g = grid({"plain": {**smooth, "label_smoothing": 0.0}, "smooth": smooth})
    with deterministic("cpu", 1):
        a, b = (PackTrainer(g, name, [(1.0, 0)], split, "cpu") for name in ("plain", "smooth"))
        la, acc_a, _ = a.evaluate(split.x_val, split.y_val)
        lb, acc_b, _ = b.evaluate(split.x_val, split.y_val)
        assert np.array_equal(la, lb) and np.array_equal(acc_a, acc_b)   # evaluation: plain cross-entropy
        idx = b.epoch_order()[:, :32]
        x, y = b.batch(idx)
        b.net.train()
        with torch.no_grad():
            logits = b.net(x)[:, 0]
        _, loss = b.train_step(idx)
        want = F.cross_entropy(logits, y[:, 0], label_smoothing=0.2)
        np.testing.assert_allclose(float(loss[0]), float(want), rtol=1e-6)


# -- the grid ------------------------------------------------------------------------------------------

def test_presets_keep_their_hashes():
    for name, want in PRESET_HASHES.items():
        g = load_grid(name)
        assert grid_hash(g) == want, name
        assert not any(k in g.to_yaml() for k in ("label_smoothing", "ema_decay", "sam_rho", "dropout"))


def test_recipe_fields_round_trip_through_a_grid_file(tmp_path):
    g = grid(RECIPES)
    path = tmp_path / "recipes.yaml"
    path.write_text(g.to_yaml(), encoding="utf-8")
    again = load_grid(path)
    assert grid_hash(again) == grid_hash(g) and again == g
    assert again.pipelines["smooth_ema"].label_smoothing == 0.1 and again.pipelines["smooth_ema"].ema_decay == 0.8
    assert again.pipelines["sam"].sam_rho == 0.05
    assert "sam_rho" not in again.to_dict()["pipelines"]["lion"]    # off: absent from the canonical form
    # a field set to its default changes nothing
    assert grid_hash(grid({"a": {**RECIPES["lion"], "sam_rho": 0}})) == grid_hash(grid({"a": RECIPES["lion"]}))


def test_lion_defaults_to_its_librarys_betas():
    g = grid({"a": RECIPES["lion"], "b": {**RECIPES["lion"], "betas": [0.95, 0.98]}})
    assert g.pipelines["a"].betas == (0.9, 0.99) and g.pipelines["b"].betas == (0.95, 0.98)
    assert optimizers.get("lion").decoupled_wd(0.1) == 0.1 and optimizers.get("lion").coupled_l2(0.1) == 0.0


@pytest.mark.parametrize("field, value, message", [
    ("sam_rho", -0.1, "sam_rho"),
    ("ema_decay", 1.0, "ema_decay"),
    ("ema_decay", -0.5, "ema_decay"),
    ("label_smoothing", 1.0, "label_smoothing"),
    ("label_smoothing", -0.1, "label_smoothing"),
])
def test_bad_recipe_values_are_user_errors(field, value, message):
    with pytest.raises(UserError, match=message):
        grid({"a": {**RECIPES["sam"], field: value}})


def test_schedule_free_takes_a_constant_rate_and_no_second_average():
    with pytest.raises(UserError, match="schedule: sf_adamw takes schedule constant"):
        grid({"a": {**RECIPES["sf_adamw"], "schedule": "cosine"}})
    with pytest.raises(UserError, match="ema_decay: not with sf_adamw"):
        grid({"a": {**RECIPES["sf_adamw"], "ema_decay": 0.9}})
    with pytest.raises(UserError, match="momentum: only for optimizer sgd"):
        grid({"a": {**RECIPES["lion"], "momentum": 0.9}})


# -- the cube -------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_cube_records_the_knobs_and_the_optimizer_libraries(split):
    from importlib import metadata

    g = parse_grid({
        "name": "atlas", "dataset": {"name": "digits"}, "model": {"arch": "resnet_tiny", "width": 4},
        "sigma_w": [1.0], "seeds": [0], "eval": {"every": 2},
        "pipelines": {k: {**v, "batch_size": 256, "epochs": 2} for k, v in RECIPES.items()},
        "engine": {"cpu_threads": 1}})
    from initmem.collect.execution.in_process import collect_grid

    ds = collect_grid(g)
    assert not cube.errors(ds), cube.errors(ds)
    for name, spec in RECIPES.items():
        sel = ds.sel(pipeline=name)
        for key in ("label_smoothing", "ema_decay", "sam_rho", "dropout"):
            assert float(sel[key]) == float(spec.get(key, 0.0)), (name, key)
        assert str(sel["optimizer"].values) == spec["optimizer"]
        assert np.isfinite(sel[cube.TEST_ACC].sel(epoch=2).values).all(), name
    assert ds.attrs[A_LION_VERSION] == metadata.version("lion-pytorch")
    assert ds.attrs[A_SCHEDULEFREE_VERSION] == metadata.version("schedulefree")


@pytest.mark.slow
def test_resume_changes_nothing(split):
    """A run resumed from a checkpoint is bitwise the run trained through: the EMA and Schedule-Free's
    state travel with it."""

    import xarray as xr

    from initmem.collect.train.engine import train_pack

    pipes = {"sf": RECIPES["sf_adamw"], "sam_ema": RECIPES["sam_adamw_ema"]}
    g = parse_grid({
        "name": "resume", "dataset": {"name": "digits"}, "model": {"arch": "resnet_tiny", "width": 4},
        "sigma_w": [0.5, 2.0], "seeds": [0], "eval": {"select": "best_val_acc"},
        "pipelines": {k: {**v, "batch_size": 256, "epochs": 3} for k, v in pipes.items()},
        "engine": {"cpu_threads": 1}})

    def strip(ds):
        ds = ds.drop_vars("wall_seconds")
        ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
        return ds

    for name in pipes:
        states, keep = checkpoint_recorder()
        full = train_pack(g, name, g.cells(name), checkpoint=keep)
        resumed = train_pack(g, name, g.cells(name), resume=states[0])
        xr.testing.assert_identical(strip(full), strip(resumed))


@pytest.mark.parametrize("pipeline", ["sf_adamw", "smooth_ema"])
@pytest.mark.slow
def test_evaluating_changes_no_training_step(pipeline, split):
    """Entering the evaluated weights (with their BatchNorm statistics) after every step trains bitwise the
    same weights as never entering them: how often a run evaluates cannot change its training. (For
    Schedule-Free, its ``.train()`` alone would not do: recomputing y from x and z rounds.)"""
    g = grid({pipeline: RECIPES[pipeline]})
    with deterministic("cpu", 1):
        a, b = (PackTrainer(g, pipeline, [(0.5, 0), (2.0, 1)], split, "cpu") for _ in range(2))
        order = a.epoch_order()
        assert torch.equal(order, b.epoch_order())
        for i in range(5):
            a.train_step(order[:, 32 * i:32 * (i + 1)])
            b.train_step(order[:, 32 * i:32 * (i + 1)])
            with b.evaluated_weights():
                b.evaluate(split.x_val[:64], split.y_val[:64])
        for p, q in zip(a.net.parameters(), b.net.parameters(), strict=True):
            assert torch.equal(p, q), pipeline
        for s, t in zip(R.bn_buffers(a.net), R.bn_buffers(b.net), strict=True):
            assert torch.equal(s, t), pipeline


# -- dropout (resnet1d) ---------------------------------------------------------------------------------

SGD = {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001}


def grid1d(root, pipelines: dict, *, arch: str = "resnet1d", width: int = 8, epochs: int = 2,
           sigma: tuple = (0.5, 1.0, 2.0), seeds: tuple = (0, 1, 2)) -> object:
    """A tiny MNIST-1D grid (256 training signals, batch 32: 8 steps an epoch)."""
    return parse_grid({
        "name": "dropout", "dataset": {"name": "mnist1d", "n_train": 256, "n_val": 64, "n_test": 128, "seed": 0,
                                       "root": str(root)},
        "model": {"arch": arch, "width": width}, "sigma_w": list(sigma), "seeds": list(seeds),
        "pipelines": {k: {"batch_size": 32, "epochs": epochs, **v} for k, v in pipelines.items()},
        "engine": {"cpu_threads": 1}})


@pytest.fixture(scope="module")
def root1d(tmp_path_factory):
    return tmp_path_factory.mktemp("mnist1d")


@pytest.fixture(scope="module")
def split1d(root1d):
    return load_split(grid1d(root1d, {"a": SGD}).dataset)


@pytest.mark.parametrize("pipeline", [{**SGD, "dropout": 0.1}, {**SGD, "dropout": 0.1, "sam_rho": 0.05}],
                         ids=["dropout", "dropout_sam"])
def test_dropout_member_of_a_pack_is_bitwise_the_same_cell_trained_alone(pipeline, root1d, split1d):
    g = grid1d(root1d, {"a": pipeline})
    assert_pack_is_bitwise_alone(g, "a", split1d)


def coupled_dropout_mask(generators, batch, features, p, device="cpu") -> torch.Tensor:
    """One draw over the stacked ``[B, G*C]`` features from the first member's generator (the wrong dropout)."""
    keep = torch.rand(batch, len(generators) * features, generator=generators[0]) >= p
    return (keep.float() / (1.0 - p)).to(device)


def test_dropout_with_one_draw_over_the_stacked_features_breaks_pack_invariance(root1d, split1d, monkeypatch):
    """The check above can fail: with one mask over the pack a member's mask depends on the pack's size."""
    monkeypatch.setattr(engine, "dropout_mask", coupled_dropout_mask)
    g = grid1d(root1d, {"a": {**SGD, "dropout": 0.1}})
    with pytest.raises(AssertionError):
        assert_pack_is_bitwise_alone(g, "a", split1d, steps=2)


def test_dropout_masks_come_from_each_members_own_stream():
    gens = [torch.Generator().manual_seed(s) for s in (5, 6, 7)]
    copies = [torch.Generator().manual_seed(s) for s in (5, 6, 7)]
    mask = R.dropout_mask(gens, 16, 4, 0.25)
    assert mask.shape == (16, 12) and mask.dtype == torch.float32
    for gi, c in enumerate(copies):     # member gi's columns: its own generator's draws, nothing else
        want = (torch.rand(16, 4, generator=c) >= 0.25).float() * (1 / 0.75)
        assert torch.equal(mask[:, 4 * gi:4 * (gi + 1)], want), gi
    assert set(mask.unique().tolist()) == {0.0, float(torch.tensor(1 / 0.75))}
    with pytest.raises(ValueError):
        R.dropout_mask(gens, 16, 4, 0.0)


def test_dropout_is_in_the_training_forward_only(root1d, split1d):
    """Evaluation runs without a mask (a dropout pipeline evaluates its weights exactly as one without); the
    training loss is the cross-entropy of the head on the masked pooled features, the mask drawn from the
    member's dropout stream (data seed, stream 3), which leaves the data-order stream alone."""
    g = grid1d(root1d, {"plain": SGD, "drop": {**SGD, "dropout": 0.5}})
    with deterministic("cpu", 1):
        plain, drop = (PackTrainer(g, name, [(1.0, 0)], split1d, "cpu") for name in ("plain", "drop"))
        assert plain.gen_drop is None and drop.gen_drop is not None
        la, acc_a, _ = plain.evaluate(split1d.x_val, split1d.y_val)
        lb, acc_b, _ = drop.evaluate(split1d.x_val, split1d.y_val)
        assert np.array_equal(la, lb) and np.array_equal(acc_a, acc_b)
        idx = drop.epoch_order()[:, :32]
        assert torch.equal(idx, plain.epoch_order()[:, :32])    # the same batches with and without dropout
        x, y = drop.batch(idx)
        stream = engine.seed_generator(g.seed_pair(0)[1], engine.STREAM_DROPOUT)
        mask = R.dropout_mask([stream], 32, drop.net.head.cin, 0.5)
        assert (mask == 0).any() and (mask != 0).any()
        drop.net.train()
        with torch.no_grad():
            # the engine's reduction: per-example losses, then their mean
            want = F.cross_entropy(drop.net.head(drop.net.features(x) * mask)[:, 0], y[:, 0], reduction="none").mean()
            unmasked = F.cross_entropy(drop.net(x)[:, 0], y[:, 0], reduction="none").mean()
        _, loss = drop.train_step(idx)
        assert float(loss[0]) == float(want) and float(loss[0]) != float(unmasked)


def strip(ds):
    ds = ds.drop_vars("wall_seconds")
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return ds


@pytest.mark.slow
def test_dropout_0_draws_nothing_and_leaves_the_cube_as_without_the_field(root1d, monkeypatch):
    """At dropout 0 the grid is the grid without the field (same canonical YAML and hash), no mask is
    drawn and the forward gets no mask argument, so the cube is the one trained without the field."""
    import xarray as xr

    from initmem.collect.execution.in_process import collect_grid

    with_field, without = grid1d(root1d, {"a": {**SGD, "dropout": 0}}, seeds=(0,)), grid1d(root1d, {"a": SGD},
                                                                                          seeds=(0,))
    assert with_field.to_yaml() == without.to_yaml() and grid_hash(with_field) == grid_hash(without)

    def no_draw(*_args, **_kw):
        raise AssertionError("a dropout mask was drawn at dropout 0")

    monkeypatch.setattr(engine, "dropout_mask", no_draw)
    ds = collect_grid(with_field)
    assert float(ds["dropout"].sel(pipeline="a")) == 0.0
    monkeypatch.undo()
    xr.testing.assert_identical(strip(ds), strip(collect_grid(without)))


@pytest.mark.slow
def test_resume_with_dropout_changes_nothing(root1d):
    """A run resumed from its epoch-1 checkpoint is bitwise the run trained through: the dropout streams
    travel with the checkpoint, and a checkpoint without them cannot resume a dropout pipeline."""

    import xarray as xr

    from initmem.collect.train.engine import train_pack

    g = grid1d(root1d, {"a": {**SGD, "dropout": 0.1}}, sigma=(0.5, 2.0), seeds=(0,))
    states, keep = checkpoint_recorder()
    full = train_pack(g, "a", g.cells("a"), checkpoint=keep)
    resumed = train_pack(g, "a", g.cells("a"), resume=states[0])
    xr.testing.assert_identical(strip(full), strip(resumed))
    assert float(full["dropout"].sel(pipeline="a")) == 0.1
    with pytest.raises(UserError, match="dropout"):
        train_pack(g, "a", g.cells("a"), resume={**states[0], "gen_drop": None})


@pytest.mark.parametrize("arch, value, message", [
    ("resnet1d", 1.0, "pipelines.a.dropout: input should be less than 1"),
    ("resnet1d", -0.1, "pipelines.a.dropout: input should be greater than or equal to 0"),
    ("resnet1d", True, "pipelines.a.dropout: must be a number"),
    ("mlp", 0.1, "pipelines.a.dropout: only for arch resnet1d"),
    ("vit_tiny", 0.1, "pipelines.a.dropout: only for arch resnet1d"),
])
def test_bad_dropout_values_are_user_errors(root1d, arch, value, message):
    with pytest.raises(UserError, match=message):
        grid1d(root1d, {"a": {**SGD, "dropout": value}}, arch=arch)


def test_dropout_is_refused_on_the_2d_nets_and_round_trips_on_resnet1d(root1d, tmp_path):
    with pytest.raises(UserError, match="pipelines.a.dropout: only for arch resnet1d"):
        grid({"a": {**RECIPES["sam"], "dropout": 0.1}})
    g = grid1d(root1d, {"a": {**SGD, "dropout": 0.1}, "b": SGD})
    path = tmp_path / "dropout.yaml"
    path.write_text(g.to_yaml(), encoding="utf-8")
    again = load_grid(path)
    assert again == g and grid_hash(again) == grid_hash(g) and again.pipelines["a"].dropout == 0.1
    assert "dropout" not in again.to_dict()["pipelines"]["b"]    # off: absent from the canonical form

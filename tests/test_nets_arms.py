"""The arms that tell memory mechanisms apart: the norm-free ResNet (SkipInit gains, per-channel
biases) packs bitwise and trains; head-only and convolution-only sigma_w scaling are exact
complements; and what sigma_w does to the function at init under each arm (exact identities)."""

from __future__ import annotations

import pytest
import torch

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import STREAM_INIT, seed_generator
from initmem.collect.train.nets import build_net, init_member
from initmem.collect.train.normfree import SkipGain, member_sums
from initmem.collect.train.packed import PConv, PLinear
from initmem.grid import parse_grid

from .test_engine import assert_pack_is_bitwise_alone, tiny

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def _init_pair(arch: str, norm: str, scale: str, seed: int, in_ch: int, width: int = 4):
    """Members 0 and 1 of one pack: the same seed at sigma_w 1 and 2."""
    net = build_net(arch, 2, in_ch, 10, width, norm)
    for g, sigma in enumerate((1.0, 2.0)):
        init_member(net, g, sigma, seed_generator(seed, STREAM_INIT), scale)
    return net


# -- init.scale: head and convolutions are complements ----------------------------------------------

@pytest.mark.parametrize("norm", ["batch", "none"])
def test_head_and_convolution_scaling_are_exact_complements(norm):
    for scale, scaled_type in (("head", PLinear), ("convolutions", PConv)):
        net = _init_pair("resnet_tiny", norm, scale, seed=5, in_ch=1)
        kinds = set()
        for name, mod in net.kernels():
            w1, w2 = mod.weight[0], mod.weight[1]
            factor = 2.0 if isinstance(mod, scaled_type) else 1.0
            assert torch.equal(w2, w1 * factor), (scale, name)
            kinds.add(type(mod))
        assert kinds == {PConv, PLinear}


# -- the function at init under each arm -------------------------------------------------------------

def _logits_pair(norm: str, scale: str) -> tuple[torch.Tensor, torch.Tensor]:
    net = _init_pair("resnet_tiny", norm, scale, seed=2, in_ch=1)
    x = load_split(tiny({"a": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 1}}).dataset).x_test[:64]
    net.train()   # BatchNorm with batch statistics, as in training
    with torch.no_grad():
        out = net(x.repeat(1, 2, 1, 1))
    return out[:, 0], out[:, 1]


def test_what_sigma_w_does_to_the_function_at_init():
    """BatchNorm + normalized kernels: the function is unchanged (only BatchNorm's eps breaks
    the invariance), so memory there is effective-learning-rate memory. Norm-free: the skip
    path of resnet_tiny holds two convolutions (stem, projection shortcut) and the head, and
    with zero biases and zero SkipInit gains the net is positively homogeneous in them, so
    the logits scale exactly by 2^2 (convolutions), 2 (head) and 2^3 (all kernels)."""
    a, b = _logits_pair("batch", "normalized_kernels")
    torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4)
    a, b = _logits_pair("batch", "head")
    assert torch.equal(b, 2 * a)
    for scale, factor in (("convolutions", 4.0), ("head", 2.0), ("all_kernels", 8.0)):
        a, b = _logits_pair("none", scale)
        assert torch.equal(b, factor * a), scale
        assert a.abs().max() > 0


def test_skip_gains_start_at_zero_so_each_block_is_its_skip_path():
    net = _init_pair("resnet_tiny", "none", "all_kernels", seed=1, in_ch=1)
    gains = [m for m in net.modules() if isinstance(m, SkipGain)]
    assert len(gains) == 2 and all(torch.equal(m.gain, torch.zeros(2, 1)) for m in gains)
    x = torch.randn(16, 2, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = net(x)
        net.block1.conv2.weight.mul_(3.0)                # a residual branch's kernel: no effect
        assert torch.equal(net(x), before)
        net.block1.skip_gain.gain.fill_(0.5)             # open the branch: now it counts
        assert not torch.allclose(net(x), before)
    assert not any(isinstance(m, SkipGain) and m.gain is not None
                   for m in build_net("resnet_tiny", 1, 1, 10, 4, "batch").modules())


def test_member_sums_are_the_per_member_sums():
    t = torch.randn(5, 3 * 4, 2, 2, generator=torch.Generator().manual_seed(0))
    v = t.reshape(5, 3, 4, 2, 2)
    torch.testing.assert_close(member_sums(t, 3, per_channel=True), v.sum((0, 3, 4)))
    torch.testing.assert_close(member_sums(t, 3, per_channel=False), v.sum((0, 2, 3, 4)).reshape(3, 1))


# -- packing stays exact ----------------------------------------------------------------------------

@pytest.mark.parametrize("opt,layout", [
    ({"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001}, "nchw"),
    ({"optimizer": "adam", "lr": 0.003, "weight_decay": 0.001}, "channels_last"),
])
def test_norm_free_member_of_a_pack_is_bitwise_the_same_cell_trained_alone(opt, layout):
    cl = layout == "channels_last"
    g = tiny({"a": {**opt, "batch_size": 32, "epochs": 1}}, width=8 if cl else 6, norm="none",
             augment="crop_flip", channels_last=cl)
    # Enough steps for the SkipInit gains to leave 0, so the branches' gradients are exercised.
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (2.0, 1), (1.0, 2)], steps=6)


def test_norm_free_resnet9_packs_bitwise_on_rgb():
    g = parse_grid({
        "name": "rgb", "dataset": {"name": "cifar10", "root": "unused"},
        "model": {"arch": "resnet9", "width": 8, "norm": "none"}, "init": {"scale": "convolutions"},
        "sigma_w": [0.5, 1.0], "seeds": [0, 1],
        "pipelines": {"a": {"optimizer": "sgd", "lr": 0.02, "momentum": 0.9, "batch_size": 16, "epochs": 1}},
        "engine": {"cpu_threads": 1, "channels_last": True}})
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(128, 3, 32, 32, generator=gen), torch.randint(0, 10, (128,), generator=gen)
    split = Split(x, y, x[:32], y[:32], x[:32], y[:32], 10, "synthetic")
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (1.0, 1), (0.5, 1)], steps=2, check=[2], split=split)


# -- it trains -------------------------------------------------------------------------------------

@pytest.mark.slow
def test_norm_free_resnet_trains_on_digits():
    """Adam fits it fast. (Plain SGD is slow here: without BatchNorm the pooled ReLU features
    share a large common mean, an ill-conditioned input to the head; docs/collect.md.)"""
    g = tiny({"adam": {"optimizer": "adam", "lr": 0.01, "batch_size": 32, "epochs": 4}},
             sigma=(1.0,), seeds=(0, 1), width=8, norm="none", channels_last=True)
    with deterministic("cpu", 1):
        ds = collect_grid(g)
    assert bool(cube.ok_cells(ds).all())
    acc = ds[cube.TRAIN_ACC].isel({cube.EPOCH: -1})
    assert float(acc.min()) > 0.7, acc.values     # chance is 0.1

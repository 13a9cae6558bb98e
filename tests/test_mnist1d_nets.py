"""The 1-D ResNet and the dense arms on MNIST-1D: sigma_w multiplies kernels exactly, packing is
bitwise exact (a member alone == the same member in a pack of 3 after training steps), the kernel
interface, FLOP counts and a short collect (measured clocks, a valid cube) work on 1 x 40 signals.
"""

from __future__ import annotations

import pytest
import torch

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train.data import load_split
from initmem.collect.train.engine import PackTrainer
from initmem.collect.train.nets import build_net, count_train_flops_per_image, kernel_norms, scaled_kernels
from initmem.collect.train.packed import PConv1d, PLinear
from initmem.grid import parse_grid

from .test_engine import assert_pack_is_bitwise_alone

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def grid1d(tmp_path_factory, *, arch="resnet1d", norm=None, width=8, scale="all_kernels", opt=None, depth=None,
           channels_last=None, sigma=(1.0, 2.0), seeds=(0, 1), epochs=1, init=None, **model):
    root = tmp_path_factory.getbasetemp() / "mnist1d-cache"   # one cache for the whole session
    m = {"arch": arch, "width": width, **model}
    if norm is not None:
        m["norm"] = norm
    if depth is not None:
        m["depth"] = depth
    return parse_grid({
        "name": "t1d", "dataset": {"name": "mnist1d", "n_train": 256, "n_val": 64, "n_test": 128, "seed": 0,
                                   "root": str(root)},
        "model": m, "init": {"scale": scale, **(init or {})}, "sigma_w": list(sigma), "seeds": list(seeds),
        "pipelines": {"a": {**(opt or {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001}),
                            "batch_size": 32, "epochs": epochs}},
        "engine": {"cpu_threads": 1, "channels_last": channels_last}})


@pytest.mark.parametrize("norm", ["batch", "none"])
@pytest.mark.parametrize("scale", ["all_kernels", "normalized_kernels", "convolutions", "head"])
def test_kernels_at_sigma_2_are_exactly_twice_those_at_sigma_1(tmp_path_factory, norm, scale):
    if scale == "normalized_kernels" and norm == "none":
        pytest.skip("normalized_kernels needs BatchNorm")
    g = grid1d(tmp_path_factory, norm=norm, scale=scale)
    tr = PackTrainer(g, "a", [(1.0, 3), (2.0, 3), (1.0, 4)], load_split(g.dataset), "cpu")
    chosen = scaled_kernels(tr.net, scale)
    kernels = list(tr.net.kernels())
    assert chosen and {type(m) for _, m in kernels} == {PConv1d, PLinear}
    assert len(kernels) == 1 + 2 * 3 + 2 + 1     # stem, 3 blocks (2 convs, 2 projections), head
    for name, mod in kernels:
        factor = 2.0 if name in chosen else 1.0
        assert torch.equal(mod.weight[1], mod.weight[0] * factor), name
        assert not torch.equal(mod.weight[0], mod.weight[2]), name
        if isinstance(mod, PConv1d):     # Kaiming std sqrt(2 / (Cin k)) on the 1-D fan-in
            assert mod.fan_in == mod.cin * mod.k and mod.weight.dim() == 4
    if scale == "convolutions":
        assert chosen == {n for n, m in kernels if isinstance(m, PConv1d)}


@pytest.mark.parametrize("norm", ["batch", "none"])
@pytest.mark.parametrize("opt", [
    {"optimizer": "sgd", "lr": 0.02, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001},
    {"optimizer": "adamw", "lr": 0.003, "weight_decay": 0.1},
])
def test_a_member_alone_is_bitwise_the_same_member_in_a_pack_of_3(tmp_path_factory, norm, opt):
    g = grid1d(tmp_path_factory, norm=norm, opt=opt)
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (2.0, 1), (1.0, 2)], steps=4)


def test_pack_invariance_in_channels_last_at_width_8(tmp_path_factory):
    g = grid1d(tmp_path_factory, channels_last=True)
    assert_pack_is_bitwise_alone(g, "a", [(0.25, 0), (4.0, 1), (1.0, 2)], steps=3, check=[1])


@pytest.mark.parametrize("arch,extra", [("mlp", {}), ("mlp", {"norm": "layer"}), ("vit_tiny", {"patch": 4})])
def test_dense_arms_take_the_1d_signal_and_pack_bitwise(tmp_path_factory, arch, extra):
    g = grid1d(tmp_path_factory, arch=arch, **extra)
    split = load_split(g.dataset)
    net = PackTrainer(g, "a", [(1.0, 0)], split, "cpu").net
    if arch == "mlp":
        assert net.layers[0].cin == 40
    else:
        assert net.tokens == 10 and net.embed.cin == 4
    assert_pack_is_bitwise_alone(g, "a", [(0.5, 0), (2.0, 1), (1.0, 2)], steps=2, check=[1])


def test_flops_and_shapes():
    net = build_net("resnet1d", 1, 1, 10, 32, "batch", size=(1, 40), depth=3)
    # stem 32*1*5*40, block1 2*32*32*3*40, block2 32*32*3*20 + 32*32*3*20 + 32*32*20, block3 the same at 10, head
    macs = 32 * 5 * 40 + 2 * 3072 * 40 + (2 * 3072 + 1024) * 20 + (2 * 3072 + 1024) * 10 + 320
    assert count_train_flops_per_image(net, 1, (1, 40)) == 6 * macs
    out = net(torch.randn(4, 1, 1, 40))
    assert tuple(out.shape) == (4, 1, 10)
    names, norms = kernel_norms(net)
    assert names[0] == "stem" and names[-1] == "head" and tuple(norms.shape) == (1, len(names))


def test_a_short_collect_gives_a_valid_cube_with_measured_clocks(tmp_path_factory):
    g = grid1d(tmp_path_factory, sigma=(0.5, 2.0), seeds=(0,), epochs=2)
    ds = collect_grid(g, device="cpu")
    assert not cube.errors(ds)
    assert ds.sizes[cube.EXAMPLE] == 128 and ds.attrs["dataset"] == "mnist1d"
    assert "dataset_provenance" in ds.attrs and ds.attrs[cube.A_N_TEST] == 128
    assert bool((ds[cube.T_EFF].isel(epoch=-1) > 0).all())
    loss = ds[cube.TRAIN_LOSS]
    assert bool((loss.isel(epoch=-1) < loss.isel(epoch=0)).all())     # it learns


@pytest.mark.parametrize("init,sigma", [({"probe": "layer_scale", "layers": "body"}, (1.0, 2.0)),
                                        ({"probe": "shape", "shapes": ["normal", "orthogonal"]}, (1.0, 2.0))])
def test_the_other_init_probes_act_on_the_1d_kernels(tmp_path_factory, init, sigma):
    g = grid1d(tmp_path_factory, init=init, sigma=sigma, scale="convolutions")
    net = PackTrainer(g, "a", [(1.0, 3), (2.0, 3)], load_split(g.dataset), "cpu").net
    kernels = dict(net.kernels())
    assert torch.equal(kernels["head"].weight[0], kernels["head"].weight[1])   # neither probe touches the head
    body = kernels["blocks.1.conv1"].weight
    if init["probe"] == "layer_scale":
        assert torch.equal(body[1], 2 * body[0]) and torch.equal(kernels["stem"].weight[1], kernels["stem"].weight[0])
    else:   # orthogonal rows [Cout, Cin * k] at the same variance
        w = body[1].reshape(body.shape[1], -1).double()
        gram = w @ w.T
        torch.testing.assert_close(gram, torch.diag(torch.diagonal(gram)), atol=1e-5, rtol=0)

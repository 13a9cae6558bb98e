"""The dense arms (mlp, vit_tiny): a member of a pack is bitwise the cell trained alone, what
sigma_w does to the function at init (exact identities), and a grid whose pipelines set their
own architectures collects into one cube (docs/arms.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train.data import load_split
from initmem.collect.train.dense import PLayerNorm
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import STREAM_INIT, seed_generator
from initmem.collect.train.nets import count_train_flops_per_image, scaled_kernels
from initmem.collect.train.probes import build_for_grid, init_cell
from initmem.errors import UserError
from initmem.grid import parse_grid

from .test_engine import assert_pack_is_bitwise_alone

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

MLP = {"arch": "mlp", "width": 24, "depth": 2}
MLP_LN = {"arch": "mlp", "width": 24, "depth": 2, "norm": "layer"}
VIT = {"arch": "vit_tiny", "width": 16, "depth": 1, "heads": 2, "patch": 2}


def dense_grid(model: dict, *, init: dict | None = None, opt: dict | None = None, sigma=(0.5, 1.0, 2.0),
               seeds=(0, 1, 2), epochs: int = 1, extra_pipelines: dict | None = None):
    d = {"name": "dense", "dataset": {"name": "digits", "val_fraction": 0.3, "test_fraction": 0.4},
         "model": model, "seeds": list(seeds),
         "pipelines": {"a": {**(opt or {"optimizer": "adam", "lr": 0.003, "weight_decay": 0.001}),
                             "batch_size": 32, "epochs": epochs}, **(extra_pipelines or {})},
         "engine": {"cpu_threads": 1, "pack_size": 16}}
    if init is not None:
        d["init"] = init
    if sigma is not None:      # None: left out (probe shape fills in its level codes)
        d["sigma_w"] = list(sigma)
    return parse_grid(d)


MOM = {"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.001}
ADAMW = {"optimizer": "adamw", "lr": 0.003, "weight_decay": 0.1}


@pytest.mark.parametrize("model,opt", [(MLP, MOM), (MLP_LN, ADAMW), (VIT, MOM), (VIT, ADAMW)])
def test_dense_member_of_a_pack_is_bitwise_the_same_cell_trained_alone(model, opt):
    assert_pack_is_bitwise_alone(dense_grid(model, opt=opt), "a", [(0.5, 0), (2.0, 1), (1.0, 2)], steps=4)


def _pair(model: dict, init: dict | None = None, levels=(1.0, 2.0), seed: int = 3):
    """Members 0 and 1 of one pack: the same seed at two probe levels, and a digits batch."""
    g = dense_grid(model, init=init, sigma=levels)
    net = build_for_grid(g, "a", 2, 1, 10, 8)
    for i, level in enumerate(levels):
        init_cell(net, i, level, seed_generator(seed, STREAM_INIT), g, "a")
    x = load_split(g.dataset).x_test[:64]
    return net, x.repeat(1, 2, 1, 1)


def _logits(net, x):
    net.train()
    with torch.no_grad():
        out = net(x)
    return out[:, 0], out[:, 1]


def test_what_sigma_w_does_to_the_dense_functions_at_init():
    """Plain MLP (ReLU, zero biases): positively homogeneous, so the logits scale by 2 per scaled
    kernel, exactly; MLP + LayerNorm with the normalised (bias-free) kernels scaled: the function
    is unchanged up to LayerNorm's eps; ViT with the head scaled: logits x 2 exactly, while the
    position embedding, LayerNorms and every other kernel are bitwise the same."""
    a, b = _logits(*_pair(MLP))
    assert torch.equal(b, 8 * a) and a.abs().max() > 0                      # 2 hidden kernels + head
    for layers in ("first", "body", "head"):
        a, b = _logits(*_pair(MLP, {"probe": "layer_scale", "layers": layers}))
        assert torch.equal(b, 2 * a), layers
    a, b = _logits(*_pair(MLP_LN, {"scale": "normalized_kernels"}))
    torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)
    net, x = _pair(VIT, {"scale": "head"})
    a, b = _logits(net, x)
    assert torch.equal(b, 2 * a)
    assert torch.equal(net.pos[0], net.pos[1]) and float(net.pos[0].detach().std()) < 0.05
    assert scaled_kernels(net, "head") == {"head"}
    for name, mod in net.kernels():
        assert torch.equal(mod.weight[1], mod.weight[0] * (2.0 if name == "head" else 1.0)), name
    for m in net.modules():
        if isinstance(m, PLayerNorm):
            assert torch.equal(m.weight, torch.ones_like(m.weight)) and not m.bias.any()


def test_layer_groups_are_first_body_head_in_every_arch():
    g = dense_grid(VIT)
    vit = build_for_grid(g, "a", 1, 1, 10, 8)
    names = [n for n, _ in vit.kernels()]
    assert names[0] == "embed" and names[-1] == "head" and len(names) == 2 + 4 * VIT["depth"]
    assert scaled_kernels(vit, "body") == set(names[1:-1]) and scaled_kernels(vit, "first") == {"embed"}
    mlp = build_for_grid(dense_grid(MLP), "a", 1, 1, 10, 8)
    assert [n for n, _ in mlp.kernels()] == ["layers.0", "layers.1", "head"]
    assert count_train_flops_per_image(vit, 1, 8) > count_train_flops_per_image(mlp, 1, 8) > 0


def test_grid_options_of_the_dense_arms_are_checked():
    assert dense_grid({"arch": "mlp"}).model.norm == "none"
    assert dense_grid({"arch": "vit_tiny"}).model.norm == "layer"
    for model, needle in [({"arch": "mlp", "norm": "batch"}, "model.norm"),
                          ({"arch": "vit_tiny", "norm": "none"}, "model.norm"),
                          ({"arch": "resnet_tiny", "heads": 2}, "model.heads"),
                          ({"arch": "mlp", "patch": 2}, "model.patch")]:
        with pytest.raises(UserError, match=needle):
            dense_grid(model)
    with pytest.raises(UserError, match="no convolutions"):
        dense_grid(MLP, init={"scale": "convolutions"})


@pytest.mark.slow
def test_pipelines_with_their_own_architectures_collect_into_one_cube():
    """One grid, three architectures: the cube records arch and norm per pipeline, the layer
    axis is the union of their kernels (NaN where a pipeline has no such kernel), and every cell
    trains (Adam on digits: above chance, 0.1, after 2 epochs)."""
    adam = {"optimizer": "adam", "lr": 0.01, "batch_size": 64, "epochs": 2}
    g = dense_grid(MLP, opt={"optimizer": "adam", "lr": 0.01}, sigma=(0.5, 1.0), seeds=(0, 1), epochs=2,
                   extra_pipelines={"vit": {**adam, "model": VIT},
                                    "bn": {**adam, "model": {"arch": "resnet_tiny", "width": 4}}})
    with deterministic("cpu", 1):
        ds = collect_grid(g)
    assert bool(cube.ok_cells(ds).all())
    assert list(ds["arch"].values) == ["mlp", "vit_tiny", "resnet_tiny"]
    assert list(ds["norm"].values) == ["none", "layer", "batch"]
    assert ds.attrs[cube.A_ARCH] == "mlp,vit_tiny,resnet_tiny" and ds.attrs[cube.A_PROBE] == "scale"
    norms = ds[cube.LAYER_NORM].isel({cube.EPOCH: 0})
    mlp_layers = ["layers.0", "layers.1", "head"]
    assert np.isfinite(norms.sel({cube.PIPELINE: "a", cube.LAYER: mlp_layers}).values).all()
    assert np.isnan(norms.sel({cube.PIPELINE: "a", cube.LAYER: "embed"}).values).all()
    acc = ds[cube.TRAIN_ACC].isel({cube.EPOCH: -1})
    assert float(acc.min()) > 0.25, acc.values                     # measured: 0.28 or more


def test_the_arms_preset_crosses_five_architectures_with_the_same_two_optimizers():
    from initmem.grid import load_grid

    g = load_grid("arms")
    assert g.dataset.name == "mnist1d" and g.dataset.n_test == 10000   # the test set that can decide delta = 1 point
    models = {p: g.model_of(p) for p in g.pipelines}
    assert {(m.arch, m.norm) for m in models.values()} == {
        ("resnet1d", "batch"), ("resnet1d", "none"), ("mlp", "none"), ("mlp", "layer"), ("vit_tiny", "layer")}
    for opt in ("sgd", "adamw"):   # one optimizer per suffix, identical settings in every architecture
        specs = {p: s.model_copy(update={"model": None, "eval_every": None}) for p, s in g.pipelines.items()
                 if p.endswith("." + opt)}
        assert len(specs) == 5 and len(set(map(repr, specs.values()))) == 1
    # evaluation is nearly free for the dense nets, so they alone are evaluated every 10 epochs (docs/arms.md)
    assert {p: g.pipelines[p].eval_every for p in g.pipelines} == {
        p: (10 if models[p].arch == "mlp" else None) for p in g.pipelines} and g.eval.every == 20
    assert g.init.probe == "scale"
    for p in g.pipelines:
        assert build_for_grid(g, p, 1, 1, 10, (1, 40)).G == 1

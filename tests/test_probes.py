"""The initialization probes (docs/arms.md): what each changes at init and what it leaves alone
(exact identities), and each runs in a test grid into a valid cube that records it and a report
that names it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.execution.in_process import collect_grid
from initmem.collect.train.data import load_split
from initmem.collect.train.dense import PDense
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import STREAM_INIT, PackTrainer, seed_generator
from initmem.collect.train.nets import init_member
from initmem.collect.train.probes import TRUNC, build_for_grid, init_cell, shaped, trunc_sd
from initmem.cube.levels import PROBE_LABEL, level_names, probe_is_categorical
from initmem.errors import UserError
from initmem.reports.html import build_report
from initmem.stats.curves import memory_curves
from initmem.tests._report_fixture import write_analysis

from .test_nets_dense import MLP, dense_grid

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

SHAPES = ["normal", "uniform", "truncated_normal", "orthogonal"]


def _members(g, levels, seed: int = 4, pipeline: str = "a"):
    net = build_for_grid(g, pipeline, len(levels), 1, 10, 8)
    for i, level in enumerate(levels):
        init_cell(net, i, level, seed_generator(seed, STREAM_INIT), g, pipeline)
    return net


def test_shape_levels_are_one_seed_drawn_through_each_distribution_at_equal_variance():
    g = dense_grid({"arch": "mlp", "width": 96, "depth": 2}, init={"probe": "shape", "shapes": SHAPES},
                   sigma=None)
    assert g.sigma_w == [1.0, 2.0, 3.0, 4.0]
    net = _members(g, g.sigma_w)
    ref = build_for_grid(g, "a", 1, 1, 10, 8)
    init_member(ref, 0, 1.0, seed_generator(4, STREAM_INIT), "all_kernels")
    for name, mod in net.kernels():
        w = mod.weight.detach()
        std = mod.gain / mod.fan_in ** 0.5
        assert torch.equal(w[0], dict(ref.kernels())[name].weight[0]), name     # normal = the scale probe at 1
        order = torch.argsort(w[0].flatten())
        for k in (1, 2):                      # uniform, truncated normal: monotone maps of the same z
            assert torch.equal(torch.argsort(w[k].flatten()), order), (name, k)
        assert float(w[1].abs().max()) <= 3 ** 0.5 * std * (1 + 1e-6)
        assert float(w[2].abs().max()) <= TRUNC / trunc_sd() * std * (1 + 1e-6)
        m = w[3].reshape(w.shape[1], -1).double() / std                 # orthogonal, ||W||_F^2 = rows * cols
        rows, cols = m.shape
        gram = m @ m.t() if rows <= cols else m.t() @ m
        torch.testing.assert_close(gram, max(rows, cols) * torch.eye(min(rows, cols), dtype=torch.float64),
                                   rtol=0, atol=1e-6 * max(rows, cols) * max(rows, cols) ** 0.5)   # float32 weights
        if w[0].numel() >= 4096:              # every level at the scheme's variance
            for k in range(4):
                assert abs(float((w[k] / std).pow(2).mean()) - 1.0) < 0.08, (name, k)
    assert not any(p.abs().sum() for n, p in net.named_parameters() if n.endswith("bias"))


def test_shaped_moments_are_unit_variance():
    z = torch.randn(200_000, generator=torch.Generator().manual_seed(0))
    for shape in SHAPES[:3]:
        assert abs(float(shaped(z, shape).var()) - 1.0) < 0.01, shape
    torch.testing.assert_close(shaped(torch.tensor([0.0]), "uniform"), torch.tensor([0.0]))


@pytest.mark.slow
def test_width_scaling_keeps_the_missing_units_exactly_zero_and_mup_rescales_lr_and_readout():
    """Members of widths 16 and 32 in one pack built at 32: a narrow member's extra units have zero
    weights in and out before and after training steps (SGD and Adam). Under muP the logits are
    multiplied by 1/m and Adam's first step moves a hidden kernel by lr/m, the first layer by lr."""
    levels = [0.5, 1.0]
    for opt in ({"optimizer": "sgd", "lr": 0.1, "momentum": 0.9}, {"optimizer": "adam", "lr": 0.01}):
        for par in ("standard", "mup"):
            g = dense_grid({"arch": "mlp", "width": 32, "depth": 2}, opt=opt, sigma=levels, seeds=(0,),
                           init={"probe": "width_scaling", "parametrization": par})
            split = load_split(g.dataset)
            tr = PackTrainer(g, "a", g.cells("a"), split, "cpu")
            w0 = {n: m.weight.detach().clone() for n, m in tr.net.kernels()}
            order = tr.epoch_order()
            for i in range(3):
                tr.train_step(order[:, 32 * i:32 * (i + 1)])
                if i == 0 and par == "mup" and opt["optimizer"] == "adam":
                    for n, m in tr.net.kernels():
                        step = (m.weight.detach() - w0[n]).abs().amax((1, 2))
                        want = [0.01 / lv if isinstance(m, PDense) and n != "layers.0" else 0.01 for lv in levels]
                        torch.testing.assert_close(step, torch.tensor(want), rtol=1e-3, atol=0), n
            layers = dict(tr.net.kernels())
            assert not layers["layers.0"].weight[0, 16:].any() and not layers["layers.1"].weight[0, 16:].any()
            assert not layers["layers.1"].weight[0, :, 16:].any() and not layers["head"].weight[0, :, 16:].any()
            assert layers["layers.1"].weight[1, 16:, 16:].abs().sum() > 0
            readout = tr.net.head.out_mult
            assert (readout is None) == (par == "standard")
            if readout is not None:
                assert torch.equal(readout, torch.tensor([2.0, 1.0]))
    with pytest.raises(UserError, match="whole number"):
        dense_grid({"arch": "mlp", "width": 10}, sigma=(0.25, 1.0), init={"probe": "width_scaling"})
    with pytest.raises(UserError, match="mlp with norm none"):
        dense_grid({"arch": "vit_tiny"}, init={"probe": "width_scaling"})


def test_probe_options_are_checked():
    for init, needle in [({"probe": "layer_scale"}, "init.layers"),
                         ({"probe": "scale", "layers": "head"}, "init.layers"),
                         ({"probe": "shape", "shapes": ["normal"]}, "init.shapes"),
                         ({"parametrization": "mup"}, "init.parametrization")]:
        with pytest.raises(UserError, match=needle):
            dense_grid(MLP, init=init)
    with pytest.raises(UserError, match="level codes"):
        dense_grid(MLP, init={"probe": "shape", "shapes": ["normal", "uniform"]}, sigma=(1.0, 3.0))


PROBES = {
    "scale": ({"scale": "all_kernels"}, (0.5, 2.0), ["0.5", "2"]),
    "layer_scale": ({"probe": "layer_scale", "layers": "head"}, (0.5, 2.0), ["0.5", "2"]),
    "shape": ({"probe": "shape", "shapes": ["uniform", "orthogonal"]}, (1.0, 2.0), ["uniform", "orthogonal"]),
    "width_scaling": ({"probe": "width_scaling", "parametrization": "mup"}, (0.5, 1.0), ["width x0.5", "width x1"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("probe", list(PROBES))
def test_each_probe_runs_into_a_valid_cube_and_a_report_that_names_it(probe, tmp_path):
    init, levels, names = PROBES[probe]
    g = dense_grid({"arch": "mlp", "width": 16, "depth": 1}, init=init, sigma=levels, seeds=(0, 1), epochs=2,
                   opt={"optimizer": "adam", "lr": 0.02})
    g = g.model_copy(update={"eval": g.eval.model_copy(update={"interp_threshold": 0.3})})
    with deterministic("cpu", 1):
        ds = collect_grid(g)
    assert not [p for p in cube.validate(ds) if p.severity == "error"]
    assert ds.attrs[cube.A_PROBE] == probe and level_names(ds) == names
    assert probe_is_categorical(ds) == (probe == "shape")
    assert bool(cube.ok_cells(ds).all()) and np.isfinite(ds[cube.TAU_INTERP].values).all()
    # Known-answer memory at epoch 0 (before any step), through the analysis' own statistics: all
    # kernels x sigma_w make the total kernel norm exactly proportional to sigma_w, so the radial
    # memory rho(0) is exactly 1; the head x sigma_w multiplies the logits by a positive number, so
    # no prediction changes and the functional memory is exactly 0; shape has no radial memory.
    mc = memory_curves(ds, n_boot=0)
    rho0, func0 = (float(mc[v].isel({cube.EPOCH: 0}).values.item()) for v in ("rho", "func_spread"))
    if probe == "scale":
        assert abs(rho0 - 1.0) < 1e-12, rho0
    elif probe == "layer_scale":
        assert func0 == 0.0
    elif probe == "shape":
        assert np.isnan(mc["rho"].values).all() and "categorical" in str(mc.attrs.get("skipped"))
        assert func0 > 0.0                  # two distributions draw two different functions
    # The report names the probe: in the design paragraph and the metric figure's caption and axis.
    html = build_report(write_analysis(ds, tmp_path), tmp_path / "report.html").read_text()
    assert f"Initialization probe {probe}" in html and f"initialization probe {probe}" in html
    assert all(n in html for n in names)
    assert PROBE_LABEL[probe] in html

"""The branches the engine takes on a GPU, run on CPU: bf16 autocast, torch.compile, CUDA pack
sizing. On a GPU only the device string differs (benchmarks/gpu_checks.sh runs them there)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.execution import pack_plan as packing
from initmem.collect.train.data import load_split
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import PackTrainer, train_pack
from initmem.grid import parse_grid

PIPE = {"a": {"optimizer": "sgd", "lr": 0.05, "momentum": 0.9, "batch_size": 128, "epochs": 1}}


def grid(**engine):
    return parse_grid({"name": "gpu_paths", "dataset": {"name": "digits"},
                       "model": {"arch": "resnet_tiny", "width": 4}, "sigma_w": [0.5, 2.0], "seeds": [0],
                       "pipelines": PIPE, "engine": {"cpu_threads": 1, **engine}})


def test_bf16_autocast_branch_runs_on_cpu():
    g = grid(autocast=True)
    split = load_split(g.dataset)
    with deterministic("cpu", 1):
        tr = PackTrainer(g, "a", g.cells("a"), split, "cpu")
        assert tr.amp
        with torch.no_grad(), tr.autocast():
            logits = tr.forward(split.x_test[:8].repeat(1, tr.G, 1, 1))
        assert logits.dtype == torch.bfloat16
    bf16 = train_pack(g, "a", g.cells("a"))
    fp32 = train_pack(grid(autocast=False), "a", g.cells("a"))
    assert not cube.errors(bf16)
    a, b = bf16[cube.TRAIN_LOSS].values, fp32[cube.TRAIN_LOSS].values
    assert np.isfinite(a).all() and not np.array_equal(a, b)     # bf16 rounding shows ...
    np.testing.assert_allclose(a, b, rtol=0.05)                   # ... and stays small


def test_cuda_pack_sizing_with_a_stubbed_free_memory(monkeypatch):
    g = grid()
    per = packing.member_bytes(g, 128)
    monkeypatch.setattr(packing, "free_memory_bytes", lambda _device: 7 * per)
    assert packing.auto_pack_size(g, "a", "cuda") == 3                      # half of 7 members fits
    monkeypatch.setattr(packing, "free_memory_bytes", lambda _device: 10**6 * per)
    assert packing.auto_pack_size(g, "a", "cuda:1") == packing.MAX_PACK["cuda"]
    assert packing.auto_pack_size(g, "a", "cpu") == packing.MAX_PACK["cpu"]
    monkeypatch.setattr(packing, "free_memory_bytes", lambda _device: 2 * per)
    assert packing.plan_packs(g, device="cuda") == [("a", [(0.5, 0)]), ("a", [(2.0, 0)])]


@pytest.mark.slow
def test_torch_compile_runs_on_cpu_and_matches_eager(monkeypatch: pytest.MonkeyPatch):
    """Two training steps of one member through the compiled model and eagerly.

    What this checks is the engine's side of ``engine.compile``: the packed net goes through
    ``torch.compile``, TorchDynamo captures its forward and AOTAutograd its backward, the training
    step runs through them and gives eager's parameters. The ``aot_eager`` backend does all of that
    and stops short of code generation; inductor's code generation on a CPU writes and compiles C++
    (nearly all of this test's time when it ran here), which is not the code a GPU runs (Triton)
    either, so it adds cost here and nothing about the GPU branch."""
    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: compile_(model, **{**kw, "backend": "aot_eager"}))
    split = load_split(grid().dataset)
    params = {}
    for compiled in (True, False):
        g = grid(compile=compiled)
        with deterministic("cpu", 1):
            tr = PackTrainer(g, "a", [(0.5, 0)], split, "cpu")
            assert (tr.forward is not tr.net) == compiled
            order = tr.epoch_order()
            losses = [tr.train_step(order[:, i * 128:(i + 1) * 128])[1] for i in range(2)]
            assert all(torch.isfinite(x).all() for x in losses)
            params[compiled] = [p.detach().clone() for p in tr.net.parameters()]
    for a, b in zip(params[True], params[False], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)

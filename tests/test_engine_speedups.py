"""The CPU engine's speed-ups change no number: evaluation in sub-batches under inference_mode
(engine.FAST_EVAL) and the clock meter's per-layer scaling. Every test compares bits: a cube, an
evaluation or a meter computed with the speed-up against the same computed without it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from initmem.collect.train import engine
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import PackTrainer, same_bits, train_pack
from initmem.collect.train.measure import StepMeter
from initmem.grid import parse_grid

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@pytest.fixture
def fast_eval():
    """Restore engine.FAST_EVAL after a test that switches it."""
    before = engine.FAST_EVAL
    yield
    engine.FAST_EVAL = before


def grid(tmp_path_factory, *, arch: str = "resnet1d", norm: str = "batch", width: int = 8, epochs: int = 2,
         eval_batch_size: int = 160, channels_last: bool | None = None, autocast: bool | None = None,
         every: int = 1, **model: object) -> object:
    """A small MNIST-1D grid (digits for the 2-D nets): 256 training signals, a test split of 100
    (not a multiple of the training batch, so the last sub-batch is short), evaluation batches of
    ``eval_batch_size`` model-images."""
    if arch in ("resnet_tiny",):
        dataset = {"name": "digits"}
    else:
        root = tmp_path_factory.getbasetemp() / "mnist1d-cache"   # one cache for the whole session
        dataset = {"name": "mnist1d", "n_train": 256, "n_val": 64, "n_test": 100, "seed": 0, "root": str(root)}
    return parse_grid({
        "name": "speedups", "dataset": dataset, "model": {"arch": arch, "width": width, "norm": norm, **model},
        "sigma_w": [0.5, 2.0], "seeds": [0, 1],
        "pipelines": {"a": {"optimizer": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0.001,
                            "batch_size": 32, "epochs": epochs}},
        "eval": {"every": every},
        "engine": {"cpu_threads": 1, "eval_batch_size": eval_batch_size, "channels_last": channels_last,
                   "autocast": autocast}})


def digest_vars(ds: object) -> dict[str, bytes]:
    """Every variable of a cube but the wall time, as raw bytes (equal bytes: equal bits)."""
    return {name: np.ascontiguousarray(ds[name].values).tobytes()  # type: ignore[index]
            for name in sorted(ds.data_vars) if name != "wall_seconds"}  # type: ignore[attr-defined]


def trained(g: object, steps: int = 6) -> PackTrainer:
    """A pack of the grid's four cells after a few steps (BatchNorm running statistics moved)."""
    tr = PackTrainer(g, "a", g.cells("a"), load_split(g.dataset), "cpu")
    order, b = tr.epoch_order(), tr.spec.batch_size
    with deterministic("cpu", 1):
        for i in range(steps):
            tr.train_step(order[:, i * b:(i + 1) * b])
    return tr


def evaluation(tr: PackTrainer, chunk: int | None) -> list[np.ndarray]:
    """Loss, accuracy and predictions of every split with evaluation sub-batches of ``chunk`` images."""
    tr.eval_chunk, tr._eval_chunk_checked = chunk, False
    s = tr.split
    out = []
    with deterministic("cpu", 1):
        for x, y in ((s.x_train, s.y_train), (s.x_val, s.y_val), (s.x_test, s.y_test)):
            loss, acc, pred = tr.evaluate(x, y, want_pred=True)
            out += [loss, acc, pred]
    return out


# -- evaluation in sub-batches ----------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    {},                                               # the quick preset's net, narrower
    {"norm": "none"},                                 # norm-free biases and SkipInit gains
    {"channels_last": True},                          # the other activation layout
    {"arch": "resnet_tiny", "width": 4},              # 2-D convolutions on 8 x 8 digits
])
def test_a_cube_is_bitwise_the_same_with_and_without_fast_evaluation(tmp_path_factory, monkeypatch, fast_eval,
                                                                     case):
    g = grid(tmp_path_factory, **case)
    calls = []
    sub_batched = PackTrainer._eval_features
    monkeypatch.setattr(PackTrainer, "_eval_features",
                        lambda self, xb, chunk: calls.append(chunk) or sub_batched(self, xb, chunk))
    engine.FAST_EVAL = False
    before = digest_vars(train_pack(g, "a", g.cells("a")))
    assert not calls
    engine.FAST_EVAL = True
    after = digest_vars(train_pack(g, "a", g.cells("a")))
    # sub-batched at the training batch size, and still after the first call: its check found equal bits
    assert len(calls) > 1 and set(calls) == {32}
    assert before.keys() == after.keys()
    assert [k for k in before if before[k] != after[k]] == []


@pytest.mark.parametrize("chunk", [1, 7, 32, 33, 1000])
def test_every_sub_batch_size_gives_the_whole_batch_bits(tmp_path_factory, chunk):
    """Sub-batches of any size, a remainder or none, give the very bits of whole evaluation batches."""
    tr = trained(grid(tmp_path_factory))
    whole = evaluation(tr, None)
    parts = evaluation(tr, chunk)
    assert tr.eval_chunk == chunk            # the first comparison passed: no fallback
    for a, b in zip(whole, parts, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("arch,width", [("resnet20", 4), ("resnet9", 4)])
def test_the_cifar_nets_give_the_whole_batch_bits_in_sub_batches(tmp_path_factory, arch, width):
    """The 2-D nets on 3 x 32 x 32 images (an RGB stem in shadow groups, max pooling), on random
    images: the same evaluation bits in sub-batches as in whole batches."""
    g = grid(tmp_path_factory, arch="resnet_tiny", eval_batch_size=4 * 40)
    d = g.to_dict()
    d["model"] = {"arch": arch, "width": width, "norm": "batch"}
    d["dataset"] = {"name": "cifar10", "root": str(tmp_path_factory.getbasetemp())}   # never read: own split
    g = parse_grid(d)
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(100, 3, 32, 32, generator=gen), torch.randint(0, 10, (100,), generator=gen)
    split = Split(x, y, x[:64], y[:64], x[:36], y[:36], 10, "random")
    tr = PackTrainer(g, "a", g.cells("a"), split, "cpu")
    with deterministic("cpu", 1):
        for _ in range(2):
            tr.train_step(tr.epoch_order()[:, :32])
    whole = evaluation(tr, None)
    parts = evaluation(tr, 7)
    assert tr.eval_chunk == 7
    for a, b in zip(whole, parts, strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_failed_first_check_falls_back_to_whole_batches(tmp_path_factory, monkeypatch):
    """Should sub-batched features differ in one bit from the whole-batch ones, the pack switches
    sub-batches off and its numbers are those of whole batches."""
    tr = trained(grid(tmp_path_factory))
    whole = evaluation(tr, None)
    features = type(tr.net).features
    chunk = 12   # no evaluation batch (40 images, or the splits' remainders 16, 24, 20) has 12 images

    def skewed(net: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        out = features(net, x)
        return torch.nextafter(out, out + 1) if x.shape[0] == chunk else out   # one ulp off in a sub-batch

    monkeypatch.setattr(type(tr.net), "features", skewed)
    got = evaluation(tr, chunk)
    assert tr.eval_chunk is None
    for a, b in zip(whole, got, strict=True):
        assert a.tobytes() == b.tobytes()


def test_sub_batches_only_where_the_features_are_per_image_fp32_cpu(tmp_path_factory, fast_eval):
    assert trained(grid(tmp_path_factory), 0).eval_chunk == 32
    assert trained(grid(tmp_path_factory, arch="mlp", norm="none", width=16), 0).eval_chunk is None
    assert trained(grid(tmp_path_factory, arch="vit_tiny", norm="layer", width=16, patch=4), 0).eval_chunk is None
    assert trained(grid(tmp_path_factory, autocast=True), 0).eval_chunk is None   # bf16 kernels
    engine.FAST_EVAL = False
    assert trained(grid(tmp_path_factory), 0).eval_chunk is None


def test_same_bits_compares_bits_not_values():
    nan = torch.tensor([float("nan"), 1.0])
    assert same_bits(nan, nan.clone())
    assert not torch.equal(nan, nan.clone())                   # what torch.equal would have said
    assert not same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert not same_bits(torch.zeros(2), torch.zeros(2, 1))
    assert same_bits(torch.arange(6.0).view(2, 3).t(), torch.arange(6.0).view(2, 3).t().contiguous())
    other_nan = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)
    assert not same_bits(torch.tensor([float("nan")]), other_nan)


# -- the clock meter --------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes,G", [([80, 768, 768, 256, 160], 20), ([3], 1), ([17, 1, 33], 5)])
def test_per_layer_scaling_is_bitwise_the_gathered_product(sizes, G):
    gen = torch.Generator().manual_seed(len(sizes) * 100 + G)
    kernels = [torch.randn(G, n, generator=gen) * 10.0 ** torch.randint(-3, 4, (1,), generator=gen).item()
               for n in sizes]
    meter = StepMeter(kernels, [True] * len(sizes))
    flat = torch.randn(G, sum(sizes), generator=gen, dtype=torch.float64)
    factor = torch.rand(G, len(sizes), generator=gen, dtype=torch.float64) + 0.5
    column_layer = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    want = flat * factor.index_select(1, column_layer)
    assert same_bits(meter._scale_layers(flat, factor), want)


def test_the_meter_tracks_unit_vectors_bitwise_as_the_gathered_formula(tmp_path_factory):
    """After real optimizer steps the meter's unit vectors are the flat kernels times each layer's
    reciprocal norm gathered to every column, bit for bit."""
    tr = trained(grid(tmp_path_factory), steps=3)
    m = tr.meter
    column_layer = torch.repeat_interleave(torch.arange(len(m.sizes)), torch.tensor(m.sizes))
    want = m.prev * (1.0 / m.prev_norm).index_select(1, column_layer)
    assert same_bits(m.prev_unit, want)
    assert torch.equal(m.prev, m._flat())

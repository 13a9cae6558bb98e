"""The sigma_w probe on any nn.Module (initmem.apply_probe): the engine's initial kernels bitwise on the quick
preset's resnet1d (its packed net and a plain-torch twin), Kaiming x sigma_w on a torchvision ResNet-18 within
sampling error, every probe on a transformer and a LayerNorm MLP, and one-line errors."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.custom.probe import apply_probe, kernels
from initmem.collect.train.data import load_split
from initmem.collect.train.engine import PackTrainer
from initmem.collect.train.nets import build_net
from initmem.errors import UserError

from ._quick_small import quick_small

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


class Block1d(nn.Module):
    """resnet1d's basic block in plain torch (collect/train/resnets.py BasicBlock, module order kept)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv1d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm1d(cout)
        self.conv2 = nn.Conv1d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm1d(cout)
        self.shortcut = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv1d(cin, cout, 1, stride, bias=False), nn.BatchNorm1d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class ResNet1dTwin(nn.Module):
    """The quick preset's resnet1d (width 16, depth 3) as a user would write it."""

    def __init__(self, in_ch: int = 1, n_classes: int = 10, width: int = 16, depth: int = 3):
        super().__init__()
        self.stem = nn.Conv1d(in_ch, width, 5, 1, 2, bias=False)
        self.stem_bn = nn.BatchNorm1d(width)
        self.blocks = nn.Sequential(*(Block1d(width, width, 1 if i == 0 else 2) for i in range(depth)))
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(F.relu(self.stem_bn(self.stem(x)))).mean(-1))


@pytest.fixture(scope="module")
def engine_pack(tmp_path_factory):
    """The engine's pack of the quick preset's network: cells (0.25, seed 0), (4, seed 3), (1, seed 0)."""
    grid = quick_small(tmp_path_factory.getbasetemp() / "mnist1d-cache", seeds=(0, 3))
    split = load_split(grid.dataset)
    cells = [(0.25, 0), (4.0, 3), (1.0, 0)]
    return grid, split, cells, PackTrainer(grid, "sgd_low_lr", cells, split, "cpu")


def test_the_probe_draws_the_engines_kernels_bitwise_on_the_quick_network(engine_pack):
    grid, split, cells, tr = engine_pack
    engine = list(tr.net.kernels())
    for g, (sigma, seed) in enumerate(cells):
        packed = build_net("resnet1d", 1, split.in_channels, split.n_classes, 16, "batch", size=split.image_size,
                           depth=3)
        rec = apply_probe(packed, sigma, init_seed=seed)
        twin = ResNet1dTwin(split.in_channels, split.n_classes)
        twin_rec = apply_probe(twin, sigma, init_seed=seed)
        assert [k.name for k in twin_rec.kernels] == [n for n, _ in engine] == [k.name for k in rec.kernels]
        for (name, mod), mine, plain in zip(engine, rec.kernels, twin_rec.kernels, strict=True):
            assert torch.equal(mine.value(), mod.weight[g]), (name, g)
            assert torch.equal(plain.value(), mod.weight[g].reshape(plain.weight.shape)), (name, g)
        # the tracing finds the engine's normalized flags: every conv (BatchNorm after it), not the head
        assert [k.normalized for k in twin_rec.kernels] == [bool(m.normalized) for _, m in engine]


def test_sigma_w_multiplies_exactly_and_targets_pick_their_kernels():
    base = apply_probe(m1 := ResNet1dTwin(), 1.0, init_seed=7)
    for target, expect in [("all_kernels", None), ("head", {"head"}), ("convolutions", None),
                           ("normalized_kernels", None)]:
        m = ResNet1dTwin()
        rec = apply_probe(m, 2.0, init_seed=7, target=target)
        names = [k.name for k in base.kernels]
        want = set(names) if target == "all_kernels" else expect if expect else set(names) - {"head"}
        assert set(rec.acted_on) == want
        for a, b in zip(base.kernels, rec.kernels, strict=True):
            assert torch.equal(b.value(), a.value() * (2.0 if a.name in want else 1.0)), (target, a.name)
    assert m1.head.bias.abs().sum() == 0       # biases zeroed, as the engine's


def test_layer_scale_and_shape_probes():
    names = [k.name for k in kernels(ResNet1dTwin())]
    for group, want in [("first", {names[0]}), ("body", set(names[1:-1])), ("head", {names[-1]})]:
        rec = apply_probe(ResNet1dTwin(), 3.0, init_seed=1, probe="layer_scale", target=group)
        assert set(rec.acted_on) == want
    one = apply_probe(ResNet1dTwin(), 1, init_seed=2, probe="shape", shapes=["normal", "orthogonal"])
    two = apply_probe(ResNet1dTwin(), 2, init_seed=2, probe="shape", shapes=["normal", "orthogonal"])
    w = two.kernels[0].value().reshape(16, -1)
    assert not torch.equal(w, one.kernels[0].value().reshape(16, -1))
    # orthogonal at the Kaiming variance: the rows (out <= fan_in) are orthogonal, ||W||_F^2 = out * fan_in * var
    k = two.kernels[1]
    m = k.value().reshape(k.value().shape[0], -1).double()
    gram = m @ m.t()
    assert torch.allclose(gram, torch.diag(torch.diagonal(gram)), atol=1e-5)
    with pytest.raises(UserError, match="level code"):
        apply_probe(ResNet1dTwin(), 3, init_seed=2, probe="shape", shapes=["normal", "orthogonal"])


def test_torchvision_resnet18_kernel_sds_are_sigma_w_times_kaiming():
    """Per layer, the SD of n draws has a relative standard error of 1/sqrt(2(n - 1)); 5 of them is the tolerance
    (a false alarm in one of 21 layers has probability below 1e-5)."""
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18(weights=None)
    sigma = 2.5
    rec = apply_probe(model, sigma, init_seed=11)
    assert len(rec.kernels) == 21 and rec.kernels[-1].name == "fc"
    for k in rec.kernels:
        w = k.value().double()
        n = w.numel()
        gain = 1.0 if k.name == "fc" else math.sqrt(2.0)
        want = sigma * gain / math.sqrt(w[0].numel())
        sd = float(w.std())
        assert abs(sd / want - 1) < 5 / math.sqrt(2 * (n - 1)), (k.name, sd, want)
        assert abs(float(w.mean())) < 5 * want / math.sqrt(n), k.name
    assert [k.normalized for k in rec.kernels].count(True) == 20   # every conv feeds a BatchNorm, fc does not
    assert float(model.fc.bias.abs().sum()) == 0.0


class TransformerClassifier(nn.Module):
    def __init__(self, d: int = 32, classes: int = 5):
        super().__init__()
        self.embed = nn.Embedding(50, d)
        layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.encoder(self.embed(tokens))).mean(1))


def test_a_transformer_encoder_classifier_is_probed():
    model = TransformerClassifier()
    embed = model.embed.weight.detach().clone()
    ln = model.norm.weight.detach().clone()
    rec = apply_probe(model, 0.5, init_seed=3)
    names = [k.name for k in rec.kernels]
    assert names == [f"encoder.layers.{i}.{p}" for i in range(2)
                     for p in ("self_attn.in_proj_weight", "self_attn.out_proj", "linear1", "linear2")] + ["head"]
    qkv = model.encoder.layers[0].self_attn.in_proj_weight
    assert abs(float(qkv.std()) / (0.5 * math.sqrt(2 / 32)) - 1) < 0.1
    assert torch.equal(model.embed.weight, embed) and torch.equal(model.norm.weight, ln)  # not kernels
    assert float(model.encoder.layers[0].self_attn.in_proj_bias.abs().sum()) == 0.0
    # the same seed at another sigma_w: the same directions
    other = TransformerClassifier()
    apply_probe(other, 2.0, init_seed=3)
    assert torch.equal(other.encoder.layers[1].linear1.weight, model.encoder.layers[1].linear1.weight * 4)
    model(torch.randint(0, 50, (2, 7)))


def test_a_layernorm_mlp_is_probed_and_its_normalized_kernels_found():
    model = nn.Sequential(nn.Flatten(), nn.Linear(40, 64, bias=False), nn.LayerNorm(64), nn.ReLU(),
                          nn.Linear(64, 64, bias=False), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 10))
    rec = apply_probe(model, 4.0, init_seed=0, target="normalized_kernels")
    assert rec.acted_on == ["1", "4"]
    assert [k.normalized for k in rec.kernels] == [True, True, False]


def test_a_model_without_kernels_is_refused_by_name():
    class OnlyNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(4)
            self.embed = nn.Embedding(3, 4)

    with pytest.raises(UserError, match="OnlyNorm has no kernel"):
        apply_probe(OnlyNorm(), 1.0, init_seed=0)
    with pytest.raises(UserError, match="no convolution"):
        apply_probe(nn.Sequential(nn.Linear(3, 3)), 1.0, init_seed=0, target="convolutions")
    with pytest.raises(UserError, match="probe: 'width_scaling'"):
        apply_probe(ResNet1dTwin(), 1.0, init_seed=0, probe="width_scaling")
    with pytest.raises(UserError, match="normalized: ResNet1dTwin has no kernel 'nope'"):
        apply_probe(ResNet1dTwin(), 1.0, init_seed=0, normalized=["nope"])

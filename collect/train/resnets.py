"""Packed ResNets: ``resnet_tiny`` (8x8 digits), ``resnet9`` (DAWNBench / Myrtle layout) and the CIFAR
``resnet(6n+2)`` family (resnet20/32/56) with 1x1-conv projection shortcuts, on the packed layers of
collect/train/packed.py.

``norm: none`` replaces each BatchNorm with a learnable per-channel bias and multiplies every
residual branch by a learnable scalar that starts at 0 (SkipInit, De & Smith 2020), so the
net trains without normalisation: at init each residual block is its skip path. Without
BatchNorm no kernel is scale-invariant, so sigma_w is no longer a pure effective-learning-rate
knob (see docs/collect.md, *What each arm separates*).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.normfree import PBias, SkipGain
from initmem.collect.train.packed import PackedNet, PBatchNorm, PConv, PLinear, global_mean_pool


def norm_layer(G: int, C: int, norm: str) -> nn.Module:
    """Packed BatchNorm, or the norm-free per-channel bias."""
    return PBatchNorm(G, C) if norm == "batch" else PBias(G, C)


class BasicBlock(nn.Module):
    """conv-norm-ReLU-conv-norm (x SkipInit gain when norm-free) + shortcut, then ReLU; ``conv`` is the packed
    convolution (``PConv``, or ``PConv1d`` for the 1-D ResNet)."""

    def __init__(self, G: int, cin: int, cout: int, stride: int, norm: str, *, conv: type[PConv] = PConv,
                 kernel: int = 3):
        super().__init__()
        bn = norm == "batch"
        self.conv1 = conv(G, cin, cout, kernel, stride, normalized=bn)
        self.bn1 = norm_layer(G, cout, norm)
        self.conv2 = conv(G, cout, cout, kernel, 1, normalized=bn)
        self.bn2 = norm_layer(G, cout, norm)
        self.skip_gain = SkipGain(G, norm)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(conv(G, cin, cout, 1, stride, normalized=bn), norm_layer(G, cout, norm))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.skip_gain(self.bn2(self.conv2(out)))
        sc = x if self.shortcut is None else self.shortcut(x)
        return F.relu(out + sc, inplace=True)


class ResNetTiny(PackedNet):
    """For 8x8 inputs: stem, one block at width w (8x8), one block at 2w (4x4), pool, head."""

    per_image_features = True  # convolutions, eval BatchNorm, pooling: per image

    def __init__(self, G: int, in_ch: int, n_classes: int, width: int = 16, norm: str = "batch"):
        super().__init__()
        self.G = G
        bn = norm == "batch"
        self.stem = PConv(G, in_ch, width, 3, 1, normalized=bn)
        self.stem_bn = norm_layer(G, width, norm)
        self.block1 = BasicBlock(G, width, width, 1, norm)
        self.block2 = BasicBlock(G, width, 2 * width, 2, norm)
        self.head = PLinear(G, 2 * width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_bn(self.stem(x)), inplace=True)
        return global_mean_pool(self.block2(self.block1(x)))


class ResNetCifar(PackedNet):
    """He et al. CIFAR ResNet with depth 6n+2: three stages of n basic blocks (w, 2w, 4w)."""

    per_image_features = True  # convolutions, eval BatchNorm, pooling: per image

    def __init__(self, G: int, in_ch: int, n_classes: int, n: int, width: int = 16, norm: str = "batch"):
        super().__init__()
        self.G = G
        bn = norm == "batch"
        self.stem = PConv(G, in_ch, width, 3, 1, normalized=bn)
        self.stem_bn = norm_layer(G, width, norm)
        blocks: list[nn.Module] = []
        cin = width
        for stage, cout in enumerate((width, 2 * width, 4 * width)):
            for i in range(n):
                blocks.append(BasicBlock(G, cin, cout, 2 if (stage > 0 and i == 0) else 1, norm))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = PLinear(G, cin, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_bn(self.stem(x)), inplace=True)
        return global_mean_pool(self.blocks(x))


class ConvBN(nn.Module):
    def __init__(self, G: int, cin: int, cout: int, norm: str, pool: bool = False):
        super().__init__()
        self.conv = PConv(G, cin, cout, 3, 1, normalized=norm == "batch")
        self.bn = norm_layer(G, cout, norm)
        self.pool = pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.conv(x)), inplace=True)
        return F.max_pool2d(x, 2) if self.pool else x


class Residual(nn.Module):
    def __init__(self, G: int, c: int, norm: str):
        super().__init__()
        self.a = ConvBN(G, c, c, norm)
        self.b = ConvBN(G, c, c, norm)
        self.skip_gain = SkipGain(G, norm)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.skip_gain(self.b(self.a(x)))


class ResNet9(PackedNet):
    """DAWNBench ResNet-9 (Myrtle.ai): prep, layer1+res, layer2, layer3+res, max-pool, 0.125*head."""

    per_image_features = True  # convolutions, eval BatchNorm, pooling: per image

    def __init__(self, G: int, in_ch: int, n_classes: int, width: int = 64, norm: str = "batch"):
        super().__init__()
        self.G = G
        w = width
        self.prep = ConvBN(G, in_ch, w, norm)
        self.layer1 = ConvBN(G, w, 2 * w, norm, pool=True)
        self.res1 = Residual(G, 2 * w, norm)
        self.layer2 = ConvBN(G, 2 * w, 4 * w, norm, pool=True)
        self.layer3 = ConvBN(G, 4 * w, 8 * w, norm, pool=True)
        self.res3 = Residual(G, 8 * w, norm)
        self.head = PLinear(G, 8 * w, n_classes, bias=False, scale=0.125)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.res1(self.layer1(self.prep(x)))
        x = self.res3(self.layer3(self.layer2(x)))
        return torch.amax(x, dim=(2, 3))

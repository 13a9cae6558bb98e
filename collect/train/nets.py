"""Packed ResNets: G independent networks evaluated as one model (Packed-Ensembles layout).

Activations of a pack are laid out ``[B, G*C, H, W]``: member g owns channels
``g*C:(g+1)*C`` and sees only its own images. Convolutions are grouped convolutions with
``groups=G`` (so no weight touches another member's channels), BatchNorm over ``G*C``
channels is exactly per-member BatchNorm (statistics are per channel), pooling and ReLU act per
channel, and the head is a batched matmul. Every parameter is stored stacked ``[G, ...]`` so an
element-wise optimizer on the stacked tensors is exactly G independent optimizers.

Architectures: ``resnet_tiny`` (8x8 digits), ``resnet9`` (DAWNBench / Myrtle layout) and the
CIFAR ``resnet(6n+2)`` family (resnet20/32/56) with 1x1-conv projection shortcuts; the dense
arms ``mlp`` and ``vit_tiny`` live in collect/train/mlp.py and collect/train/vit.py (member-major layout,
collect/train/dense.py) and share the kernel interface below (``kernels``, ``gain``, ``fan_in``).

``norm: none`` replaces each BatchNorm with a learnable per-channel bias and multiplies every
residual branch by a learnable scalar that starts at 0 (SkipInit, De & Smith 2020), so the
net trains without normalisation: at init each residual block is its skip path. Without
BatchNorm no kernel is scale-invariant, so sigma_w is no longer a pure effective-learning-rate
knob (see docs/collect.md, *What each arm separates*).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.normfree import PBias, SkipGain
from initmem.grid import DEFAULT_WIDTH

BN_MOMENTUM = 0.1
BN_EPS = 1e-5
# On CPU a packed convolution runs with at least 2 groups and this many input channels in all
# (zero shadow groups make up the rest): see PConv._with_shadows.
SHADOW_MIN_CHANNELS = 8


class PConv(nn.Module):
    """G stacked conv kernels ``[G, Cout, Cin, k, k]`` applied as one grouped convolution."""

    def __init__(self, G: int, cin: int, cout: int, k: int = 3, stride: int = 1, normalized: bool = True):
        super().__init__()
        self.G, self.cin, self.cout, self.k, self.stride, self.pad = G, cin, cout, k, stride, k // 2
        self.normalized = normalized  # followed by BatchNorm (scale-invariant kernel)
        self.channels_last = False    # activation layout; set for the whole net by use_channels_last
        self.weight = nn.Parameter(torch.empty(G, cout, cin, k, k))

    @property
    def fan_in(self) -> int:
        return self.cin * self.k * self.k

    gain = math.sqrt(2.0)  # Kaiming normal for ReLU networks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.reshape(self.G * self.cout, self.cin, self.k, self.k)
        if x.device.type == "cpu":
            groups = max(self.G, 2, -(-SHADOW_MIN_CHANNELS // self.cin))
            if groups > self.G:
                return self._with_shadows(x, w, groups)
        return F.conv2d(x, w, None, self.stride, self.pad, 1, self.G)

    def _with_shadows(self, x: torch.Tensor, w: torch.Tensor, groups: int) -> torch.Tensor:
        """This convolution with all-zero shadow groups appended, so that it runs as ``groups``
        groups.

        oneDNN computes each group of a grouped convolution the same way whatever the number of
        groups, with two exceptions that it handles with other kernels, which round differently:
        one group (a dense convolution) and too few input channels in all (a 3-channel RGB stem
        in 2 groups, seen at 32x32). Shadows lift a lone model and small packs out of both, so
        a cell's numbers are bitwise the same in a pack of any size. Their outputs are dropped
        and their gradients are exact zeros, so they change nothing else. They cost a pack of one
        2x or more in convolution time, on CPU only: GPU kernels (autotuned, bf16) promise no
        bitwise reproducibility anyway.
        """
        # The layout is the engine's choice, not read off x: a 1-channel input fits both layouts.
        fmt = torch.channels_last if self.channels_last else torch.contiguous_format
        pad = groups - self.G
        x2 = torch.cat([x, x.new_zeros(x.shape[0], pad * self.cin, *x.shape[2:])], 1)
        w2 = torch.cat([w, w.new_zeros(pad * self.cout, *w.shape[1:])], 0)
        y = F.conv2d(x2.contiguous(memory_format=fmt), w2, None, self.stride, self.pad, 1, groups)
        # A dense copy of the kept part: later ops take other code paths on a strided view.
        return y[:, :self.G * self.cout].contiguous(memory_format=fmt)

    def macs_per_image(self, h: int, w: int) -> tuple[int, int, int]:
        ho, wo = (h + 2 * self.pad - self.k) // self.stride + 1, (w + 2 * self.pad - self.k) // self.stride + 1
        return self.cout * self.cin * self.k * self.k * ho * wo, ho, wo


class PBatchNorm(nn.Module):
    """Per-member BatchNorm: one BatchNorm over G*C channels, parameters stored ``[G, C]``."""

    def __init__(self, G: int, C: int):
        super().__init__()
        self.G, self.C = G, C
        self.weight = nn.Parameter(torch.ones(G, C))
        self.bias = nn.Parameter(torch.zeros(G, C))
        self.register_buffer("running_mean", torch.zeros(G, C))
        self.register_buffer("running_var", torch.ones(G, C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The running-stat buffers are updated in place through their flat views.
        return F.batch_norm(x, self.running_mean.view(-1), self.running_var.view(-1),
                            self.weight.reshape(-1), self.bias.reshape(-1), self.training, BN_MOMENTUM, BN_EPS)


class PLinear(nn.Module):
    """G stacked linear heads ``[G, out, in]``: input ``[B, G*in]`` -> logits ``[B, G, out]``."""

    gain = 1.0  # the head is followed by softmax, not ReLU

    def __init__(self, G: int, cin: int, cout: int, bias: bool = True, scale: float = 1.0):
        super().__init__()
        self.G, self.cin, self.cout, self.scale = G, cin, cout, scale
        self.normalized = False
        self.weight = nn.Parameter(torch.empty(G, cout, cin))
        self.bias = nn.Parameter(torch.zeros(G, cout)) if bias else None
        # Per-member output multipliers [G] (muP's 1/width readout, collect/train/probes.py); None: none.
        self.out_mult: torch.Tensor | None = None

    @property
    def fan_in(self) -> int:
        return self.cin

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One batched matmul, laid out so that every member's GEMM is the same whatever G.

        MKL's result depends on the shape and the memory alignment of each member's matrices,
        and autograd would hand the weight-gradient GEMM member blocks at G-dependent offsets.
        So x gets a column of ones (the bias is one more weight row, and its gradient comes out
        of the same GEMM rather than from a sum over B in a G-dependent order), both inner
        sizes are zero-padded to multiples of 16 floats (64-byte aligned member blocks), and
        the product is sliced back. Packs of any size then round identically; the padding
        costs nothing that matters in a layer this small.
        """
        B, G, cin, cout = x.shape[0], self.G, self.cin, self.cout
        k_pad, n_pad = _round16(cin + 1), _round16(cout)
        xg = torch.cat([x.view(B, G, cin).transpose(0, 1), x.new_ones(G, B, 1),
                        x.new_zeros(G, B, k_pad - cin - 1)], 2)                            # G B k_pad
        bias = self.bias if self.bias is not None else self.weight.new_zeros(G, cout)
        w = torch.cat([self.weight.transpose(1, 2), bias[:, None, :],
                       self.weight.new_zeros(G, k_pad - cin - 1, cout)], 1)              # G k_pad out
        z = torch.bmm(xg, F.pad(w, (0, n_pad - cout)))[:, :, :cout].transpose(0, 1)    # B G out
        if self.out_mult is not None:
            z = z * self.out_mult[None, :, None]
        return z * self.scale if self.scale != 1.0 else z


def use_channels_last(net: nn.Module, flag: bool) -> None:
    """Tell every packed convolution which activation layout the engine feeds it."""
    for m in net.modules():
        if isinstance(m, PConv):
            m.channels_last = flag


def _round16(n: int) -> int:
    return -(-n // 16) * 16


def _norm(G: int, C: int, norm: str) -> nn.Module:
    return PBatchNorm(G, C) if norm == "batch" else PBias(G, C)


class BasicBlock(nn.Module):
    def __init__(self, G: int, cin: int, cout: int, stride: int, norm: str):
        super().__init__()
        bn = norm == "batch"
        self.conv1 = PConv(G, cin, cout, 3, stride, normalized=bn)
        self.bn1 = _norm(G, cout, norm)
        self.conv2 = PConv(G, cout, cout, 3, 1, normalized=bn)
        self.bn2 = _norm(G, cout, norm)
        self.skip_gain = SkipGain(G, norm)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(PConv(G, cin, cout, 1, stride, normalized=bn), _norm(G, cout, norm))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.skip_gain(self.bn2(self.conv2(out)))
        sc = x if self.shortcut is None else self.shortcut(x)
        return F.relu(out + sc, inplace=True)


def global_mean_pool(x: torch.Tensor) -> torch.Tensor:
    """Mean over the spatial dims, summed in the same order for every member.

    On a channels_last tensor torch's reduction order depends on the channel count, so a member
    would pool differently in packs of different sizes; the NCHW reduction does not, and the
    copy is small at the end of the network.
    """
    return x.contiguous().mean((2, 3))


class PackedNet(nn.Module):
    """Base: subclasses define ``features`` (-> ``[B, G*C]``) and ``head``."""

    G: int

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))

    def kernels(self) -> Iterator[tuple[str, nn.Module]]:
        """Every trainable kernel (conv and head weights), in a fixed order with stable names."""
        for name, mod in self.named_modules():
            if isinstance(mod, PConv | PLinear):
                yield name, mod


class ResNetTiny(PackedNet):
    """For 8x8 inputs: stem, one block at width w (8x8), one block at 2w (4x4), pool, head."""

    def __init__(self, G: int, in_ch: int, n_classes: int, width: int = 16, norm: str = "batch"):
        super().__init__()
        self.G = G
        bn = norm == "batch"
        self.stem = PConv(G, in_ch, width, 3, 1, normalized=bn)
        self.stem_bn = _norm(G, width, norm)
        self.block1 = BasicBlock(G, width, width, 1, norm)
        self.block2 = BasicBlock(G, width, 2 * width, 2, norm)
        self.head = PLinear(G, 2 * width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_bn(self.stem(x)), inplace=True)
        return global_mean_pool(self.block2(self.block1(x)))


class ResNetCifar(PackedNet):
    """He et al. CIFAR ResNet with depth 6n+2: three stages of n basic blocks (w, 2w, 4w)."""

    def __init__(self, G: int, in_ch: int, n_classes: int, n: int, width: int = 16, norm: str = "batch"):
        super().__init__()
        self.G = G
        bn = norm == "batch"
        self.stem = PConv(G, in_ch, width, 3, 1, normalized=bn)
        self.stem_bn = _norm(G, width, norm)
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
        self.bn = _norm(G, cout, norm)
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




def build_net(arch: str, G: int, in_ch: int, n_classes: int, width: int | None, norm: str, *,
              size: int = 8, depth: int | None = None, heads: int | None = None,
              patch: int | None = None) -> PackedNet:
    """The packed net of ``model.arch`` (``size``: the square image side, for mlp and vit_tiny)."""
    if arch == "mlp":
        from initmem.collect.train.mlp import DEFAULT_DEPTH, MLP
        return MLP(G, in_ch * size * size, n_classes, width or DEFAULT_WIDTH[arch], depth or DEFAULT_DEPTH, norm)
    if arch == "vit_tiny":
        from initmem.collect.train import vit
        return vit.ViTTiny(G, in_ch, n_classes, size, width or DEFAULT_WIDTH[arch], depth or vit.DEFAULT_DEPTH,
                           heads or vit.DEFAULT_HEADS, patch or vit.DEFAULT_PATCH)
    if arch == "resnet_tiny":
        return ResNetTiny(G, in_ch, n_classes, width or 16, norm)
    if arch == "resnet9":
        return ResNet9(G, in_ch, n_classes, width or 64, norm)
    m = re.fullmatch(r"resnet(\d+)", arch)
    if m and (int(m.group(1)) - 2) % 6 == 0 and int(m.group(1)) >= 8:
        return ResNetCifar(G, in_ch, n_classes, (int(m.group(1)) - 2) // 6, width or 16, norm)
    raise ValueError(f"unknown architecture {arch!r}")


def layer_groups(net: PackedNet) -> dict[str, str]:
    """Each kernel's group for ``layer_scale``: the first kernel (stem / input layer / patch
    embedding) is ``first``, the classifier ``head``, every kernel between them ``body``."""
    names = [n for n, _ in net.kernels()]
    return {n: "first" if i == 0 else "head" if i == len(names) - 1 else "body" for i, n in enumerate(names)}


def scaled_kernels(net: PackedNet, scale: str) -> set[str]:
    """The kernels that sigma_w multiplies under ``init.scale``."""
    names = [(n, m) for n, m in net.kernels()]
    if scale == "all_kernels":
        return {n for n, _ in names}
    if scale == "normalized_kernels":
        return {n for n, m in names if m.normalized}
    if scale == "head":
        return {names[-1][0]}
    if scale == "convolutions":
        return {n for n, m in names if isinstance(m, PConv)}
    if scale in ("first", "body"):
        return {n for n, grp in layer_groups(net).items() if grp == scale}
    raise ValueError(f"unknown init.scale {scale!r}")


def init_member(net: PackedNet, g: int, sigma_w: float, generator: torch.Generator, scale: str) -> None:
    """Kaiming-normal init of member g, scaled by sigma_w on the chosen kernels.

    The standard-normal draws depend only on the generator (the seed), and the multiply by
    sigma_w comes last, so kernels at sigma_w = 2 are exactly twice those at sigma_w = 1.
    """
    chosen = scaled_kernels(net, scale)
    with torch.no_grad():
        for name, mod in net.kernels():
            shape = tuple(mod.weight.shape[1:])
            z = torch.randn(shape, generator=generator, dtype=torch.float32)
            w = z * (mod.gain / math.sqrt(mod.fan_in))
            if name in chosen:
                w = w * sigma_w
            mod.weight[g].copy_(w)


def kernel_norms(net: PackedNet) -> tuple[list[str], torch.Tensor]:
    """Per member, the Frobenius norm of each trainable kernel: names and ``[G, L]``."""
    names, cols = [], []
    with torch.no_grad():
        for name, mod in net.kernels():
            names.append(name)
            cols.append(mod.weight.detach().float().flatten(1).norm(dim=1))
    return names, torch.stack(cols, dim=1)


def count_train_flops_per_image(net: PackedNet, in_ch: int, size: int) -> int:
    """Training FLOPs per image of ONE member: 2 * MACs forward, times 3 (forward + backward)."""
    macs = 0
    shapes: dict[int, tuple[int, int]] = {}

    def hook(mod: nn.Module, inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        nonlocal macs
        if isinstance(mod, PConv):
            h, w = inp[0].shape[-2:]
            m, _, _ = mod.macs_per_image(int(h), int(w))
            macs += m
        elif isinstance(mod, PLinear):  # a dense layer's output is [G, rows of one image, cout]
            macs += mod.cin * mod.cout * (int(out.shape[1]) if getattr(mod, "member_major", False) else 1)
        shapes[id(mod)] = tuple(out.shape)

    handles = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, PConv | PLinear)]
    try:
        with torch.no_grad():
            was = net.training
            net.eval()
            net(torch.zeros(1, net.G * in_ch, size, size, device=next(net.parameters()).device))
            net.train(was)
    finally:
        for h in handles:
            h.remove()
    return 6 * macs // 1


def activation_elems_per_image(net: PackedNet, in_ch: int, size: int) -> int:
    """Elements of every module output for one image of one member (memory estimate)."""
    total = 0

    def hook(mod: nn.Module, inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        nonlocal total
        if isinstance(out, torch.Tensor):
            total += out.numel()

    handles = [m.register_forward_hook(hook) for m in net.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            net.eval()
            net(torch.zeros(1, net.G * in_ch, size, size))
    finally:
        for h in handles:
            h.remove()
    return total // max(net.G, 1)

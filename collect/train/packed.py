"""The packed layers: G independent networks evaluated as one model (Packed-Ensembles layout).

Activations of a convolutional pack are laid out ``[B, G*C, H, W]``: member g owns channels
``g*C:(g+1)*C`` and sees only its own images. Convolutions are grouped convolutions with
``groups=G`` (so no weight touches another member's channels), BatchNorm over ``G*C``
channels is exactly per-member BatchNorm (statistics are per channel), pooling and ReLU act per
channel, and the head is a batched matmul. Every parameter is stored stacked ``[G, ...]`` so an
element-wise optimizer on the stacked tensors is exactly G independent optimizers.

Every architecture (collect/train/resnets.py, mlp.py, vit.py) builds on these layers and on
:class:`PackedNet`'s kernel interface (``kernels``, ``gain``, ``fan_in``); collect/train/nets.py, the
factory, sits above them all (docs/architecture.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn

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

    def kernel_4d(self) -> torch.Tensor:
        """The stacked kernels as one grouped conv2d weight ``[G*Cout, Cin, kh, kw]``."""
        return self.weight.reshape(self.G * self.cout, self.cin, self.k, self.k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.kernel_4d()
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


class PConv1d(PConv):
    """G stacked 1-D kernels ``[G, Cout, Cin, k]`` over signals held as height-1 maps ``[B, G*C, 1, L]``.

    Run as a ``1 x k`` grouped conv2d (what torch does with a conv1d on CPU anyway): the same
    oneDNN path, shadow groups and layouts as :class:`PConv`, so a member computes bitwise the
    same numbers in a pack of any size, and every other packed op (BatchNorm, the norm-free
    biases and gains, pooling) sees the 4-D layout it was made exact for. Being a ``PConv`` it
    counts as a convolution for ``init.scale`` and the kernel interface; only the kernel's shape,
    ``fan_in`` (``Cin * k``) and its FLOPs differ.
    """

    def __init__(self, G: int, cin: int, cout: int, k: int = 3, stride: int = 1, normalized: bool = True):
        super().__init__(G, cin, cout, k, stride, normalized)
        self.stride, self.pad = (1, stride), (0, k // 2)
        self.weight = nn.Parameter(torch.empty(G, cout, cin, k))

    @property
    def fan_in(self) -> int:
        return self.cin * self.k

    def kernel_4d(self) -> torch.Tensor:
        return self.weight.reshape(self.G * self.cout, self.cin, 1, self.k)

    def macs_per_image(self, h: int, w: int) -> tuple[int, int, int]:
        lo = (w + 2 * self.pad[1] - self.k) // self.stride[1] + 1
        return self.cout * self.cin * self.k * h * lo, h, lo


class PBatchNorm(nn.Module):
    """Per-member BatchNorm: one BatchNorm over G*C channels, parameters stored ``[G, C]``."""

    def __init__(self, G: int, C: int):
        super().__init__()
        self.G, self.C = G, C
        self.weight = nn.Parameter(torch.ones(G, C))
        self.bias = nn.Parameter(torch.zeros(G, C))
        self.register_buffer("running_mean", torch.zeros(G, C))
        self.register_buffer("running_var", torch.ones(G, C))
        # The running-statistics update factor: BN_MOMENTUM in training; collect/train/recipes.py sets
        # 1/n on the n-th batch to recompute the statistics as a cumulative average (torch's momentum=None).
        self.momentum = BN_MOMENTUM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The running-stat buffers are updated in place through their flat views.
        return F.batch_norm(x, self.running_mean.view(-1), self.running_var.view(-1),
                            self.weight.reshape(-1), self.bias.reshape(-1), self.training, self.momentum, BN_EPS)


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
        B, G = x.shape[0], self.G
        z = packed_matmul(x.view(B, G, self.cin).transpose(0, 1), self.weight, self.bias).transpose(0, 1)  # B G out
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


def packed_matmul(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x [G, N, cin]`` times each member's ``weight [G, cout, cin]`` plus ``bias [G, cout]``.

    One ``bmm`` whose member blocks have the same shape and 64-byte alignment for every G (see
    PLinear.forward for why MKL needs both).
    """
    G, N, cin = x.shape
    cout = weight.shape[1]
    k_pad, n_pad = _round16(cin + 1), _round16(cout)
    xg = torch.cat([x, x.new_ones(G, N, 1), x.new_zeros(G, N, k_pad - cin - 1)], 2)
    b = bias if bias is not None else weight.new_zeros(G, cout)
    w = torch.cat([weight.transpose(1, 2), b[:, None, :], weight.new_zeros(G, k_pad - cin - 1, cout)], 1)
    return torch.bmm(xg, F.pad(w, (0, n_pad - cout)))[:, :, :cout]


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
    # Whether ``features`` in eval mode computes each image on its own with kernels whose result
    # for an image does not depend on how many images share the forward (convolutions, eval-mode
    # BatchNorm, element-wise ops, per-image pooling): the engine may then evaluate in sub-batches
    # (PackTrainer._eval_chunk). Dense GEMMs (MKL picks kernels by the number of rows) do not say so.
    per_image_features: bool = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))

    def kernels(self) -> Iterator[tuple[str, nn.Module]]:
        """Every trainable kernel (conv and head weights), in a fixed order with stable names."""
        for name, mod in self.named_modules():
            if isinstance(mod, PConv | PLinear):
                yield name, mod

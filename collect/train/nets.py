"""The architecture factory and what every packed net shares: build a net by name, find its kernels
and their groups, initialise one member at sigma_w, read kernel norms, count FLOPs.

It sits above every architecture (collect/train/resnets.py, resnet1d.py, mlp.py, vit.py), which sit above
the packed layers (collect/train/packed.py); nothing below imports it (docs/architecture.md).
"""

from __future__ import annotations

import math
import re

import torch
from torch import nn

from initmem.collect.train import mlp, vit
from initmem.collect.train.mlp import MLP
from initmem.collect.train.packed import PackedNet, PConv, PLinear
from initmem.collect.train.resnet1d import ResNet1D
from initmem.collect.train.resnets import ResNet9, ResNetCifar, ResNetTiny
from initmem.collect.train.vit import ViTTiny
from initmem.grid import DEFAULT_WIDTH, RESNET1D_DEPTH

Size = int | tuple[int, int]  # a square image's side, or (H, W): mnist1d signals are (1, 40)


def hw(size: Size) -> tuple[int, int]:
    """``(H, W)`` of an image size given as a side or a pair."""
    return (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))


def build_net(arch: str, G: int, in_ch: int, n_classes: int, width: int | None, norm: str, *,
              size: Size = 8, depth: int | None = None, heads: int | None = None,
              patch: int | None = None) -> PackedNet:
    """The packed net of ``model.arch`` (``size``: the image side or (H, W), for mlp and vit_tiny)."""
    h, w = hw(size)
    if arch == "mlp":
        return MLP(G, in_ch * h * w, n_classes, width or DEFAULT_WIDTH[arch], depth or mlp.DEFAULT_DEPTH, norm)
    if arch == "vit_tiny":
        return ViTTiny(G, in_ch, n_classes, (h, w), width or DEFAULT_WIDTH[arch], depth or vit.DEFAULT_DEPTH,
                           heads or vit.DEFAULT_HEADS, patch or vit.DEFAULT_PATCH)
    if arch == "resnet1d":
        return ResNet1D(G, in_ch, n_classes, width or DEFAULT_WIDTH[arch], depth or RESNET1D_DEPTH, norm)
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


def count_train_flops_per_image(net: PackedNet, in_ch: int, size: Size) -> int:
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
            net(torch.zeros(1, net.G * in_ch, *hw(size), device=next(net.parameters()).device))
            net.train(was)
    finally:
        for h in handles:
            h.remove()
    return 6 * macs // 1


def activation_elems_per_image(net: PackedNet, in_ch: int, size: Size) -> int:
    """Elements of every module output for one image of one member (memory estimate)."""
    total = 0

    def hook(_mod: nn.Module, _inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        nonlocal total
        if isinstance(out, torch.Tensor):
            total += out.numel()

    handles = [m.register_forward_hook(hook) for m in net.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            net.eval()
            net(torch.zeros(1, net.G * in_ch, *hw(size)))
    finally:
        for h in handles:
            h.remove()
    return total // max(net.G, 1)

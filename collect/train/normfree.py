"""The norm-free arm's parameters: per-channel biases and SkipInit gains, packed.

Both are stored per member (``[G, C]`` and ``[G, 1]``) like every packed parameter. Their
gradients are reductions over a member's activations, which a plain broadcast would compute
over the whole ``[B, G*C, H, W]`` pack in a G-dependent order; ``member_sums`` reduces each
member's block on its own instead, so a cell's numbers stay bitwise the same in a pack of any
size (docs/collect.md, *Packing is exact*).
"""

from __future__ import annotations

import torch
from torch import nn


def member_sums(t: torch.Tensor, G: int, per_channel: bool) -> torch.Tensor:
    """Per member, the sum of ``t`` ``[B, G*C, H, W]`` over B, H, W (``[G, C]``) or over
    B, C, H, W (``[G, 1]``).

    On CPU each member's block is summed as its own contiguous ``[B, C, H, W]`` copy: the same
    shape and layout whatever G, so the same kernel and summation order, and a member's
    gradient is bitwise the same in a pack of any size. A broadcast's own reduction over
    ``[B, G*C, H, W]`` may split the work differently for different G.
    """
    B, GC, H, W = t.shape
    C = GC // G
    if t.device.type != "cpu":
        v = t.reshape(B, G, C, H, W)
        return v.sum((0, 3, 4)) if per_channel else v.sum((0, 2, 3, 4)).reshape(G, 1)
    blocks = [t[:, g * C:(g + 1) * C].contiguous() for g in range(G)]
    if per_channel:
        return torch.stack([b.sum((0, 2, 3)) for b in blocks])
    return torch.stack([b.sum().reshape(1) for b in blocks])


def _per_channel(p: torch.Tensor, C: int) -> torch.Tensor:
    """``[G, C]`` or ``[G, 1]`` member parameters as a ``[1, G*C, 1, 1]`` broadcast operand."""
    return p.expand(p.shape[0], C).reshape(1, -1, 1, 1)


class _AddBias(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.G = bias.shape[0]
        return x + _per_channel(bias, bias.shape[1])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, member_sums(grad, ctx.G, per_channel=True)


class _ScaleBranch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, gain)
        return x * _per_channel(gain, x.shape[1] // gain.shape[0])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, gain = ctx.saved_tensors
        G = gain.shape[0]
        return grad * _per_channel(gain, x.shape[1] // G), member_sums(grad * x, G, per_channel=False)


class PBias(nn.Module):
    """Per-member, per-channel learnable bias ``[G, C]`` (starts at 0): BatchNorm's shift
    without its normalisation, for ``norm: none``."""

    def __init__(self, G: int, C: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(G, C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _AddBias.apply(x, self.bias)


class SkipGain(nn.Module):
    """SkipInit's learnable scalar per member ``[G, 1]`` on a residual branch, starting at 0.

    With no normalisation a residual sum's variance grows with depth; starting each branch at
    0 keeps the init signal that of the skip path, so a norm-free ResNet trains at ordinary
    learning rates. Under ``norm: batch`` the gain is the identity (no parameter).
    """

    def __init__(self, G: int, norm: str):
        super().__init__()
        self.gain = nn.Parameter(torch.zeros(G, 1)) if norm == "none" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.gain is None else _ScaleBranch.apply(x, self.gain)

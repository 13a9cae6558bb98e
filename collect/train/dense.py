"""Packed dense layers for the MLP and ViT arms: G independent networks in a ``[G, N, D]`` layout.

The ResNets keep every member's activations in its own channel block of ``[B, G*C, H, W]``; the
dense arms keep them member-major, ``[G, N, D]`` (N = images, or images x tokens), so that each
member's rows are one contiguous block and every op below acts on one member's block the same
way whatever G. A dense layer is one batched matmul over G with the bias folded in as one more
weight row and both inner sizes zero-padded to multiples of 16 floats, the same layout as the
packed head (:class:`initmem.collect.train.packed.PLinear`): MKL then computes every member's GEMM, and
the weight-gradient GEMM, identically in a pack of any size (tests/test_nets_dense.py checks it
with ``torch.equal``).

LayerNorm normalises each row of ``[G, N, D]`` over D, so it is per member by construction; its
per-member affine parameters ``[G, D]`` get their gradients summed over each member's own
contiguous rows (:func:`member_row_sums`), for the same reason as the norm-free biases
(:mod:`initmem.collect.train.normfree`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.packed import PLinear, packed_matmul

LN_EPS = 1e-5


class PDense(PLinear):
    """A hidden dense layer of G members, ``[G, N, cin] -> [G, N, cout]``.

    A kernel like the convolutions: ``gain`` is the Kaiming gain of the nonlinearity after it
    (sqrt 2 before ReLU/GELU, 1 before a residual sum or attention) and ``normalized`` says
    whether a LayerNorm follows it directly (then, bias-free, the kernel is scale-invariant).
    """

    member_major = True  # input and output [G, N, D] (the head's are [B, G*D] / [B, G, K])

    def __init__(self, G: int, cin: int, cout: int, *, bias: bool = True, gain: float = 1.0,
                 normalized: bool = False):
        super().__init__(G, cin, cout, bias=bias)
        self.gain = gain
        self.normalized = normalized

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return packed_matmul(x, self.weight, self.bias)


def member_row_sums(t: torch.Tensor) -> torch.Tensor:
    """``t [G, N, D]`` summed over N per member (``[G, D]``), each member's block on its own."""
    if t.device.type != "cpu":
        return t.sum(1)
    return torch.stack([t[g].contiguous().sum(0) for g in range(t.shape[0])])


class _Affine(torch.autograd.Function):
    """``x * w + b`` with per-member ``w, b [G, D]`` and per-member gradient sums."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        return x * w[:, None, :] + b[:, None, :]

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, w = ctx.saved_tensors
        return grad * w[:, None, :], member_row_sums(grad * x), member_row_sums(grad)


class PLayerNorm(nn.Module):
    """Per-member LayerNorm over the last dim of ``[G, N, D]``: weight 1, bias 0 at init."""

    def __init__(self, G: int, D: int):
        super().__init__()
        self.D = D
        self.weight = nn.Parameter(torch.ones(G, D))
        self.bias = nn.Parameter(torch.zeros(G, D))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = F.layer_norm(x.reshape(shape[0], -1, self.D), (self.D,), None, None, LN_EPS)
        return _Affine.apply(y, self.weight, self.bias).reshape(shape)


def unpack_images(x: torch.Tensor, G: int) -> torch.Tensor:
    """The engine's packed images ``[B, G*C, H, W]`` as member-major ``[G, B, C, H, W]``."""
    B, GC, H, W = x.shape
    return x.reshape(B, G, GC // G, H, W).transpose(0, 1).contiguous()


def to_head(x: torch.Tensor) -> torch.Tensor:
    """Member-major features ``[G, B, D]`` in the head's input layout ``[B, G*D]``."""
    G, B, D = x.shape
    return x.transpose(0, 1).reshape(B, G * D)

"""The packed ViT-tiny arm: patch embedding, pre-norm transformer blocks, mean-pooled tokens.

Per member: non-overlapping ``patch x patch`` patches (``1 x patch`` pieces of a height-1 signal,
mnist1d) -> dense embedding + learned position embedding -> ``depth`` blocks ``x + Attn(LN(x))``,
``x + MLP(LN(x))`` (``heads`` heads, MLP ratio 2, GELU) -> final LayerNorm -> mean over tokens ->
linear head. No class token (the mean pool is one op less to keep pack-exact). Every activation is
member-major (``[G, B, N, D]``) and every matmul is batched over members (attention over members x images x heads), so a
member computes the same numbers in a pack of any size (tests/test_nets_dense.py).

No kernel here is followed directly by a normalisation (pre-norm: the residual stream carries
each kernel's output scale), so none is scale-invariant: under LayerNorm, unlike BatchNorm
after a convolution, sigma_w changes the function at init (docs/arms.md).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.dense import PDense, PLayerNorm, to_head, unpack_images
from initmem.collect.train.packed import PackedNet, PLinear

DEFAULT_PATCH, DEFAULT_DEPTH, DEFAULT_HEADS, MLP_RATIO = 2, 2, 2, 2
POS_STD = 0.02  # the position embedding's init std (ViT convention); sigma_w never touches it


class Block(nn.Module):
    def __init__(self, G: int, D: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = PLayerNorm(G, D), PLayerNorm(G, D)
        self.qkv = PDense(G, D, 3 * D)
        self.proj = PDense(G, D, D)
        self.fc1 = PDense(G, D, MLP_RATIO * D, gain=2 ** 0.5)
        self.fc2 = PDense(G, MLP_RATIO * D, D)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        G, B, N, D = x.shape
        H, dh = self.heads, D // self.heads
        qkv = self.qkv(x.reshape(G, B * N, D)).reshape(G, B, N, 3, H, dh)
        q, k, v = (qkv[:, :, :, i].permute(0, 1, 3, 2, 4).reshape(G * B * H, N, dh).contiguous() for i in range(3))
        att = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dh), dim=-1)
        out = torch.bmm(att, v).reshape(G, B, H, N, dh).permute(0, 1, 3, 2, 4).reshape(G, B * N, D)
        return self.proj(out).reshape(G, B, N, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        G, B, N, D = x.shape
        x = x + self.attention(self.ln1(x))
        h = F.gelu(self.fc1(self.ln2(x).reshape(G, B * N, D)))
        return x + self.fc2(h).reshape(G, B, N, D)


class ViTTiny(PackedNet):
    def __init__(self, G: int, in_ch: int, n_classes: int, size: int | tuple[int, int], width: int = 32,
                 depth: int = DEFAULT_DEPTH, heads: int = DEFAULT_HEADS, patch: int = DEFAULT_PATCH):
        super().__init__()
        h, w = (size, size) if isinstance(size, int) else size
        ph = 1 if h == 1 else patch   # a height-1 signal is cut into 1 x patch pieces
        if h % ph or w % patch or width % heads:
            raise ValueError(f"vit_tiny: patch {patch} must divide the image size {size} and heads {heads} "
                             f"the width {width}")
        self.G, self.patch_hw, self.tokens = G, (ph, patch), (h // ph) * (w // patch)
        self.embed = PDense(G, in_ch * ph * patch, width)
        self.pos = nn.Parameter(torch.zeros(G, self.tokens, width))
        self.blocks = nn.ModuleList(Block(G, width, heads) for _ in range(depth))
        self.ln = PLayerNorm(G, width)
        self.head = PLinear(G, width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        xm = unpack_images(x, self.G)                            # G B C H W
        G, B, C, H, W = xm.shape
        ph, pw = self.patch_hw
        patches = xm.reshape(G, B, C, H // ph, ph, W // pw, pw).permute(0, 1, 3, 5, 2, 4, 6)
        t = self.embed(patches.reshape(G, B * self.tokens, C * ph * pw)).reshape(G, B, self.tokens, -1)
        t = t + self.pos[:, None]
        for blk in self.blocks:
            t = blk(t)
        return to_head(self.ln(t).mean(2))

    def init_extra(self, g: int, generator: torch.Generator) -> None:
        """The non-kernel draws of member g (the position embedding), after its kernels."""
        with torch.no_grad():
            self.pos[g].copy_(torch.randn(tuple(self.pos.shape[1:]), generator=generator) * POS_STD)

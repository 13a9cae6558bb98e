"""The packed 1-D ResNet (``resnet1d``) for MNIST-1D's 40-point signals, on the packed layers.

Layout: stem (1-D conv, kernel 5: a wider first look at the raw signal) -> norm -> ReLU, then
``depth`` basic blocks at constant width w (two kernel-3 convs each; the first block at full
length, every later one halves the length with stride 2 and a 1x1 projection shortcut: 40, 20,
10 for depth 3), global average pool, linear head. Constant width keeps a pack cheap on CPU;
the halvings give the last block a receptive field spanning the signal. A pipeline's ``dropout``
acts on the pooled features, before the head, in training forwards only: the engine draws each
member's mask from that member's own stream and passes it in (collect/train/recipes.py,
:func:`~initmem.collect.train.recipes.dropout_mask`), so the net itself draws nothing.

Signals are held as height-1 maps ``[B, G*C, 1, L]`` (:class:`PConv1d`), so BatchNorm, the
norm-free per-channel biases and SkipInit gains (``norm: none``, as in the 2-D ResNets of
collect/train/resnets.py) and the pooling are the 2-D nets' packed layers unchanged, with their
bitwise pack invariance (tests/test_mnist1d_nets.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.packed import PackedNet, PConv1d, PLinear, global_mean_pool
from initmem.collect.train.resnets import BasicBlock, norm_layer

STEM_KERNEL, BLOCK_KERNEL = 5, 3


class ResNet1D(PackedNet):
    """Stem, ``depth`` blocks at width w (stride 2 from the second on), mean pool, head."""

    per_image_features = True  # convolutions, eval BatchNorm, pooling: per image

    def __init__(self, G: int, in_ch: int, n_classes: int, width: int = 32, depth: int = 3, norm: str = "batch"):
        super().__init__()
        self.G = G
        self.stem = PConv1d(G, in_ch, width, STEM_KERNEL, 1, normalized=norm == "batch")
        self.stem_bn = norm_layer(G, width, norm)
        self.blocks = nn.Sequential(*(BasicBlock(G, width, width, 1 if i == 0 else 2, norm, conv=PConv1d,
                                                 kernel=BLOCK_KERNEL) for i in range(depth)))
        self.head = PLinear(G, width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem_bn(self.stem(x)), inplace=True)
        return global_mean_pool(self.blocks(x))

    def forward(self, x: torch.Tensor, drop_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``[B, G, K]``; with ``drop_mask [B, G*C]`` (0 or ``1 / (1 - p)`` per feature) the pooled
        features are multiplied by it before the head: dropout, element-wise, so each member's logits
        depend on its own slice of the mask only. Evaluations pass no mask."""
        f = self.features(x)
        return self.head(f if drop_mask is None else f * drop_mask)

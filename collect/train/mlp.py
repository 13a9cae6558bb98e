"""The packed MLP arm: ``depth`` hidden layers of ``width`` units, ReLU, optional LayerNorm.

``norm: none``: Linear (with bias) -> ReLU per hidden layer, no normalisation anywhere, so no
kernel is scale-invariant and sigma_w acts on the function and the gradients at once (with zero
biases the init net is positively homogeneous: the logits scale by sigma_w to the number of
scaled kernels). ``norm: layer``: Linear (no bias) -> LayerNorm -> ReLU, so every hidden kernel
is followed by a normalisation and is scale-invariant like a convolution before BatchNorm: the
LayerNorm analogue of the BatchNorm ResNet (docs/arms.md, *What each arm separates*).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from initmem.collect.train.dense import PDense, PLayerNorm, to_head, unpack_images
from initmem.collect.train.packed import PackedNet, PLinear

DEFAULT_DEPTH = 2


class MLP(PackedNet):
    """Flattened images -> ``depth`` x (dense, [LayerNorm], ReLU) -> linear head."""

    def __init__(self, G: int, in_features: int, n_classes: int, width: int = 64, depth: int = DEFAULT_DEPTH,
                 norm: str = "none"):
        super().__init__()
        self.G, self.width, self.norm = G, width, norm
        ln = norm == "layer"
        dims = [in_features] + [width] * depth
        self.layers = nn.ModuleList(
            PDense(G, dims[i], dims[i + 1], bias=not ln, gain=2 ** 0.5, normalized=ln) for i in range(depth))
        self.norms = nn.ModuleList(PLayerNorm(G, width) for _ in range(depth)) if ln else None
        self.head = PLinear(G, width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        xm = unpack_images(x, self.G)
        h = xm.reshape(self.G, xm.shape[1], -1)                 # G B (C*H*W)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if self.norms is not None:
                h = self.norms[i](h)
            h = F.relu(h)
        return to_head(h)

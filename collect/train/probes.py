"""The initialization probes: what a grid's sigma_w axis does to a member at init (docs/arms.md).

* ``scale``: sigma_w multiplies the kernels ``init.scale`` names (the paper's probe).
* ``layer_scale``: sigma_w multiplies one layer group, ``init.layers``: ``first`` (stem, input
  layer, patch embedding), ``body`` (every kernel between) or ``head`` (the classifier).
* ``shape``: the level code k = sigma_w picks ``init.shapes[k - 1]``; the kernels ``init.scale``
  names are drawn from that distribution at the scheme's variance. Every shape is a transform
  of the same standard-normal draws z, so the levels share the seed's randomness (common random
  numbers): uniform and truncated normal (at +-2) map z through the normal CDF (monotone, so
  the ranks of a kernel's entries are the same at every level), orthogonal takes the QR factor
  of z reshaped ``[out, fan_in]`` scaled to ``||W||_F^2 = out * fan_in`` (the mean square of z).
  The levels are categories: the memory model treats sigma_w levels as exchangeable anyway, and
  the cube names them (``probe_levels``), the radial (log-sigma_w) analyses do not apply.
* ``width_scaling``: the hidden width is sigma_w x ``model.width``. The pack is built at the
  largest width; a narrower member's extra units have all-zero weights in and out, so their
  activations and gradients are exact zeros and stay so (no bias: zero; SGD, Adam, AdamW: a
  zero gradient moves nothing). ``standard``: Kaiming init and the pipeline's learning rate at
  every width. ``mup`` (Yang et al. 2021, as in the ``mup`` package, relative to
  ``model.width``): the same init, the logits multiplied by 1/m, and per-parameter learning
  rates: Adam/AdamW hidden-to-hidden kernels lr/m; SGD input-layer kernels, biases and the
  head lr*m (weight decay is not re-scaled).
"""

from __future__ import annotations

import math

import torch

from initmem.collect.train.dense import PDense
from initmem.collect.train.nets import build_net, init_member, scaled_kernels
from initmem.collect.train.packed import PackedNet
from initmem.grid import DEFAULT_WIDTH, Grid

TRUNC = 2.0  # truncated normal: cut at +-2 standard deviations of the parent normal


def build_for_grid(grid: Grid, pipeline: str, G: int, in_ch: int, n_classes: int,
                   size: int | tuple[int, int]) -> PackedNet:
    """The packed net of a pipeline's model section (at the widest level under width_scaling)."""
    m = grid.model_of(pipeline)
    width = m.width
    if grid.init.probe == "width_scaling":
        width = round(max(grid.sigma_w) * (m.width or DEFAULT_WIDTH[m.arch]))
    return build_net(m.arch, G, in_ch, n_classes, width, m.norm, size=size, depth=m.depth, heads=m.heads,
                     patch=m.patch)


def shaped(z: torch.Tensor, shape: str) -> torch.Tensor:
    """Standard-normal draws ``z`` turned into unit-variance draws of ``shape`` (float64 math)."""
    if shape == "normal":
        return z
    zd = z.double()
    if shape == "uniform":
        out = math.sqrt(3.0) * (2.0 * torch.special.ndtr(zd) - 1.0)
    elif shape == "truncated_normal":
        lo = torch.special.ndtr(torch.tensor(-TRUNC, dtype=torch.float64))
        t = torch.special.ndtri(lo + torch.special.ndtr(zd) * (1.0 - 2.0 * lo))
        out = t / trunc_sd()
    elif shape == "orthogonal":
        m = zd.reshape(zd.shape[0], -1)
        rows, cols = m.shape
        q, r = torch.linalg.qr(m if rows >= cols else m.t())
        q = q * torch.sign(torch.diagonal(r))[None, :]   # the unique QR with a positive diagonal
        out = (q if rows >= cols else q.t()) * math.sqrt(max(rows, cols))
    else:
        raise ValueError(f"unknown shape {shape!r}")
    return out.reshape(z.shape).to(z.dtype)


def trunc_sd() -> float:
    """The SD of a standard normal truncated at +-TRUNC."""
    a = TRUNC
    phi = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    return math.sqrt(1 - 2 * a * phi / math.erf(a / math.sqrt(2)))


def init_cell(net: PackedNet, g: int, level: float, generator: torch.Generator, grid: Grid, pipeline: str) -> None:
    """Member g's init at probe level ``level`` (sigma_w) with the seed's generator."""
    init = grid.init
    model = grid.model_of(pipeline)
    if init.probe == "scale":
        init_member(net, g, level, generator, init.scale)
    elif init.probe == "layer_scale":
        init_member(net, g, level, generator, str(init.layers))
    elif init.probe == "shape":
        _init_shape(net, g, (init.shapes or [])[int(round(level)) - 1], generator, init.scale)
    else:
        _init_width(net, g, round(level * (model.width or DEFAULT_WIDTH[model.arch])), generator)
    extra = getattr(net, "init_extra", None)
    if extra is not None:
        extra(g, generator)


def _init_shape(net: PackedNet, g: int, shape: str, generator: torch.Generator, scale: str) -> None:
    chosen = scaled_kernels(net, scale)
    with torch.no_grad():
        for name, mod in net.kernels():
            z = torch.randn(tuple(mod.weight.shape[1:]), generator=generator, dtype=torch.float32)
            if name in chosen:
                z = shaped(z, shape)
            mod.weight[g].copy_(z * (mod.gain / math.sqrt(mod.fan_in)))


def _init_width(net: PackedNet, g: int, width: int, generator: torch.Generator) -> None:
    """Kaiming init of an MLP member at ``width`` hidden units in the top-left block of every
    kernel; the rest stays exactly zero. The draws depend only on the seed and this width."""
    kernels = list(net.kernels())
    with torch.no_grad():
        for i, (_, mod) in enumerate(kernels):
            out_dim = mod.cout if i == len(kernels) - 1 else width
            in_dim = mod.cin if i == 0 else width
            z = torch.randn((out_dim, in_dim), generator=generator, dtype=torch.float32)
            mod.weight[g].zero_()
            mod.weight[g, :out_dim, :in_dim].copy_(z * (mod.gain / math.sqrt(in_dim)))


def width_multipliers(grid: Grid, cells: list[tuple[float, int]]) -> torch.Tensor | None:
    """m per member (sigma_w of the cell) under muP; None otherwise."""
    if grid.init.probe != "width_scaling" or grid.init.parametrization != "mup":
        return None
    return torch.tensor([s for s, _ in cells], dtype=torch.float32)


def mup_lr_factors(net: PackedNet, mult: torch.Tensor, optimizer: str) -> list[tuple[torch.nn.Parameter, torch.Tensor]]:
    """Per-member learning-rate factors ``[G]`` of the parameters muP rescales (module docstring)."""
    kernels = [m for _, m in net.kernels()]
    out: list[tuple[torch.nn.Parameter, torch.Tensor]] = []
    for i, mod in enumerate(kernels):
        first, head = i == 0, i == len(kernels) - 1
        if optimizer == "sgd":
            if first or head:
                out.append((mod.weight, mult))
            if mod.bias is not None:
                out.append((mod.bias, mult))
        elif not first and not head and isinstance(mod, PDense):
            out.append((mod.weight, 1.0 / mult))
    return out

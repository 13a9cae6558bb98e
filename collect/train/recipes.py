"""Training-recipe pieces on a pack's stacked ``[G, ...]`` parameters: SAM's perturbation, an EMA of the
weights, BatchNorm statistics recomputed for weights other than the training point, and dropout masks.

Each acts on every member on its own, so a member trained in a pack is bitwise the same cell trained
alone (tests/test_recipes.py):

* :func:`sam_perturb` moves each member's weights by ``rho * g / ||g||`` with ``||g||`` the norm of that
  member's gradient over its slices of all parameters. One norm over the stacked tensors would let one
  member's gradient set every other member's step (the tests check that such a coupled version breaks
  pack invariance).
* :class:`Ema` is ``torch.optim.swa_utils.get_ema_multi_avg_fn`` applied to the stacked tensors, with
  ``AveragedModel``'s convention (the first update copies the weights). ``AveragedModel`` itself would
  deep-copy the whole packed net for the same element-wise ``lerp``.
* :func:`recompute_bn_stats` replaces the running statistics of every packed BatchNorm by a cumulative
  average (torch's ``momentum=None``) over the training split, forward only, in training mode: the
  statistics of the weights that are evaluated (an EMA, Schedule-Free's average), not of the training
  point they were accumulated at. BatchNorm's statistics are per channel, so per member.
* :func:`dropout_mask` draws each member's ``[B, C]`` mask from that member's own generator and lays
  the masks side by side as ``[B, G*C]``. One draw over the stacked ``[B, G*C]`` would give a member
  another mask in a pack than alone (the tests check that such a coupled version breaks pack
  invariance).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch.optim.swa_utils import get_ema_multi_avg_fn

from initmem.collect.train.packed import BN_MOMENTUM, PBatchNorm

SAM_EPS = 1e-12  # added to each member's gradient norm (pytorch_optimizer.SAM's perturb_eps)


def member_grad_norms(params: Sequence[torch.Tensor]) -> torch.Tensor:
    """``[G]`` L2 norm of each member's gradient over its slices of every parameter.

    Per parameter the norm of each member's row, then each member's row of those norms reduced on its
    own (``[G, P]``, contiguous rows): no sum ever crosses members, so a member's norm is the same number
    in a pack of any size. For G = 1 it is the operation order of ``pytorch_optimizer.SAM``'s global
    norm (per-tensor norms, squared, summed, square root).
    """
    rows = [torch.linalg.vector_norm(p.grad.flatten(1), dim=1) for p in params if p.grad is not None]
    return torch.stack(rows, 1).square().sum(1).sqrt()


@torch.no_grad()
def sam_perturb(params: Sequence[torch.Tensor], rho: float,
                norms: Callable[[Sequence[torch.Tensor]], torch.Tensor] = member_grad_norms
                ) -> list[torch.Tensor]:
    """Move every parameter to ``p + rho * g / (||g|| + eps)`` per member; return the weights before.

    ``norms`` gives the ``[G]`` gradient norms (the tests pass a coupled one to show that it breaks pack
    invariance). The caller restores the returned weights (a copy, not a subtraction, so the restored
    point is bitwise the one left) before the optimizer step, as ``pytorch_optimizer.SAM`` does.
    """
    scale = rho / (norms(params) + SAM_EPS)  # [G]
    saved = []
    for p in params:
        saved.append(p.detach().clone())
        if p.grad is not None:
            p.add_(p.grad * scale.reshape(-1, *([1] * (p.dim() - 1))))
    return saved


@torch.no_grad()
def restore(params: Sequence[torch.Tensor], saved: Sequence[torch.Tensor]) -> None:
    """Copy ``saved`` back into ``params`` (bitwise)."""
    for p, s in zip(params, saved, strict=True):
        p.copy_(s)


class Ema:
    """Exponential moving average of a pack's parameters, ``ema <- decay * ema + (1 - decay) * w``.

    The update is ``get_ema_multi_avg_fn(decay)`` (``torch._foreach_lerp_``, element-wise); the first
    update copies the weights, as ``AveragedModel.update_parameters`` does, so the average starts at the
    weights after the first step.
    """

    def __init__(self, params: Sequence[torch.Tensor], decay: float):
        self.params = list(params)
        self.decay = float(decay)
        self._avg = get_ema_multi_avg_fn(self.decay)
        self.shadow: list[torch.Tensor] = []
        self.n_averaged = 0

    @torch.no_grad()
    def update(self) -> None:
        """Average in the current weights (after an optimizer step)."""
        current = [p.detach() for p in self.params]
        if self.n_averaged == 0:
            self.shadow = [p.clone() for p in current]
        else:
            self._avg(self.shadow, current, torch.tensor(self.n_averaged))
        self.n_averaged += 1

    @torch.no_grad()
    def copy_to(self, params: Sequence[torch.Tensor]) -> None:
        """Write the averaged weights into ``params`` (nothing before the first update)."""
        if self.n_averaged:
            restore(params, self.shadow)

    def state_dict(self) -> dict[str, Any]:
        return {"n_averaged": int(self.n_averaged), "shadow": [t.detach().cpu().clone() for t in self.shadow]}

    def load_state_dict(self, st: dict[str, Any]) -> None:
        device = self.params[0].device
        self.n_averaged = int(st["n_averaged"])
        self.shadow = [t.to(device).clone() for t in st["shadow"]]


def bn_modules(net: torch.nn.Module) -> list[PBatchNorm]:
    """Every packed BatchNorm of ``net`` (none in a norm-free or dense net)."""
    return [m for m in net.modules() if isinstance(m, PBatchNorm)]


def bn_buffers(net: torch.nn.Module) -> list[torch.Tensor]:
    """The running statistics of every packed BatchNorm, in module order."""
    return [b for m in bn_modules(net) for b in (m.running_mean, m.running_var)]


@torch.no_grad()
def recompute_bn_stats(net: torch.nn.Module, batches: Iterable[torch.Tensor],
                       forward: Callable[[torch.Tensor], Any] | None = None) -> None:
    """Running statistics of every packed BatchNorm as the cumulative average over ``batches``.

    Statistics reset to (0, 1), then the n-th batch enters with factor 1/n (torch's ``momentum=None``):
    each batch weighs the same. ``batches`` are the network's inputs (every member's copy of the
    images); ``forward`` runs them (default ``net``). The forward runs in training mode, the way the
    statistics are accumulated in training; the net is left in eval mode.
    """
    bns = bn_modules(net)
    if not bns:
        return
    for m in bns:
        m.running_mean.zero_()
        m.running_var.fill_(1.0)
    net.train()
    run = forward or net
    try:
        for n, x in enumerate(batches, start=1):
            for m in bns:
                m.momentum = 1.0 / n
            run(x)
    finally:
        for m in bns:
            m.momentum = BN_MOMENTUM
        net.eval()


def dropout_mask(generators: Sequence[torch.Generator], batch: int, features: int, p: float,
                 device: torch.device | str = "cpu") -> torch.Tensor:
    """Inverted-dropout masks ``[batch, G*features]``: member g's columns ``g*features:(g+1)*features``
    come from ``generators[g]`` alone.

    Each member draws ``torch.rand(batch, features)`` on its own CPU generator (the same numbers on
    every device, and in a pack of any size); a feature is kept where the draw is ``>= p``
    (probability ``1 - p``) and then scaled by ``1 / (1 - p)``, as ``torch.nn.Dropout`` does, so a
    feature's expected value is unchanged and evaluation runs without a mask. Exactly
    ``batch * features`` numbers are drawn from each generator per call.
    """
    if not 0 < p < 1:
        raise ValueError(f"dropout probability must lie in (0, 1) (got {p})")
    scale = 1.0 / (1.0 - p)
    masks = [(torch.rand(batch, features, generator=g) >= p).float() * scale for g in generators]
    return torch.cat(masks, 1).to(device)


__all__ = ["SAM_EPS", "Ema", "bn_buffers", "bn_modules", "dropout_mask", "member_grad_norms", "recompute_bn_stats",
           "restore", "sam_perturb"]

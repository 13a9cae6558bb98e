"""The optimizer table: every optimizer kind a grid pipeline may name, one entry each.

Torch-free: an entry names its ``torch.optim`` class and gives its keyword arguments, and the engine
(``initmem.collect.train.optim``) builds it. The grid schema, the schedule's clocks, the cube's coordinates,
the simulator and the report all read :data:`OPTIMIZERS`:

* ``adaptive``: an Adam-family optimizer, whose clock ``T_adapt`` is ``sum eta_k`` (0 otherwise);
* ``l2``: how ``weight_decay`` acts: ``coupled`` (added to the gradient: lambda of ``T_l2``) or
  ``decoupled`` (shrinks the weights apart from the gradient, AdamW-style: ``T_l2`` is 0);
* ``momentum``: the grid's ``momentum`` / ``nesterov`` fields apply (heavy-ball momentum, whose
  momentum-corrected clocks use ``eta / (1 - mu)``);
* ``betas``: the grid's ``betas`` apply (stored as ``beta1`` / ``beta2`` cube coordinates);
* ``schedule_free``: the kind evaluates at its own average of the iterates (Schedule-Free AdamW): the
  engine switches it to the evaluated point for every evaluation and it takes a constant learning
  rate (warm-up allowed), since its averaging replaces the decay a schedule would add.

Every kind is element-wise (``foreach`` on CPU, ``fused`` on CUDA where torch has it; Lion's and
Schedule-Free AdamW's own per-tensor and ``foreach`` updates), so one optimizer over a pack's stacked
``[G, ...]`` tensors is exactly G independent optimizers (tests/test_engine.py and tests/test_recipes.py
check bitwise pack invariance for every kind). How to add one: docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from initmem.errors import UserError

COUPLED, DECOUPLED = "coupled", "decoupled"


def _fast(device_kind: str, *, fused: bool = True) -> dict[str, Any]:
    """Multi-tensor kernels: fused on CUDA (where the optimizer has them), foreach otherwise."""
    return {"fused": True} if device_kind == "cuda" and fused else {"foreach": True}


def _sgd(spec: Any, device_kind: str) -> dict[str, Any]:
    return dict(lr=spec.lr, momentum=spec.momentum, nesterov=spec.nesterov, weight_decay=spec.weight_decay,
                **_fast(device_kind))


def _adam(spec: Any, device_kind: str) -> dict[str, Any]:
    return dict(lr=spec.lr, betas=tuple(spec.betas), eps=spec.eps, weight_decay=spec.weight_decay,
                **_fast(device_kind))


def _rmsprop(spec: Any, device_kind: str) -> dict[str, Any]:
    # torch has no fused RMSprop: foreach on every device. alpha (the squared-gradient average) is
    # torch's default 0.99; the grid's eps applies.
    return dict(lr=spec.lr, eps=spec.eps, weight_decay=spec.weight_decay, **_fast(device_kind, fused=False))


def _lion(spec: Any, device_kind: str) -> dict[str, Any]:  # noqa: ARG001 (one kernel on every device)
    # lion_pytorch.Lion's own per-tensor update (no triton kernel): p *= 1 - lr * wd, then the signed
    # step. Its decoupled_weight_decay flag (wd divided by the initial lr) stays off, so weight_decay is
    # the coefficient of that product, as in AdamW.
    return dict(lr=spec.lr, betas=tuple(spec.betas), weight_decay=spec.weight_decay, use_triton=False)


def _sf_adamw(spec: Any, device_kind: str) -> dict[str, Any]:  # noqa: ARG001 (foreach on every device)
    # schedulefree.AdamWScheduleFree with its foreach update on every device (it has no fused one). Its
    # own warmup_steps stays 0: the grid's warm-up is in the learning rate the engine sets at every step,
    # the same linear ramp lr * (k + 1) / W.
    return dict(lr=spec.lr, betas=tuple(spec.betas), eps=spec.eps, weight_decay=spec.weight_decay,
                warmup_steps=0, foreach=True)


@dataclass(frozen=True)
class OptimizerKind:
    """One optimizer kind: its grid name, how the report names it, and how it trains."""

    name: str
    display: str
    adaptive: bool
    l2: str
    momentum: bool
    betas: bool
    torch_class: str  # the class (in ``module``) that trains it
    kwargs: Callable[[Any, str], dict[str, Any]]  # (pipeline spec, device kind) -> its keyword arguments
    module: str = "torch.optim"  # where ``torch_class`` lives (a library's module for Lion, Schedule-Free)
    schedule_free: bool = False  # evaluates at its own average; constant learning rate (module docstring)

    def coupled_l2(self, weight_decay: float) -> float:
        """lambda of ``T_l2``: the weight decay when it is added to the gradient, else 0."""
        return float(weight_decay) if self.l2 == COUPLED else 0.0

    def decoupled_wd(self, weight_decay: float) -> float:
        """The decoupled weight-decay coefficient (AdamW-style), else 0."""
        return float(weight_decay) if self.l2 == DECOUPLED else 0.0


OPTIMIZERS: tuple[OptimizerKind, ...] = (
    OptimizerKind("sgd", "SGD", adaptive=False, l2=COUPLED, momentum=True, betas=False,
                  torch_class="SGD", kwargs=_sgd),
    OptimizerKind("adam", "Adam", adaptive=True, l2=COUPLED, momentum=False, betas=True,
                  torch_class="Adam", kwargs=_adam),
    OptimizerKind("adamw", "AdamW", adaptive=True, l2=DECOUPLED, momentum=False, betas=True,
                  torch_class="AdamW", kwargs=_adam),
    OptimizerKind("rmsprop", "RMSprop", adaptive=True, l2=COUPLED, momentum=False, betas=False,
                  torch_class="RMSprop", kwargs=_rmsprop),
    # Lion (Chen et al. 2023): the sign of an interpolated momentum, so its step is lr per element
    # whatever the gradient's scale (adaptive: T_adapt = T_eta); weight decay p *= 1 - lr * wd (decoupled).
    OptimizerKind("lion", "Lion", adaptive=True, l2=DECOUPLED, momentum=False, betas=True,
                  torch_class="Lion", kwargs=_lion, module="lion_pytorch"),
    # Schedule-Free AdamW (Defazio et al. 2024): Adam-normalised steps on z, evaluated at the running
    # average x; weight decay acts on the normalised step (decoupled).
    OptimizerKind("sf_adamw", "Schedule-Free AdamW", adaptive=True, l2=DECOUPLED, momentum=False, betas=True,
                  torch_class="AdamWScheduleFree", kwargs=_sf_adamw, module="schedulefree", schedule_free=True),
)

# The grid's default betas for a kind whose library recommends other ones (Lion: beta2 = 0.99); a grid
# that names betas keeps its own.
DEFAULT_BETAS: dict[str, tuple[float, float]] = {"lion": (0.9, 0.99)}

BY_NAME: dict[str, OptimizerKind] = {o.name: o for o in OPTIMIZERS}


class WeightDecaySplit:
    """For a settings record with ``optimizer`` and ``weight_decay`` (a grid's pipeline, a simulated one): how
    its kind splits the decay into coupled L2 and decoupled decay, read from the table. It declares no fields:
    the record's own ``optimizer`` and ``weight_decay`` are read (a pydantic model keeps its field order)."""

    @property
    def coupled_l2(self) -> float:
        """lambda of T_l2: the weight decay added to the gradient; 0 for decoupled decay (AdamW)."""
        return get(self.optimizer).coupled_l2(self.weight_decay)

    @property
    def decoupled_wd(self) -> float:
        """The decoupled weight-decay coefficient (AdamW); 0 for coupled L2."""
        return get(self.optimizer).decoupled_wd(self.weight_decay)


def names() -> tuple[str, ...]:
    """Every optimizer kind, in table order (the grid file's allowed values)."""
    return tuple(BY_NAME)


def adaptive() -> tuple[str, ...]:
    """The adaptive (Adam-family) kinds."""
    return tuple(o.name for o in OPTIMIZERS if o.adaptive)


def with_momentum() -> tuple[str, ...]:
    """The kinds that take the grid's ``momentum`` and ``nesterov`` fields."""
    return tuple(o.name for o in OPTIMIZERS if o.momentum)


def schedule_free() -> tuple[str, ...]:
    """The kinds that evaluate at their own average and take a constant learning rate only."""
    return tuple(o.name for o in OPTIMIZERS if o.schedule_free)


def get(name: str) -> OptimizerKind:
    """The entry of ``name``; an unknown kind is bad input (``UserError`` naming the allowed ones)."""
    try:
        return BY_NAME[str(name)]
    except KeyError:
        raise UserError(f"optimizer must be one of {', '.join(BY_NAME)} (got {name!r})") from None


def coupled_l2_of(names_: Any, weight_decays: Any) -> Any:
    """Per pipeline, lambda of ``T_l2``: the weight decay where the kind couples it to the gradient, 0
    where it decays decoupled (AdamW); a kind the table does not know (imported) keeps its decay."""
    import numpy as np

    return np.array([w if (k := BY_NAME.get(str(n))) is None else k.coupled_l2(w)
                     for n, w in zip(names_, weight_decays, strict=True)], float)


def display_name(name: str) -> str:
    """How the report names a kind (unknown kinds, e.g. from an imported table, as given)."""
    kind = BY_NAME.get(str(name))
    return kind.display if kind else str(name)


__all__ = ["BY_NAME", "COUPLED", "DECOUPLED", "DEFAULT_BETAS", "OPTIMIZERS", "OptimizerKind", "WeightDecaySplit",
           "adaptive", "coupled_l2_of", "display_name", "get", "names", "schedule_free", "with_momentum"]

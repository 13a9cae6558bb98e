"""The clocks table: every forgetting clock a cube can hold, one entry each (torch-free).

A clock is a cumulative "training time" along which initialization memory may decay
(docs/clocks-and-collapse.md). A clock's name, formula, axis label, whether the simulator can draw it and
whether the collapse test scores it are needed by six modules, so each is a field of one :class:`Clock`
entry and those modules read :data:`CLOCKS` (adding a clock is one entry: docs/extending.md):

* ``initmem.cube`` re-exports the names and derives its clock tuples (the cube variables);
* ``initmem.schedule`` computes every *schedule* clock from the per-step learning rate with
  the entry's :attr:`Clock.compute` (engine and simulator alike, so their clocks agree exactly);
* *measured* clocks are computed from the weights by ``initmem.collect.train.measure``;
* the report labels axes with :attr:`Clock.label`, the simulator offers the entries with
  :attr:`Clock.simulated` as truth axes, and ``initmem.stats.collapse`` tests the entries with
  :attr:`Clock.in_family` (the Westfall-Young family: adding a clock to it is a scientific choice,
  so it is a visible field here, not a side effect of adding a cube variable).

How to add a clock: docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

SCHEDULE, MEASURED = "schedule", "measured"

# The clock names (cube variables, re-exported by initmem.cube, which is where other modules take them).
T_ETA, T_SGD, T_L2, T_ADAPT = "T_eta", "T_sgd", "T_l2", "T_adapt"
T_ETA_MOM, T_SGD_MOM, T_L2_MOM = "T_eta_mom", "T_sgd_mom", "T_l2_mom"
T_WD = "T_wd"
STEP, LR_NOW = "step", "lr_now"  # steps taken and the rate of the last step: the schedule beside its clocks
T_ANGLE, T_EFF = "T_angle", "T_eff"


@dataclass(frozen=True)
class Steps:
    """What a schedule clock is computed from: the learning rate of every optimizer step and the
    pipeline's settings. :meth:`cum` sums a per-step quantity to the end of each epoch."""

    eta: np.ndarray          # learning rate of step k, float64
    eff: np.ndarray          # eta_k / (1 - mu) for SGD with momentum mu, eta_k otherwise
    ends: np.ndarray         # steps taken at the end of each epoch (index 0: none)
    batch_size: int
    coupled_l2: float        # lambda added to the gradient (0 for decoupled decay)
    decoupled_wd: float      # decoupled weight decay (AdamW-style; 0 for coupled L2)
    adaptive: bool           # an Adam-family optimizer (initmem.optimizers)

    def cum(self, per_step: np.ndarray) -> np.ndarray:
        """Cumulative sum of ``per_step`` at the end of each epoch, 0 before the first step."""
        return np.concatenate([[0.0], np.cumsum(per_step)])[self.ends]


@dataclass(frozen=True)
class Clock:
    """One forgetting clock.

    ``kind`` is ``schedule`` (a function of the learning-rate schedule alone, computed by
    :attr:`compute`) or ``measured`` (from the weights, by collect/train/measure.py; ``compute`` is None).
    ``formula`` says how it is computed, in words for docs and the report; ``label`` is the axis
    label of figures. ``in_family``: the collapse test scores it by default (and adjusts its
    p-values across every such clock). ``simulated``: ``initmem simulate`` draws it and can let
    memory decay along it. ``units``: its CF units attribute in the cube ("1": a dimensionless sum of
    learning rates, as every schedule clock is).
    """

    name: str
    kind: str
    formula: str
    label: str
    in_family: bool = True
    simulated: bool = False
    compute: Callable[[Steps], np.ndarray] | None = None
    units: str = "1"


CLOCKS: tuple[Clock, ...] = (
    Clock(T_ETA, SCHEDULE, "sum of the learning rates eta_k", f"{T_ETA} = Σ η_k",
          simulated=True, compute=lambda s: s.cum(s.eta)),
    Clock(T_SGD, SCHEDULE, "sum of eta_k^2 / b (SGD noise)", f"{T_SGD} = Σ η_k² / b",
          simulated=True, compute=lambda s: s.cum(s.eta * s.eta) / s.batch_size),
    Clock(T_L2, SCHEDULE, "lambda times T_eta (coupled L2)", f"{T_L2} = λ Σ η_k",
          simulated=True, compute=lambda s: s.coupled_l2 * s.cum(s.eta)),
    Clock(T_ADAPT, SCHEDULE, "T_eta for adaptive optimizers, 0 otherwise", f"{T_ADAPT} = Σ η_k (adaptive)",
          simulated=True,
          compute=lambda s: s.cum(s.eta) if s.adaptive else np.zeros(len(s.ends))),
    Clock(T_ETA_MOM, SCHEDULE, "T_eta with the momentum-corrected step eta_k / (1 - mu)",
          f"{T_ETA_MOM} = Σ η_k / (1 - μ)", compute=lambda s: s.cum(s.eff)),
    Clock(T_SGD_MOM, SCHEDULE, "T_sgd with the momentum-corrected step", f"{T_SGD_MOM} = Σ (η_k / (1 - μ))² / b",
          compute=lambda s: s.cum(s.eff * s.eff) / s.batch_size),
    Clock(T_L2_MOM, SCHEDULE, "T_l2 with the momentum-corrected step", f"{T_L2_MOM} = λ Σ η_k / (1 - μ)",
          compute=lambda s: s.coupled_l2 * s.cum(s.eff)),
    # Decoupled decay (AdamW) shrinks the weights by eta_k * lambda_dec at every step, apart from the
    # gradient: the decoupled twin of T_l2. Not in the collapse family by default: it is 0 on every
    # pipeline without decoupled decay, and adding it would change the family's p-value adjustment.
    Clock(T_WD, SCHEDULE, "decoupled weight decay times T_eta (AdamW-style decay)", f"{T_WD} = λ_dec Σ η_k",
          in_family=False, simulated=True, compute=lambda s: s.decoupled_wd * s.cum(s.eta)),
    Clock(T_ANGLE, MEASURED, "mean over layers of the cumulative per-step angle of each kernel (radians)",
          f"{T_ANGLE} = angular path (rad)", units="rad"),
    Clock(T_EFF, MEASURED, "cumulative eta_k / ||w||^2, mean over normalised layers", f"{T_EFF} = Σ η_k / ‖w‖²"),
)

BY_NAME: dict[str, Clock] = {c.name: c for c in CLOCKS}


def names(kind: str | None = None) -> tuple[str, ...]:
    """Every clock name in table order, or those of one ``kind`` (``schedule`` / ``measured``)."""
    return tuple(c.name for c in CLOCKS if kind is None or c.kind == kind)


def family() -> tuple[str, ...]:
    """The clocks the collapse test scores by default (its multiple-comparison family)."""
    return tuple(c.name for c in CLOCKS if c.in_family)


def simulated() -> tuple[str, ...]:
    """The schedule clocks ``initmem simulate`` writes and can use as the truth axis."""
    return tuple(c.name for c in CLOCKS if c.simulated)


def labels() -> dict[str, str]:
    """Axis label of every clock."""
    return {c.name: c.label for c in CLOCKS}


def schedule_clocks(steps: Steps) -> dict[str, np.ndarray]:
    """Every schedule clock at the end of each epoch, from :class:`Steps`."""
    return {c.name: np.asarray(c.compute(steps), dtype=np.float64) for c in CLOCKS
            if c.kind == SCHEDULE and c.compute is not None}


def _check() -> None:
    """The table's own invariants (checked at import: a bad entry fails every test at once)."""
    if len(BY_NAME) != len(CLOCKS):
        raise ValueError("clocks: a clock name appears twice in CLOCKS")
    for c in CLOCKS:
        if c.kind not in (SCHEDULE, MEASURED):
            raise ValueError(f"clocks: {c.name}: kind must be {SCHEDULE} or {MEASURED}")
        if (c.kind == SCHEDULE) != (c.compute is not None):
            raise ValueError(f"clocks: {c.name}: a schedule clock needs compute, a measured one has none")
        if c.simulated and c.kind != SCHEDULE:
            raise ValueError(f"clocks: {c.name}: only schedule clocks can be simulated")


_check()

__all__ = ["BY_NAME", "CLOCKS", "MEASURED", "SCHEDULE", "Clock", "Steps", "family", "labels", "names",
           "schedule_clocks", "simulated"]

"""The per-step learning rate and the clocks built from it (numpy only, no torch).

One implementation for the engine, which sets the optimizer's learning rate at step k from
:meth:`LrSchedule.per_step`, and for the simulator, whose clocks must be the engine's clocks.
The clocks are cumulative sums over the optimizer steps (docs/cube.md, "Clocks"):

* ``T_eta = sum eta_k``, ``T_sgd = sum eta_k^2 / b``, ``T_l2 = lambda * T_eta`` (coupled L2),
  ``T_adapt = T_eta`` for the adaptive kinds (Adam, AdamW, RMSprop, Lion, Schedule-Free AdamW; 0
  otherwise), ``T_wd = lambda * T_eta`` for decoupled decay (AdamW, Lion, Schedule-Free AdamW);
  the recipe knobs (label smoothing, EMA, SAM) take one step per batch at eta_k and change no clock;
* the momentum-corrected ``T_eta_mom, T_sgd_mom, T_l2_mom``: the same sums with the effective
  step ``eta_k / (1 - mu)`` of heavy-ball and Nesterov SGD (mu = momentum). A constant step
  under momentum mu moves the weights like plain SGD with step eta/(1-mu) once the velocity has
  settled, so these clocks compare SGD runs with and without momentum on one axis. They equal
  the plain clocks for mu = 0 and for every kind without heavy-ball momentum.

Steps per epoch are ``floor(n_train / b)``: the engine drops the last incomplete batch, so every
step sees exactly b examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from initmem import clocks, optimizers

ADAPTIVE = optimizers.adaptive()  # the Adam family (initmem/optimizers.py)


def steps_per_epoch(n_train: int, batch_size: int) -> int:
    """Optimizer steps per epoch with the last incomplete batch dropped."""
    return int(n_train) // int(batch_size)


@dataclass(frozen=True)
class LrSchedule:
    """Warm-up (linear, per step) followed by a constant, cosine or step-decay schedule."""

    lr: float
    schedule: str
    epochs: int
    steps_per_epoch: int
    warmup_epochs: int = 0
    milestones: tuple[int, ...] = ()
    gamma: float = 0.1

    @classmethod
    def of(cls, spec: Any, steps_per_epoch: int, epochs: int | None = None) -> LrSchedule:
        """From a grid ``PipelineSpec`` (or anything with its field names; absent ones default)."""
        epochs = int(spec.epochs if epochs is None else epochs)
        return cls(lr=float(spec.lr), schedule=str(spec.schedule), epochs=epochs,
                   steps_per_epoch=int(steps_per_epoch), warmup_epochs=int(getattr(spec, "warmup_epochs", 0)),
                   milestones=tuple(int(m) for m in getattr(spec, "milestones", ())),
                   gamma=float(getattr(spec, "gamma", 0.1)))

    def per_step(self) -> np.ndarray:
        """The learning rate of every optimizer step k = 0 .. epochs * steps_per_epoch - 1."""
        spe = self.steps_per_epoch
        total = self.epochs * spe
        warm = self.warmup_epochs * spe
        k = np.arange(total, dtype=np.float64)
        if self.schedule == "constant":
            eta = np.full(total, self.lr)
        elif self.schedule == "cosine":
            span = max(total - warm, 1)
            eta = self.lr * 0.5 * (1.0 + np.cos(np.pi * (k - warm) / span))
        elif self.schedule == "step":
            epoch = np.arange(total) // max(spe, 1)
            drops = (epoch[:, None] >= np.asarray(self.milestones, dtype=np.int64)[None, :]).sum(1)
            eta = self.lr * self.gamma ** drops.astype(np.float64)
        else:
            raise ValueError(f"unknown schedule {self.schedule!r}")
        if warm:
            eta[:warm] = self.lr * (k[:warm] + 1.0) / warm
        return eta


def effective_step_factor(optimizer: str, momentum: float) -> float:
    """1 / (1 - mu) for an optimizer with heavy-ball (or Nesterov) momentum mu, 1 otherwise."""
    return 1.0 / (1.0 - float(momentum)) if optimizers.get(optimizer).momentum and momentum > 0 else 1.0


def epoch_clocks(eta: np.ndarray, epochs: int, steps_per_epoch: int, *, batch_size: int, optimizer: str,
                 momentum: float, coupled_l2: float, decoupled_wd: float = 0.0) -> dict[str, np.ndarray]:
    """Every schedule clock of the clocks table (initmem/clocks.py) at the end of each epoch (index 0:
    before the first step), float64.

    Also ``clocks.STEP`` (steps taken) and ``clocks.LR_NOW`` (the rate of the last step taken; at
    epoch 0 the rate of the first step).
    """
    ends = np.arange(epochs + 1) * steps_per_epoch
    steps = clocks.Steps(eta=eta, eff=eta * effective_step_factor(optimizer, momentum), ends=ends,
                         batch_size=int(batch_size), coupled_l2=float(coupled_l2),
                         decoupled_wd=float(decoupled_wd), adaptive=optimizers.get(optimizer).adaptive)
    lr_now = np.concatenate([eta[:1], eta[ends[1:] - 1]]) if eta.size else np.full(epochs + 1, np.nan)
    return {clocks.STEP: ends.astype(np.float64), clocks.LR_NOW: lr_now, **clocks.schedule_clocks(steps)}


def pipeline_clocks(spec: Any, n_train: int, *, epochs: int | None = None,
                    milestones: Sequence[int] | None = None) -> dict[str, np.ndarray]:
    """The clocks of a pipeline (a grid ``PipelineSpec`` or the simulator's ``SimPipeline``).

    ``epochs`` / ``milestones`` override the spec's (the simulator gives its horizon apart).
    """
    spe = steps_per_epoch(n_train, spec.batch_size)
    sched = LrSchedule.of(spec, spe, epochs)
    if milestones is not None:
        sched = replace(sched, milestones=tuple(int(m) for m in milestones))
    return epoch_clocks(sched.per_step(), sched.epochs, spe, batch_size=int(spec.batch_size),
                        optimizer=str(spec.optimizer), momentum=float(getattr(spec, "momentum", 0.0)),
                        coupled_l2=float(getattr(spec, "coupled_l2", 0.0)),
                        decoupled_wd=float(getattr(spec, "decoupled_wd", 0.0)))

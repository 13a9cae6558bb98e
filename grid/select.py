"""Which epoch's checkpoint a run reports (grid ``eval.select``), numpy only.

The memory effect is measured at interpolation, so the default rule ``best_val_acc_interp``
picks the best-validation epoch among the epochs at or after ``tau_interp`` (the first epoch
whose training accuracy reaches ``interp_threshold``). A run that never interpolates falls
back to the best-validation epoch over all epochs; its ``tau_interp`` stays NaN, so the
analysis can gate it out. Small validation sets saturate (several epochs at 100%), so under
this rule ties in validation accuracy go to the lower validation loss, then to the later epoch.

``best_val_acc`` (the first epoch of highest validation accuracy over all epochs) and ``last``
are kept as they were.

:func:`select_epoch` is the rule on whole curves; :class:`Selector` applies it online, epoch by
epoch, as the engine records (the engine cannot keep every epoch's test predictions), and
checkpoints with the pack.
"""

from __future__ import annotations

from typing import Any, get_args

import numpy as np

from initmem.grid.schema import EvalSpec

# The grid schema owns the rule names and the default; this module owns what they mean.
SELECT_RULES: tuple[str, ...] = get_args(EvalSpec.model_fields["select"].annotation)
DEFAULT_RULE: str = EvalSpec.model_fields["select"].default


def _better(acc: float, loss: float, best_acc: float, best_loss: float, ties: bool) -> bool:
    """Is (acc, loss) at a later epoch preferred to the best so far?"""
    if acc > best_acc:
        return True
    if not ties or acc != best_acc:
        return False
    loss = np.inf if np.isnan(loss) else loss
    return bool(loss <= best_loss)   # equal loss: the later epoch wins


def tau_interp(train_acc: np.ndarray, threshold: float) -> float:
    """The first epoch whose training accuracy reaches ``threshold``; NaN if none does."""
    hit = np.nonzero(np.asarray(train_acc) >= threshold)[0]
    return float(hit[0]) if hit.size else float("nan")


def select_epoch(rule: str, train_acc: np.ndarray, val_acc: np.ndarray, val_loss: np.ndarray,
                 threshold: float) -> int:
    """The selected epoch of one run's curves (index into the epoch axis; epoch 0 included)."""
    if rule not in SELECT_RULES:
        raise ValueError(f"unknown select rule {rule!r}")
    E = len(val_acc)
    if rule == "last":
        return E - 1
    start, ties = 0, False
    if rule == "best_val_acc_interp":
        ties = True
        tau = tau_interp(train_acc, threshold)
        if not np.isnan(tau):
            start = int(tau)
    best, best_acc, best_loss = start, -np.inf, np.inf
    for e in range(start, E):
        if _better(float(val_acc[e]), float(val_loss[e]), best_acc, best_loss, ties):
            best, best_acc, best_loss = e, float(val_acc[e]), float(val_loss[e])
    return best


# The online form ------------------------------------------------------------------------------

_SLOT_FIELDS = ("acc", "loss", "tau", "val", "test", "correct", "pred")


class _Slot:
    """The best epoch so far of G runs, with what the cube keeps of it."""

    def __init__(self, G: int, n_test: int):
        self.acc = np.full(G, -np.inf)
        self.loss = np.full(G, np.inf)
        self.tau = np.full(G, np.nan)
        self.val = np.full(G, np.nan)
        self.test = np.full(G, np.nan)
        self.correct = np.full(G, -1, dtype=np.int64)
        self.pred = np.full((G, n_test), -1, dtype=np.int64)

    def take(self, g: int, epoch: int, val_acc: float, val_loss: float, test_acc: float, n_test: int,
             pred: np.ndarray) -> None:
        self.acc[g], self.loss[g], self.tau[g] = val_acc, (np.inf if np.isnan(val_loss) else val_loss), epoch
        self.val[g], self.test[g] = val_acc, test_acc
        self.correct[g] = int(round(test_acc * n_test))
        self.pred[g] = pred


class Selector:
    """:func:`select_epoch` applied online to G runs; ``update`` once per recorded epoch."""

    def __init__(self, G: int, n_test: int, rule: str, threshold: float):
        if rule not in SELECT_RULES:
            raise ValueError(f"unknown select rule {rule!r}")
        self.rule, self.threshold, self.n_test = rule, float(threshold), int(n_test)
        self.tau_interp = np.full(G, np.nan)
        self.all = _Slot(G, n_test)      # over every epoch
        self.after = _Slot(G, n_test)    # over epochs >= tau_interp

    def update(self, g: int, epoch: int, train_acc: float, val_acc: float, val_loss: float, test_acc: float,
               pred: np.ndarray) -> None:
        """Record epoch ``epoch`` of run ``g`` (epochs in increasing order)."""
        args = (g, epoch, val_acc, val_loss, test_acc, self.n_test, pred)
        if self.rule == "last":
            self.all.take(*args)
            return
        ties = self.rule == "best_val_acc_interp"
        if _better(val_acc, val_loss, self.all.acc[g], self.all.loss[g], ties):
            self.all.take(*args)
        if not ties:
            return
        if np.isnan(self.tau_interp[g]) and train_acc >= self.threshold:
            self.tau_interp[g] = epoch
        if not np.isnan(self.tau_interp[g]) and _better(val_acc, val_loss, self.after.acc[g], self.after.loss[g],
                                                        True):
            self.after.take(*args)

    def selected(self) -> dict[str, np.ndarray]:
        """Per run: ``tau``, ``val``, ``test``, ``correct``, ``pred`` of the selected epoch."""
        use_after = ~np.isnan(self.tau_interp) if self.rule == "best_val_acc_interp" else np.zeros(
            self.tau_interp.shape, dtype=bool)
        out = {}
        for name in ("tau", "val", "test", "correct", "pred"):
            a, b = getattr(self.all, name), getattr(self.after, name)
            mask = use_after.reshape((-1,) + (1,) * (a.ndim - 1))
            out[name] = np.where(mask, b, a)
        return out

    def to_state(self) -> dict[str, Any]:
        return {"tau_interp": self.tau_interp.copy(),
                **{f"{slot}.{f}": getattr(getattr(self, slot), f).copy()
                   for slot in ("all", "after") for f in _SLOT_FIELDS}}

    def load_state(self, st: dict[str, Any]) -> None:
        self.tau_interp = np.asarray(st["tau_interp"]).copy()
        for slot in ("all", "after"):
            for f in _SLOT_FIELDS:
                setattr(getattr(self, slot), f, np.asarray(st[f"{slot}.{f}"]).copy())

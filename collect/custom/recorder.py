"""A recorder for any training loop: what the built-in engine records about a run, from a few calls a loop makes.

A plain loop constructs one :class:`Recorder` after initialising its model (the probe) and building its optimizer,
then calls ``rec.step(loss)`` after each optimizer step and ``rec.evaluate(epoch, train=..., val=..., test=...)``
at epoch 0 (before any step) and at the end of each epoch::

    rec = initmem.Recorder(optimizer, model, path="run.nc", batch_size=64, n_test=len(test_set))
    rec.evaluate(0, train=(acc, loss), val=(acc, loss), test=(acc, loss), predictions=pred)
    for epoch in range(1, epochs + 1):
        for x, y in loader:
            ...; optimizer.step(); scheduler.step(); rec.step(loss)
        rec.evaluate(epoch, train=..., val=..., test=..., predictions=pred)
    rec.finish()

What it records, in the engine's cube schema (initmem/cube/schema.py; one run: pipeline, sigma_w and seed dims of
length 1), so that a shard merge builds the cube of a grid of such runs:

* the schedule clocks of initmem/clocks.py, summed over the optimizer steps from the ``param_groups`` the step
  used. A pre-step hook on the optimizer reads them at the moment of each step, so the order of
  ``scheduler.step()`` and ``rec.step`` does not matter and a step that a gradient scaler skips is not counted.
  The settings are those of the parameter groups that hold kernels; where those groups disagree (per-layer
  learning rates) the value is unknown and every clock built on it is NaN from that step on. How weight decay
  acts (coupled L2 or decoupled) and whether the kind is adaptive or has heavy-ball momentum come from the
  optimizer table (initmem/optimizers.py) by the optimizer's class; an optimizer not in the table declares
  them (``decay``, ``adaptive``, ``heavy_ball``), and an undeclared one leaves the clocks that need them NaN
  (absent), never guessed; a weight decay of 0 makes T_l2 and T_wd 0 whatever the kind. ``T_sgd`` needs
  ``batch_size``;
* the measured clocks of collect/train/measure.py (angular path, cosine to init, eta/||w||^2, T_angle, T_eff)
  from the kernels of the probe's kernel rule (:func:`initmem.collect.custom.probe.kernels`);
* the kernel norms (per layer and overall) for the radial readout, at every evaluation;
* train, validation and test accuracy and loss at each evaluation (a split not given is NaN there, as
  between the engine's ``eval.every`` evaluations), the interpolation time and the checkpoint the grid's
  ``eval.select`` rule picks (online, as the engine: :class:`initmem.grid.select.Selector`), with its
  per-example test predictions when given;
* the run's status: a non-finite loss passed to :meth:`Recorder.step` marks the run diverged; its curves are
  NaN from the next evaluation on, as the engine's frozen members.

:meth:`Recorder.save` writes the run record atomically (initmem/atomic.py, through ``initmem.cube``) and a state
file beside it (``<record>.state.pt``: the recorder, the model's and optimizer's ``state_dict`` and the loop's own
``extra``), by default at every evaluation; :meth:`Recorder.resume` restores all of it from the last evaluation,
and the loop goes on at :attr:`Recorder.next_epoch`. A run trained so, with the engine's data order, gives the
engine's curves bitwise (tests/test_recorder.py).

A run evaluated at other weights than it trains (an EMA of the weights, a schedule-free optimizer's average after
its ``.eval()``) calls ``rec.evaluate`` while those weights are in the model: the kernel norms are then those of
the evaluated weights, as the engine's, and the measured clocks follow the weights the steps made, as the engine's.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import xarray as xr
from torch import nn

from initmem import clocks, cube, optimizers
from initmem.atomic import atomic_path
from initmem.collect.custom.probe import Kernel, kernels
from initmem.collect.execution.fault_hooks import hook
from initmem.collect.train.coords import machine_attrs
from initmem.collect.train.measure import StepMeter
from initmem.errors import UserError
from initmem.grid.schema import EvalSpec
from initmem.grid.select import DEFAULT_RULE, SELECT_RULES, Selector
from initmem.version import __version__

STATE_SUFFIX = ".state.pt"
STATE_VERSION = 1
A_RUN_COMPLETE = "run_complete"       # 1 once Recorder.finish() wrote the record, 0 for a run still going
A_OPTIMIZER_CLASS = "optimizer_class"  # the optimizer's module and class, as the loop built it
DEFAULT_THRESHOLD: float = EvalSpec.model_fields["interp_threshold"].default  # the grid's default
DEFAULT_COORDS = {cube.PIPELINE: "run", cube.SIGMA: 1.0, cube.SEED: 0}
EVAL_VARS = (cube.TRAIN_ACC, cube.TRAIN_LOSS, cube.VAL_ACC, cube.VAL_LOSS, cube.TEST_ACC, cube.TEST_LOSS)
DECAYS = (optimizers.COUPLED, optimizers.DECOUPLED)


def state_path(path: str | os.PathLike) -> Path:
    """The state file beside a run record."""
    p = Path(path)
    return p.with_name(p.name + STATE_SUFFIX)


@dataclass(frozen=True)
class OptimizerTraits:
    """What the clocks need to know about an optimizer's kind; None: not known (the clocks that need it are NaN)."""

    name: str             # the table's kind name, or the class name of an optimizer not in it
    decay: str | None     # coupled | decoupled
    adaptive: bool | None
    heavy_ball: bool | None

    @classmethod
    def of(cls, optimizer: torch.optim.Optimizer, decay: str | None = None, adaptive: bool | None = None,
           heavy_ball: bool | None = None) -> OptimizerTraits:
        """From the optimizer table by class (module and name), else from the declarations."""
        klass = type(optimizer)
        if decay is not None and decay not in DECAYS:
            raise UserError(f"decay: {decay!r} is not one of {', '.join(DECAYS)}")
        for kind in optimizers.OPTIMIZERS:
            if klass.__name__ == kind.torch_class and klass.__module__.split(".")[0] == kind.module.split(".")[0]:
                if decay is not None and decay != kind.l2:
                    raise UserError(f"decay: {kind.display}'s weight decay is {kind.l2} (initmem/optimizers.py), "
                                    f"not {decay}")
                return cls(kind.name, kind.l2, kind.adaptive, kind.momentum)
        return cls(klass.__name__, decay, adaptive, heavy_ball)


@dataclass
class _Row:
    """One recorded epoch."""

    epoch: int
    steps: int                        # optimizer steps taken before it
    lr_read: float                    # the kernels' learning rate in param_groups when it was recorded
    metrics: dict[str, float]
    norms: np.ndarray                 # [L] float64 of the float32 Frobenius norms
    sq_norm: np.ndarray | None = None     # [L] ||w||^2 (float64), for eff_lr
    cos: np.ndarray | None = None
    path: np.ndarray | None = None
    t_angle: float = math.nan
    t_eff: float = math.nan
    blank: bool = False               # after divergence: every value NaN


def _same(groups: Sequence[Mapping[str, Any]], key: str, index: int | None = None) -> float:
    """The value of ``key`` shared by every group, NaN where one lacks it or they differ."""
    first = None
    for g in groups:
        v = g.get(key)
        if v is None:
            return math.nan
        if index is not None:
            v = v[index]
        v = float(v)
        if first is None:
            first = v
        elif v != first:
            return math.nan
    return math.nan if first is None else first


@dataclass
class _Steps:
    """The settings of every optimizer step (the kernels' groups)."""

    lr: list[float] = field(default_factory=list)
    weight_decay: list[float] = field(default_factory=list)
    momentum: list[float] = field(default_factory=list)


class Recorder:
    """Record one run of a user's training loop as the engine records a cell (module docstring).

    Parameters
    ----------
    optimizer, model
        The loop's optimizer and model, after the probe and before the first step (the measured clocks
        start from the kernels as they are now).
    path
        The run record (a single-run cube file); its state file lies beside it. None: nothing is written
        unless :meth:`save` is given a path.
    coords
        The run's cube coordinates: ``pipeline``, ``sigma_w``, ``seed`` and, for a crossed design,
        ``init_seed`` and ``data_seed``.
    batch_size
        Examples per optimizer step, for ``T_sgd``; None leaves it NaN.
    decay, adaptive, heavy_ball
        For an optimizer that is not in initmem/optimizers.py: how its weight decay acts (``coupled`` or
        ``decoupled``), whether it is adaptive (``T_adapt``), whether ``momentum`` is heavy-ball momentum.
    select, interp_threshold
        The grid's checkpoint rule (``eval.select``) and interpolation threshold.
    n_test, test_labels
        The test split's size and labels (for the per-example predictions and ``selected_test_correct``);
        the size also follows from either labels or predictions.
    measure_clocks
        Record the measured clocks (the grid's ``engine.measure_clocks``).
    normalized, member
        As :func:`initmem.collect.custom.probe.kernels`.
    attrs
        Global attributes for the record (a grid's cube attributes, say), over the recorder's own.
    pipeline_coords
        Per-pipeline coordinates of the record; None: those the optimizer shows (kind, lr, momentum, decay,
        betas, batch size, epochs).
    checkpoint
        With ``path``: save the record and the state at every evaluation.

    Examples
    --------
    A two-epoch loop on eight examples, recorded into ``run.nc`` (a single-run record the collector merges):

    >>> import torch
    >>> import initmem
    >>> model = torch.nn.Linear(4, 2)
    >>> _ = initmem.apply_probe(model, 1.0, init_seed=0)
    >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> rec = initmem.Recorder(optimizer, model, path="run.nc", batch_size=8,
    ...                        coords={"pipeline": "sgd", "sigma_w": 1.0, "seed": 0})
    >>> x, y = torch.randn(8, 4, generator=torch.Generator().manual_seed(0)), torch.tensor([0, 1] * 4)
    >>> def scores():
    ...     with torch.no_grad():
    ...         out = model(x)
    ...     return float((out.argmax(1) == y).float().mean()), float(torch.nn.functional.cross_entropy(out, y))
    >>> rec.evaluate(0, train=scores(), val=scores(), test=scores())
    >>> for epoch in (1, 2):
    ...     loss = torch.nn.functional.cross_entropy(model(x), y)
    ...     optimizer.zero_grad(); loss.backward(); optimizer.step(); rec.step(loss)
    ...     rec.evaluate(epoch, train=scores(), val=scores(), test=scores())
    >>> rec.finish()
    PosixPath('run.nc')
    >>> dict(initmem.open_cube("run.nc", check=False).sizes)
    {'pipeline': 1, 'sigma_w': 1, 'seed': 1, 'epoch': 3, 'layer': 1}
    """

    def __init__(self, optimizer: torch.optim.Optimizer, model: nn.Module, *, path: str | os.PathLike | None = None,
                 coords: Mapping[str, Any] | None = None, batch_size: int | None = None, decay: str | None = None,
                 adaptive: bool | None = None, heavy_ball: bool | None = None, select: str = DEFAULT_RULE,
                 interp_threshold: float = DEFAULT_THRESHOLD, n_test: int | None = None,
                 test_labels: Any = None, measure_clocks: bool = True, normalized: Iterable[str] | None = None,
                 member: int = 0, attrs: Mapping[str, Any] | None = None,
                 pipeline_coords: Mapping[str, Any] | None = None, checkpoint: bool = True):
        if select not in SELECT_RULES:
            raise UserError(f"select: {select!r} is not one of {', '.join(SELECT_RULES)}")
        if batch_size is not None and int(batch_size) < 1:
            raise UserError(f"batch_size: {batch_size!r} is not a positive integer")
        self.optimizer, self.model = optimizer, model
        self.path = None if path is None else Path(path)
        self.coords = self._check_coords(coords)
        self.batch_size = None if batch_size is None else int(batch_size)
        self.traits = OptimizerTraits.of(optimizer, decay, adaptive, heavy_ball)
        self.select, self.interp_threshold = select, float(interp_threshold)
        self.test_labels = None if test_labels is None else np.asarray(
            test_labels.cpu() if isinstance(test_labels, torch.Tensor) else test_labels).astype("int64").ravel()
        if self.test_labels is not None and n_test is not None and len(self.test_labels) != int(n_test):
            raise UserError(f"n_test: {n_test} disagrees with the {len(self.test_labels)} test labels")
        self.n_test = int(n_test) if n_test is not None else (None if self.test_labels is None
                                                              else len(self.test_labels))
        self.attrs = dict(attrs or {})
        self.pipeline_coords = None if pipeline_coords is None else dict(pipeline_coords)
        self.checkpoint = checkpoint
        self.kernels: list[Kernel] = kernels(model, member=member, normalized=normalized)
        self.layers = [k.name for k in self.kernels]
        self._kernel_groups = self._groups_with_kernels()
        self.meter = StepMeter([k.value().unsqueeze(0) for k in self.kernels],
                               [bool(k.normalized) for k in self.kernels]) if measure_clocks else None
        self.steps = _Steps()
        self.rows: list[_Row] = []
        self.selector = Selector(1, self.n_test or 0, select, self.interp_threshold)
        self.diverged_epoch: int | None = None
        self.complete = False
        self.extra: dict[str, Any] = {}
        self.wall = 0.0
        self._t0 = time.perf_counter()
        self._finite: torch.Tensor | None = None  # AND of every tensor loss's finiteness (no sync per step)
        self._bad_float = False
        self._first_settings: dict[str, float] | None = None
        self._hooks = [optimizer.register_step_pre_hook(self._before_step),
                       optimizer.register_step_post_hook(self._after_step)]

    # -- set-up ----------------------------------------------------------------------------------
    @staticmethod
    def _check_coords(coords: Mapping[str, Any] | None) -> dict[str, Any]:
        out = dict(DEFAULT_COORDS)
        for key, value in (coords or {}).items():
            if key not in (*cube.CELL_DIMS, *cube.SEED_COORDS):
                raise UserError(f"coords: unknown coordinate {key!r} (known: "
                                f"{', '.join((*cube.CELL_DIMS, *cube.SEED_COORDS))})")
            out[key] = value
        out[cube.PIPELINE] = str(out[cube.PIPELINE])
        out[cube.SIGMA] = float(out[cube.SIGMA])
        out[cube.SEED] = int(out[cube.SEED])
        for key in cube.SEED_COORDS:
            if key in out:
                out[key] = int(out[key])
        if (cube.INIT_SEED in out) != (cube.DATA_SEED in out):
            raise UserError(f"coords: give both {cube.INIT_SEED} and {cube.DATA_SEED}, or neither")
        return out

    def _groups_with_kernels(self) -> list[int]:
        ids = {id(k.weight) for k in self.kernels}
        groups = [i for i, g in enumerate(self.optimizer.param_groups) if any(id(p) in ids for p in g["params"])]
        if not groups:
            raise UserError(f"optimizer: none of its parameter groups holds a kernel of {type(self.model).__name__}")
        return groups

    # -- the optimizer's hooks -----------------------------------------------------------------
    def _settings(self) -> tuple[float, float, float]:
        pg = self.optimizer.param_groups
        groups = [pg[i] for i in self._kernel_groups]
        return _same(groups, "lr"), _same(groups, "weight_decay"), _same(groups, "momentum")

    def _before_step(self, _optimizer: Any, _args: Any, _kwargs: Any) -> None:
        lr, wd, mom = self._settings()
        s = self.steps
        s.lr.append(lr)
        s.weight_decay.append(wd)
        s.momentum.append(mom)
        if self._first_settings is None:
            self._first_settings = self._observed()
        if self.meter is not None:
            self.meter.before_step(lr)

    def _after_step(self, _optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if self.meter is not None:
            self.meter.after_step()

    def _observed(self) -> dict[str, float]:
        groups = [self.optimizer.param_groups[i] for i in self._kernel_groups]
        initial = _same(groups, "initial_lr")   # set by torch's schedulers: the rate they scale
        return {"lr": initial if math.isfinite(initial) else _same(groups, "lr"),
                "momentum": _same(groups, "momentum"), "weight_decay": _same(groups, "weight_decay"),
                "nesterov": _same(groups, "nesterov"), "beta1": _same(groups, "betas", 0),
                "beta2": _same(groups, "betas", 1)}

    # -- the loop's calls ------------------------------------------------------------------------
    def step(self, loss: Any) -> None:
        """After an optimizer step: the step's training loss (a float or a tensor); not finite -> diverged.

        A tensor is checked on its device and read only at the next evaluation, so a step costs no device sync.
        """
        if isinstance(loss, torch.Tensor):
            ok = torch.isfinite(loss.detach()).all()
            self._finite = ok if self._finite is None else self._finite & ok
        elif not math.isfinite(float(loss)):
            self._bad_float = True

    @property
    def diverged(self) -> bool:
        """Whether a loss given to :meth:`step` was not finite."""
        if self.diverged_epoch is not None or self._bad_float:
            return True
        return self._finite is not None and not bool(self._finite)

    @property
    def next_epoch(self) -> int:
        """The first epoch the loop still has to train: one after the last evaluation (0 before any)."""
        return self.rows[-1].epoch + 1 if self.rows else 0

    def evaluate(self, epoch: int, *, train: tuple[float, float] | None = None,
                 val: tuple[float, float] | None = None, test: tuple[float, float] | None = None,
                 predictions: Any = None, extra: Mapping[str, Any] | None = None) -> None:
        """Record epoch ``epoch``: the split metrics given as ``(accuracy, loss)``, the kernel norms, the clocks.

        Epoch 0 is before any step; epochs increase. ``predictions``: the predicted class of every test example
        (the selected epoch's are kept). ``extra``: the loop's own state to save with this evaluation (data
        order generators, a scheduler's state), given back by :meth:`resume` as :attr:`extra`.
        """
        epoch = int(epoch)
        if epoch < self.next_epoch:
            raise UserError(f"epoch: {epoch} was already recorded (epochs increase; next is {self.next_epoch})")
        if extra is not None:
            self.extra = dict(extra)
        lr_read = self._settings()[0]
        if self.diverged:
            if self.diverged_epoch is None:
                self.diverged_epoch = epoch
            self.rows.append(_Row(epoch, len(self.steps.lr), lr_read, {}, np.full(len(self.layers), np.nan),
                                  blank=True))
        else:
            self._record(epoch, lr_read, train, val, test, predictions)
        self.wall = time.perf_counter() - self._t0
        if self.path is not None and self.checkpoint:
            self.save()
        hook("evaluate")   # a crash test's fault point inside the user's loop (inert unless INITMEM_TEST_HOOK is set)

    def _record(self, epoch: int, lr_read: float, train: tuple[float, float] | None,
                val: tuple[float, float] | None, test: tuple[float, float] | None, predictions: Any) -> None:
        metrics: dict[str, float] = {}
        for (acc_name, loss_name), split in zip(((cube.TRAIN_ACC, cube.TRAIN_LOSS), (cube.VAL_ACC, cube.VAL_LOSS),
                                                 (cube.TEST_ACC, cube.TEST_LOSS)), (train, val, test), strict=True):
            if split is not None:
                acc, loss = split
                metrics[acc_name], metrics[loss_name] = float(acc), float(loss)
        with torch.no_grad():
            cols = [k.value().detach().float().reshape(1, -1).norm(dim=1) for k in self.kernels]
            norms = torch.stack(cols, dim=1).double().cpu().numpy()[0]
        row = _Row(epoch, len(self.steps.lr), lr_read, metrics, norms)
        if self.meter is not None:
            m = self.meter
            row.sq_norm = (m.prev_norm ** 2).cpu().numpy()[0]
            row.cos = m.cos_to_init().cpu().numpy()[0]
            row.path = m.path.cpu().numpy()[0].copy()
            row.t_angle = float(m.t_angle().cpu().numpy()[0])
            row.t_eff = float(m.t_eff_now().cpu().numpy()[0])
        self.rows.append(row)
        pred = self._predictions(predictions)
        if train is not None and val is not None and test is not None:
            self.selector.update(0, epoch, metrics[cube.TRAIN_ACC], metrics[cube.VAL_ACC], metrics[cube.VAL_LOSS],
                                 metrics[cube.TEST_ACC], pred)

    def _predictions(self, predictions: Any) -> np.ndarray:
        if predictions is None:
            return np.full(self.n_test or 0, -1, dtype=np.int64)
        pred = np.asarray(predictions.detach().cpu() if isinstance(predictions, torch.Tensor) else predictions)
        pred = pred.astype(np.int64).ravel()
        if self.n_test is None:
            self.n_test = len(pred)
            self.selector = _resized(self.selector, self.n_test)
        if len(pred) != self.n_test:
            raise UserError(f"predictions: {len(pred)} predictions for {self.n_test} test examples")
        return pred

    def finish(self) -> Path | None:
        """Mark the run complete, write the record (with ``path``) and take the hooks off the optimizer."""
        self.complete = True
        self.wall = time.perf_counter() - self._t0
        self.close()
        return self.save() if self.path is not None else None

    def close(self) -> None:
        """Take the recorder's hooks off the optimizer (it records no further step)."""
        for h in self._hooks:
            h.remove()
        self._hooks = []

    # -- the record --------------------------------------------------------------------------------
    def clock_table(self) -> dict[str, np.ndarray]:
        """Every schedule clock, ``step`` and ``lr_now`` at each recorded epoch (float64, NaN where unknown)."""
        ends = np.asarray([r.steps for r in self.rows], dtype=np.int64)
        eta = np.asarray(self.steps.lr, dtype=np.float64)
        wd = np.asarray(self.steps.weight_decay, dtype=np.float64)
        mom = np.asarray(self.steps.momentum, dtype=np.float64)
        t = self.traits
        if t.heavy_ball is None:   # not known whether a momentum acts as heavy-ball: only none is certain
            factor = np.where(mom == 0, 1.0, np.nan)
        elif t.heavy_ball:
            factor = np.where(mom > 0, 1.0 / (1.0 - mom), np.where(mom == 0, 1.0, np.nan))
        else:
            factor = np.ones_like(eta)
        eff = eta * factor
        coupled = wd if t.decay == optimizers.COUPLED else np.where(wd == 0, 0.0, np.nan) if t.decay is None \
            else np.zeros_like(wd)
        decoupled = wd if t.decay == optimizers.DECOUPLED else np.where(wd == 0, 0.0, np.nan) if t.decay is None \
            else np.zeros_like(wd)
        const_c, const_d = _constant(coupled), _constant(decoupled)
        steps = clocks.Steps(eta=eta, eff=eff, ends=ends, batch_size=self.batch_size or 1,
                             coupled_l2=0.0 if const_c is None else const_c,
                             decoupled_wd=0.0 if const_d is None else const_d, adaptive=bool(t.adaptive))
        out = clocks.schedule_clocks(steps)
        if const_c is None:       # a decay that changes over the steps: the same sums, step by step
            out[clocks.T_L2] = steps.cum(coupled * eta)
            out[clocks.T_L2_MOM] = steps.cum(coupled * eff)
        if const_d is None:
            out[clocks.T_WD] = steps.cum(decoupled * eta)
        if self.batch_size is None:
            out[clocks.T_SGD] = out[clocks.T_SGD_MOM] = np.full(len(ends), np.nan)
        if t.adaptive is None:
            out[clocks.T_ADAPT] = np.full(len(ends), np.nan)
        first = eta[0] if eta.size else (self.rows[0].lr_read if self.rows else math.nan)
        lr_now = np.asarray([eta[e - 1] if e > 0 else first for e in ends], dtype=np.float64)
        return {clocks.STEP: ends.astype(np.float64), clocks.LR_NOW: lr_now, **out}

    def dataset(self) -> xr.Dataset:
        """The run as a single-run cube in the engine's shard schema (dims pipeline, sigma_w, seed of length 1)."""
        if not self.rows:
            raise UserError("recorder: nothing recorded yet (call evaluate(0) before the first step)")
        E, L = len(self.rows), len(self.layers)
        curves = {v: np.full(E, np.nan) for v in cube.CURVE_VARS}
        layer = {v: np.full((E, L), np.nan) for v in cube.LAYER_VARS}
        table = self.clock_table()
        for i, r in enumerate(self.rows):
            if r.blank:
                continue
            for k, v in r.metrics.items():
                curves[k][i] = v
            norms = r.norms[None, :]
            curves[cube.KERNEL_NORM][i] = np.sqrt((norms ** 2).sum(1))[0]
            for c in (cube.STEP, cube.LR_NOW, *cube.SCHEDULE_CLOCKS):
                curves[c][i] = table[c][i]
            layer[cube.LAYER_NORM][i] = r.norms
            if r.sq_norm is not None:
                normalised = np.asarray([bool(k.normalized) for k in self.kernels])
                curves[cube.T_ANGLE][i], curves[cube.T_EFF][i] = r.t_angle, r.t_eff
                layer[cube.COS_TO_INIT][i], layer[cube.ANGULAR_PATH][i] = r.cos, r.path
                layer[cube.EFF_LR][i] = np.where(normalised, table[cube.LR_NOW][i] / r.sq_norm, np.nan)
        return self._assemble(curves, layer)

    def _assemble(self, curves: dict[str, np.ndarray], layer: dict[str, np.ndarray]) -> xr.Dataset:
        epochs = np.asarray([r.epoch for r in self.rows], dtype="int64")
        hit = np.nonzero(curves[cube.TRAIN_ACC] >= self.interp_threshold)[0]
        sel = self.selector.selected()
        cd, ed = cube.CELL_DIMS, cube.CURVE_DIMS
        one = (1, 1, 1)
        data: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
        for v in cube.CURVE_VARS:
            data[v] = (ed, curves[v].reshape(*one, -1))
        for v in cube.LAYER_VARS:
            data[v] = ((*ed, cube.LAYER), layer[v].reshape(*one, *layer[v].shape))
        first_is_init = self.rows[0].epoch == 0
        run = {
            cube.TAU_INTERP: float(epochs[hit[0]]) if hit.size else np.nan,
            cube.TAU_BEST: sel["tau"][0], cube.SELECTED_VAL_ACC: sel["val"][0], cube.SELECTED_TEST_ACC: sel["test"][0],
            cube.FINAL_TEST_ACC: curves[cube.TEST_ACC][-1],
            cube.INIT_KERNEL_NORM: curves[cube.KERNEL_NORM][0] if first_is_init else np.nan,
            cube.WALL_SECONDS: self.wall,
        }
        int_dtype = {name: dtype for name, (dtype, _fill) in cube.INT_VARS.items()}
        status = cube.DIVERGED if self.diverged_epoch is not None else cube.OK
        data[cube.STATUS] = (cd, np.full(one, status, dtype=int_dtype[cube.STATUS]))
        for k, v in run.items():
            data[k] = (cd, np.full(one, v, dtype="float64"))
        coords: dict[str, Any] = {
            cube.PIPELINE: np.array([self.coords[cube.PIPELINE]], dtype=object),
            cube.SIGMA: np.asarray([self.coords[cube.SIGMA]], dtype="float64"),
            cube.SEED: np.asarray([self.coords[cube.SEED]], dtype="int64"),
            **{k: (cube.SEED, np.asarray([self.coords[k]], dtype="int64")) for k in cube.SEED_COORDS
               if k in self.coords},
            cube.EPOCH: epochs,
            cube.LAYER: np.array(self.layers, dtype=object),
        }
        if self.n_test is not None:
            coords[cube.EXAMPLE] = np.arange(self.n_test, dtype="int64")
            data[cube.SELECTED_TEST_CORRECT] = (cd, np.full(one, sel["correct"][0],
                                                            dtype=int_dtype[cube.SELECTED_TEST_CORRECT]))
            pred = sel["pred"].reshape(*one, -1).astype(int_dtype[cube.TEST_PRED])
            data[cube.TEST_PRED] = ((*cd, cube.EXAMPLE), pred)
            labels = self.test_labels if self.test_labels is not None else np.full(self.n_test, -1)
            data[cube.TEST_LABEL] = ((cube.EXAMPLE,), labels.astype(int_dtype[cube.TEST_LABEL]))
        for name, value in self._pipeline_coords().items():
            coords[name] = (cube.PIPELINE, np.array([value], dtype=object if isinstance(value, str) else None))
        ds = xr.Dataset({k: xr.Variable(d, a) for k, (d, a) in data.items()}, coords=coords)
        ds.attrs = self._attrs()
        return cube.canonicalize(ds)

    def _pipeline_coords(self) -> dict[str, Any]:
        if self.pipeline_coords is not None:
            return self.pipeline_coords
        seen = self._first_settings or self._observed()
        t = self.traits
        out: dict[str, Any] = {"optimizer": t.name, "lr": seen["lr"], "momentum": seen["momentum"],
                               "weight_decay": seen["weight_decay"], "epochs": int(self.rows[-1].epoch)}
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if math.isfinite(seen["nesterov"]):
            out["nesterov"] = int(seen["nesterov"])
        if t.decay is not None and math.isfinite(seen["weight_decay"]):
            wd = seen["weight_decay"]
            out["l2"], out["decoupled_wd"] = (wd, 0.0) if t.decay == optimizers.COUPLED else (0.0, wd)
        out["beta1"], out["beta2"] = seen["beta1"], seen["beta2"]
        return {k: (float(v) if isinstance(v, float) else v) for k, v in out.items()}

    def _attrs(self) -> dict[str, Any]:
        device = str(self.kernels[0].weight.device)
        attrs: dict[str, Any] = {
            cube.A_SCHEMA: cube.SCHEMA, cube.A_INTERP_THRESHOLD: self.interp_threshold, cube.A_SELECT: self.select,
            cube.A_INITMEM_VERSION: __version__, cube.A_TORCH_VERSION: torch.__version__,
            cube.A_DEVICE: device, **machine_attrs(),
            cube.A_CREATED: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            A_OPTIMIZER_CLASS: f"{type(self.optimizer).__module__}.{type(self.optimizer).__qualname__}",
        }
        if self.n_test is not None:
            attrs[cube.A_N_TEST] = int(self.n_test)
        attrs.update(self.attrs)
        attrs[A_RUN_COMPLETE] = int(self.complete)
        return attrs

    # -- saving and resuming ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The recorder's state at its last evaluation (what :meth:`resume` restores)."""
        return {"version": STATE_VERSION, "layers": list(self.layers), "coords": dict(self.coords),
                "steps": {"lr": list(self.steps.lr), "weight_decay": list(self.steps.weight_decay),
                          "momentum": list(self.steps.momentum)},
                "rows": [vars(r).copy() for r in self.rows],
                "selector": self.selector.to_state(), "n_test": self.n_test,
                "diverged_epoch": self.diverged_epoch, "finite": self.diverged is False,
                "meter": None if self.meter is None else self.meter.state_dict(), "wall": self.wall,
                "first_settings": self._first_settings, "complete": self.complete}

    def save(self, path: str | os.PathLike | None = None, *, extra: Mapping[str, Any] | None = None) -> Path:
        """Write the run record and, beside it, the state (recorder, model, optimizer, ``extra``), each atomically.

        The state goes first: a crash between the two leaves a record one evaluation behind its state, which the
        next evaluation rewrites; never a record that a resume would contradict.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise UserError("path: the recorder has no path to save to (give one to Recorder or save)")
        if extra is not None:
            self.extra = dict(extra)
        payload = {"recorder": self.state(), "model": self.model.state_dict(),
                   "optimizer": self.optimizer.state_dict(), "extra": self.extra}
        with atomic_path(state_path(target)) as tmp:
            torch.save(payload, tmp)
        cube.write_cube(self.dataset(), target)
        return target

    @classmethod
    def resume(cls, path: str | os.PathLike, optimizer: torch.optim.Optimizer, model: nn.Module,
               **kwargs: Any) -> Recorder:
        """A recorder for ``path``: restored with the model and optimizer to its last evaluation when its state
        file exists (the loop goes on at :attr:`next_epoch`, its own state in :attr:`extra`), else a new one.

        ``kwargs`` are :class:`Recorder`'s keywords, as the run was started with.
        """
        rec = cls(optimizer, model, path=path, **kwargs)
        sp = state_path(path)
        if not sp.is_file():
            return rec
        try:
            payload = torch.load(sp, map_location="cpu", weights_only=False)
        except Exception as exc:  # a state file that does not load: named, never half-restored
            raise UserError(f"path: the recorder state {sp} does not load ({type(exc).__name__}: {exc})") from None
        st = payload["recorder"]
        rec.check_state(st, f"path: the recorder state {sp}")
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
        rec.load_state(st)
        rec.extra = dict(payload.get("extra") or {})
        return rec

    def check_state(self, st: Mapping[str, Any], what: str) -> None:
        """Refuse a state (:meth:`state`) of another run: other kernels, coordinates or state version."""
        if st.get("version") != STATE_VERSION or st.get("layers") != self.layers or st.get("coords") != self.coords:
            raise UserError(f"{what} belongs to another run (its kernels or coordinates differ, or another state "
                            "version)")

    def load_state(self, st: Mapping[str, Any]) -> None:
        """Continue from a state (:meth:`state`) taken at the weights the model holds now (a checkpoint's)."""
        self.check_state(st, "the recorder state")
        self._load(dict(st))

    def _load(self, st: dict[str, Any]) -> None:
        self.steps = _Steps(**{k: list(v) for k, v in st["steps"].items()})
        self.rows = [_Row(**r) for r in st["rows"]]
        self.n_test = st["n_test"]
        self.selector = Selector(1, self.n_test or 0, self.select, self.interp_threshold)
        self.selector.load_state(st["selector"])
        self.diverged_epoch = st["diverged_epoch"]
        self._bad_float = not st["finite"]
        if self.meter is not None:
            if st["meter"] is None:
                raise UserError("measure_clocks: the run was recorded without the measured clocks")
            self.meter.load_state_dict(st["meter"])
        self.wall = float(st["wall"])
        self._t0 = time.perf_counter() - self.wall
        self._first_settings = st["first_settings"]
        self.complete = bool(st["complete"])


def _constant(values: np.ndarray) -> float | None:
    """The one value of a per-step array (0.0 for no steps), None where it changes or is not known."""
    if values.size == 0:
        return 0.0
    first = values[0]
    if np.isnan(first) or not (values == first).all():
        return None
    return float(first)


def _resized(selector: Selector, n_test: int) -> Selector:
    """``selector`` for ``n_test`` test examples, once the first predictions tell their number (the epochs it
    has seen had none: their predictions stay -1)."""
    out = Selector(1, n_test, selector.rule, selector.threshold)
    st = selector.to_state()
    for slot in ("all", "after"):
        st[f"{slot}.pred"] = np.full((1, n_test), -1, dtype=np.int64)
    out.load_state(st)
    return out

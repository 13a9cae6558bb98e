"""The recorder as a PyTorch Lightning callback: a ``LightningModule``'s training recorded as a plain loop's.

:class:`RecorderCallback` builds a :class:`~initmem.collect.custom.recorder.Recorder` once the trainer has set
up the module's optimizer (``on_fit_start``) and feeds it from the trainer's hooks:

* ``on_train_batch_end``: the training step's loss (``training_step``'s return value, or its ``"loss"``);
  the clocks come from the optimizer's own step hooks, so gradient accumulation and skipped steps count right;
* ``on_validation_end``: the evaluation of the epoch just trained (epoch ``current_epoch + 1``), with the split
  metrics read from ``trainer.callback_metrics`` under the names given in ``metrics`` (what the module logs:
  a split whose names are not there is NaN for that epoch), and the test predictions from the module attribute
  ``predictions`` when the module sets it (a 1-D tensor of predicted classes, one per test example);
* epoch 0 (before any step) is the sanity check's evaluation when the trainer runs it over the whole
  validation loaders (``num_sanity_val_steps=-1``), else the kernel norms and clocks alone;
* ``on_train_epoch_end``: an epoch that was not validated records its kernel norms and clocks alone;
* ``on_train_end``: :meth:`~initmem.collect.custom.recorder.Recorder.finish`.

Validation once per epoch at most (``val_check_interval`` 1.0; ``check_val_every_n_epoch`` may skip epochs).
To evaluate the training, validation and test splits at each epoch, return the three loaders from
``val_dataloader`` and log each split's accuracy and loss under its own name (``add_dataloader_idx=False``).
The recorder's state travels in Lightning's checkpoints (the callback's ``state_dict``): a run resumed with
``fit(ckpt_path=...)`` continues its record from the checkpoint, as a plain loop's ``Recorder.resume`` does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch

from initmem.collect.custom.recorder import Recorder
from initmem.errors import UserError

DEFAULT_METRICS: dict[str, tuple[str, str]] = {"train": ("train_acc", "train_loss"), "val": ("val_acc", "val_loss"),
                                               "test": ("test_acc", "test_loss")}


class RecorderCallback(pl.Callback):
    """Record a Lightning run with initmem's recorder (module docstring).

    Parameters
    ----------
    path : str or os.PathLike, optional
        The run record (:class:`Recorder`'s ``path``).
    metrics : mapping of str to (str, str), optional
        For ``train``, ``val`` and ``test``: the names of the logged accuracy and loss.
    predictions : str
        The module attribute that holds the test predictions of the last validation, if the module sets it.
    optimizer_index : int
        Which of the trainer's optimizers the clocks follow.
    **recorder_options
        :class:`Recorder`'s keywords (``coords``, ``batch_size``, ``n_test``, ``test_labels``, ``select``, ...).
    """

    def __init__(self, path: str | os.PathLike | None = None, *, metrics: Mapping[str, tuple[str, str]] | None = None,
                 predictions: str = "test_predictions", optimizer_index: int = 0, **recorder_options: Any):
        super().__init__()
        self.path = path
        self.metrics = dict(DEFAULT_METRICS if metrics is None else metrics)
        unknown = sorted(set(self.metrics) - set(DEFAULT_METRICS))
        if unknown:
            raise UserError(f"metrics: unknown split {unknown[0]!r} (train, val, test)")
        self.predictions = predictions
        self.optimizer_index = optimizer_index
        self.options = recorder_options
        self.recorder: Recorder | None = None
        self._sanity: dict[str, float] = {}
        self._restored: dict[str, Any] | None = None

    def _rec(self) -> Recorder:
        if self.recorder is None:
            raise RuntimeError("the recorder is made at on_fit_start")
        return self.recorder

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        optimizers = trainer.optimizers
        if not 0 <= self.optimizer_index < len(optimizers):
            raise UserError(f"optimizer_index: the module configures {len(optimizers)} optimizer(s)")
        self.recorder = Recorder(optimizers[self.optimizer_index], pl_module, path=self.path, **self.options)
        if self._restored is not None:   # fit(ckpt_path=...): the module holds the checkpoint's weights by now
            self.recorder.load_state(self._restored)
            self._restored = None

    def state_dict(self) -> dict[str, Any]:
        """The recorder's state, saved in Lightning's checkpoint (numpy arrays as tensors: a checkpoint loads
        with ``weights_only``)."""
        return {} if self.recorder is None else {"recorder": _portable(self.recorder.state())}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Keep a checkpoint's recorder state for :meth:`on_fit_start`, which makes the recorder."""
        st = state_dict.get("recorder")
        self._restored = None if st is None else _restored(st)

    def _splits(self, trainer: pl.Trainer) -> dict[str, tuple[float, float] | None]:
        found = dict(self._sanity) if trainer.sanity_checking else dict(trainer.callback_metrics)
        out: dict[str, tuple[float, float] | None] = {}
        for split in DEFAULT_METRICS:
            names = self.metrics.get(split)
            if names is None or names[0] not in found or names[1] not in found:
                out[split] = None
            else:
                out[split] = (float(found[names[0]]), float(found[names[1]]))
        return out

    def _evaluate(self, trainer: pl.Trainer, pl_module: pl.LightningModule, epoch: int) -> None:
        splits = self._splits(trainer)
        pred = getattr(pl_module, self.predictions, None)
        self._rec().evaluate(epoch, **splits, predictions=pred if isinstance(pred, torch.Tensor) else None)

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: ARG002
        """The sanity check's epoch metrics, which Lightning keeps out of ``callback_metrics``: read from the
        trainer's result collection (pinned Lightning version, tests/test_lightning.py); none where it differs."""
        if not trainer.sanity_checking:
            return
        wanted = {name for pair in self.metrics.values() for name in pair}
        try:
            self._sanity = {v.meta.name: float(v.compute()) for v in trainer._results.values()
                            if getattr(getattr(v, "meta", None), "name", None) in wanted}
        except (AttributeError, TypeError, RuntimeError):
            self._sanity = {}

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        rec = self.recorder
        if rec is None:
            return
        if trainer.sanity_checking:
            if rec.next_epoch == 0 and trainer.num_sanity_val_steps == float("inf"):
                self._evaluate(trainer, pl_module, 0)
            return
        self._evaluate(trainer, pl_module, trainer.current_epoch + 1)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: ARG002
        if self._rec().next_epoch == 0:
            self._rec().evaluate(0)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,  # noqa: ARG002
                           batch_idx: int) -> None:  # noqa: ARG002
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if loss is not None:
            self._rec().step(loss)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: ARG002
        rec = self._rec()
        if rec.next_epoch <= trainer.current_epoch + 1:
            rec.evaluate(trainer.current_epoch + 1)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:  # noqa: ARG002
        self._rec().finish()


_ARRAY = "__ndarray__"


def _portable(obj: Any) -> Any:
    """``obj`` with every numpy array as ``{_ARRAY: tensor}`` and numpy scalars as Python numbers."""
    if isinstance(obj, np.ndarray):
        return {_ARRAY: torch.from_numpy(obj.copy())}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _portable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_portable(v) for v in obj)
    return obj


def _restored(obj: Any) -> Any:
    """The inverse of :func:`_portable`."""
    if isinstance(obj, dict):
        if set(obj) == {_ARRAY}:
            return obj[_ARRAY].numpy().copy()
        return {k: _restored(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_restored(v) for v in obj)
    return obj

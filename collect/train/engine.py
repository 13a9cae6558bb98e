"""The training engine: G cells of one pipeline trained as one packed model.

Each member of a pack has its own init draws, data order, augmentation draws, BatchNorm
statistics, loss (averaged over its own batch) and optimizer state; nothing couples members
(no shared normalisation, no global gradient clipping). A member whose loss turns non-finite
is marked diverged and frozen; its curves are NaN from that epoch on.

Curves are recorded at epoch 0 (before any step) and at the end of every epoch; clocks are
accumulated from the learning rate actually used at every step.

Recipe knobs of a pipeline (collect/train/recipes.py): label smoothing enters the training loss
only; SAM takes a second forward/backward pass at each member's perturbed weights (BatchNorm's
running statistics update in the first pass only); with an EMA of the weights or a schedule-free
optimizer the recorded curves, kernel norms and checkpoint selection are those of the averaged
weights, with BatchNorm statistics recomputed for them (:meth:`PackTrainer.evaluated_weights`); dropout
(resnet1d) masks the pooled features in the training forwards only, each member's mask drawn from its own
dropout stream. The result is an
``xarray.Dataset`` in the cube layout of :mod:`initmem.cube` with a pipeline dim of length 1.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import xarray as xr

from initmem import cube
from initmem.collect.train.coords import cube_attrs, pipeline_coords
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic, device_kind, keep_freed_memory, resolve_device
from initmem.collect.train.measure import StepMeter
from initmem.collect.train.nets import kernel_norms
from initmem.collect.train.optim import PackedOptimizer
from initmem.collect.train.packed import PackedNet, use_channels_last
from initmem.collect.train.probes import build_for_grid, init_cell, mup_lr_factors, width_multipliers
from initmem.collect.train.recipes import Ema, bn_buffers, dropout_mask, recompute_bn_stats, restore, sam_perturb
from initmem.errors import UserError
from initmem.grid import Grid
from initmem.grid.select import Selector, tau_interp
from initmem.schedule import LrSchedule, epoch_clocks, steps_per_epoch

STATE_VERSION = 2
EVAL_VARS = (cube.TRAIN_LOSS, cube.TRAIN_ACC, cube.VAL_LOSS, cube.VAL_ACC, cube.TEST_LOSS, cube.TEST_ACC)
CURVES = cube.CURVE_VARS
SCHEDULE_CURVES = (cube.STEP, cube.LR_NOW, *cube.SCHEDULE_CLOCKS)  # what the schedule alone gives
# Independent random streams per seed: init draws, data order, augmentation draws, dropout masks.
STREAM_INIT, STREAM_ORDER, STREAM_AUG, STREAM_DROPOUT = 0, 1, 2, 3
# Whether evaluations run under torch.inference_mode and, on CPU, a convolutional pack's features in
# sub-batches of the training batch size (PackTrainer._eval_chunk). Neither changes a number;
# benchmarks/train_throughput.py turns them off to measure the difference.
FAST_EVAL = True


def seed_generator(seed: int, stream: int) -> torch.Generator:
    """A CPU generator for one (seed, stream); identical at every sigma_w (common random numbers)."""
    state = np.random.SeedSequence([int(seed), int(stream)]).generate_state(2, dtype=np.uint32)
    g = torch.Generator(device="cpu")
    g.manual_seed(int(state[0]) << 32 | int(state[1]))
    return g


def crop_flip(x: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, flip: torch.Tensor, pad: int) -> torch.Tensor:
    """Random crop (zero padding ``pad``) and horizontal flip of ``x [N, C, H, W]`` on its device."""
    N, C, H, W = x.shape
    xp = F.pad(x, (pad, pad, pad, pad))
    rows = dy[:, None] + torch.arange(H, device=x.device)[None, :]          # N H
    cols = dx[:, None] + torch.arange(W, device=x.device)[None, :]          # N W
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    n = torch.arange(N, device=x.device)[:, None, None]
    out = xp.permute(0, 2, 3, 1)[n, rows[:, :, None], cols[:, None, :]]     # N H W C
    return out.permute(0, 3, 1, 2).contiguous()


class PackTrainer:
    """The packed model, its optimizer, schedule and per-member random streams."""

    def __init__(self, grid: Grid, pipeline: str, cells: Sequence[tuple[float, int]], split: Split,
                 device: str):
        self.grid, self.pipeline, self.spec = grid, pipeline, grid.pipelines[pipeline]
        self.cells = [(float(s), int(k)) for s, k in cells]
        self.G = len(self.cells)
        self.split, self.device = split, device
        self.kind = device_kind(device)
        n_train = int(split.y_train.numel())
        if self.spec.batch_size > n_train:
            raise UserError(f"pipelines.{pipeline}.batch_size: {self.spec.batch_size} is larger than the "
                            f"training split ({n_train} examples)")
        self.steps_per_epoch = steps_per_epoch(n_train, self.spec.batch_size)  # drop_last: b examples a step
        # The learning rate of every step and the clocks summed from it: one schedule module for the
        # engine and the simulator, so their clocks agree exactly.
        self.lrs = LrSchedule.of(self.spec, self.steps_per_epoch).per_step()
        self.clock_table = epoch_clocks(self.lrs, self.spec.epochs, self.steps_per_epoch,
                                        batch_size=self.spec.batch_size, optimizer=self.spec.optimizer,
                                        momentum=self.spec.momentum, coupled_l2=self.spec.coupled_l2,
                                        decoupled_wd=self.spec.decoupled_wd)
        # The init probe (collect/train/probes.py): what sigma_w does to each member at init.
        net = build_for_grid(grid, pipeline, self.G, split.in_channels, split.n_classes, split.image_size)
        # A run's seeds (grid.seed_pair): the init seed draws its weights, the data seed its batches and
        # augmentation; for a list of seeds both are the run's seed.
        self.seed_pairs = [grid.seed_pair(run) for _, run in self.cells]
        for g, ((sigma, _run), (init_seed, _data_seed)) in enumerate(zip(self.cells, self.seed_pairs, strict=True)):
            init_cell(net, g, sigma, seed_generator(init_seed, STREAM_INIT), grid, pipeline)
        mult = width_multipliers(grid, self.cells)
        if mult is not None:
            net.head.out_mult = 1.0 / mult
        self.net: PackedNet = net.to(device)
        self.layers, _ = kernel_norms(self.net)
        self.optimizer = PackedOptimizer([p for p in self.net.parameters() if p.requires_grad], self.spec, self.kind,
                                         None if mult is None else mup_lr_factors(self.net, mult, self.spec.optimizer))
        self.ema = Ema(self.optimizer.params, self.spec.ema_decay) if self.spec.ema_decay > 0 else None
        self.gen_order = [seed_generator(data_seed, STREAM_ORDER) for _, data_seed in self.seed_pairs]
        self.gen_aug = [seed_generator(data_seed, STREAM_AUG) for _, data_seed in self.seed_pairs]
        # Dropout's masks: a stream of their own per member, from the data seed, made only when dropout is on.
        # Not the data-order stream: the masks would then shift every later epoch's permutation, and a
        # pipeline with dropout would no longer see the batches of the same data seed without it.
        self.gen_drop = [seed_generator(data_seed, STREAM_DROPOUT) for _, data_seed in self.seed_pairs] \
            if self.spec.dropout > 0 else None
        self.aug_pad = max(1, split.image_size // 8) if grid.dataset.augment == "crop_flip" else 0
        ac = grid.engine.autocast  # None: CUDA only (see EngineSpec.autocast)
        self.amp = self.kind == "cuda" if ac is None else ac
        if self.kind == "cuda":
            torch.backends.cudnn.benchmark = True   # fixed shapes: let cuDNN pick its fastest kernels
        cl = grid.engine.channels_last  # None: CUDA only (see EngineSpec.channels_last)
        self.channels_last = self.kind == "cuda" if cl is None else cl
        use_channels_last(self.net, self.channels_last)
        self.forward = torch.compile(self.net) if grid.engine.compile else self.net
        kernels = list(self.net.kernels())
        self.meter = StepMeter([m.weight for _, m in kernels], [bool(getattr(m, "normalized", False))
                                                                  for _, m in kernels]) \
            if grid.engine.measure_clocks else None
        self.step = 0
        self.frozen: list[int] = []
        self.fail_injection = self._injected_failure()
        self.eval_chunk = self._eval_chunk()
        self._eval_chunk_checked = False

    def _injected_failure(self) -> str | None:
        want = os.environ.get("INITMEM_FAIL_CELL")
        if not want:
            return None
        for sigma, seed in self.cells:
            if want == f"{self.pipeline}:{sigma:g}:{seed}":
                return want
        return None

    def _eval_chunk(self) -> int | None:
        """Images per features forward in an evaluation, or None for the whole evaluation batch.

        An evaluation batch (``engine.eval_batch_size`` model-images) of a 20-member MNIST-1D pack
        holds 10 MB per activation, which oneDNN's convolutions and layout conversions stream
        through memory; sub-batches of the training batch size (1.6 MB at batch 32, the size a
        training step works at) stay in cache. An evaluation of the quick preset's pack (12,000
        signals) then takes 2.07 instead of 2.57 CPU-s (AVX-512; 2.14 instead of 2.26 with
        ``ATEN_CPU_CAPABILITY=avx2``), ``python benchmarks/train_throughput.py --eval-share
        --repeats 6``. Only where no number can change: a fp32 CPU forward, not compiled, of a net
        whose features treat every image on its own (:attr:`PackedNet.per_image_features`, the
        convolutional nets), and the head and the loss sums still see the whole evaluation batch
        (``engine.eval_batch_size`` keeps its meaning). oneDNN does not document
        that a convolution's result for one image is independent of the minibatch size, so the
        first sub-batched evaluation checks it bit for bit against one whole-batch forward
        (:meth:`_eval_features`).
        """
        if not FAST_EVAL or self.kind != "cpu" or self.amp or self.grid.engine.compile:
            return None
        if not getattr(self.net, "per_image_features", False):
            return None
        return self.spec.batch_size

    def _eval_input(self, xb: torch.Tensor) -> torch.Tensor:
        """``xb [n, C, H, W]`` for every member: ``[n, G*C, H, W]`` in the engine's layout."""
        xx = xb.repeat(1, self.G, 1, 1)
        return xx.contiguous(memory_format=torch.channels_last) if self.channels_last else xx

    def _eval_logits(self, xb: torch.Tensor) -> torch.Tensor:
        """Logits ``[n, G, K]`` of one evaluation batch ``xb [n, C, H, W]``, every member on every image."""
        chunk = self.eval_chunk
        if chunk is None or xb.shape[0] <= chunk:
            with self.autocast():
                return self.forward(self._eval_input(xb))
        return self.net.head(self._eval_features(xb, chunk))

    def _eval_features(self, xb: torch.Tensor, chunk: int) -> torch.Tensor:
        """The net's features of ``xb`` computed ``chunk`` images at a time.

        The first call also computes them in one forward and compares the bits (NaN payloads
        included); should they differ, sub-batches are switched off for this pack and the
        whole-batch features are used, so the pack's numbers never depend on the sub-batching.
        """
        feats = torch.cat([self.net.features(self._eval_input(part)) for part in xb.split(chunk)])
        if not self._eval_chunk_checked:
            self._eval_chunk_checked = True
            whole = self.net.features(self._eval_input(xb))
            if not same_bits(whole, feats):
                self.eval_chunk = None
                return whole
        return feats

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast on this device when enabled (the same branch on CPU and CUDA)."""
        if not self.amp:
            return contextlib.nullcontext()
        return torch.autocast(self.kind, dtype=torch.bfloat16)

    # -- data ---------------------------------------------------------------------------------
    def epoch_order(self) -> torch.Tensor:
        """Each member's permutation of the training split for the next epoch, ``[G, N]``."""
        n = int(self.split.y_train.numel())
        perms = [torch.randperm(n, generator=g) for g in self.gen_order]
        return torch.stack(perms).to(self.device)

    def batch(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Gather ``idx [G, B]`` into the packed layout ``[B, G*C, H, W]`` and labels ``[B, G]``."""
        G, B = idx.shape
        x = self.split.x_train[idx]                      # G B C H W
        if self.aug_pad:
            p = self.aug_pad
            draws = [(torch.randint(0, 2 * p + 1, (B,), generator=g), torch.randint(0, 2 * p + 1, (B,), generator=g),
                      torch.randint(0, 2, (B,), generator=g).bool()) for g in self.gen_aug]
            dy, dx, fl = (torch.cat([d[i] for d in draws]).to(self.device) for i in range(3))
            x = crop_flip(x.flatten(0, 1), dy, dx, fl, p).view_as(x)
        C, H, W = x.shape[2:]
        x = x.transpose(0, 1).reshape(B, G * C, H, W)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, self.split.y_train[idx].t()

    # -- one optimizer step ---------------------------------------------------------------------
    def dropout_mask(self, batch: int) -> torch.Tensor:
        """The next training step's dropout masks ``[batch, G*C]`` over the pooled features: member g's
        from its own dropout stream (:func:`~initmem.collect.train.recipes.dropout_mask`)."""
        if self.gen_drop is None:
            raise RuntimeError(f"pipeline {self.pipeline} has no dropout")
        return dropout_mask(self.gen_drop, batch, self.net.head.cin, self.spec.dropout, self.device)

    def _loss_backward(self, x: torch.Tensor, y: torch.Tensor, drop_mask: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward and backward of one batch: per-member training losses ``[G]`` (label smoothing and
        the dropout mask ``drop_mask`` included) and which are not finite; the gradients of the finite
        ones are left in ``.grad``."""
        with self.autocast():
            logits = self.forward(x) if drop_mask is None else self.forward(x, drop_mask)  # B G K
        B, G, K = logits.shape
        losses = F.cross_entropy(logits.float().reshape(B * G, K), y.reshape(B * G), reduction="none",
                                 label_smoothing=self.spec.label_smoothing).view(B, G).mean(0)
        bad = ~torch.isfinite(losses)
        total = torch.where(bad, torch.zeros_like(losses), losses).sum()
        for p in self.net.parameters():
            p.grad = None
        total.backward()
        return losses.detach(), bad

    def train_step(self, idx: torch.Tensor) -> tuple[float, torch.Tensor]:
        """One step of every member; returns the lr used and the per-member losses ``[G]``.

        With SAM (``sam_rho > 0``) the gradient the optimizer steps with is taken at each member's
        perturbed weights ``w + rho * g / ||g||`` (second pass, same batch), whose BatchNorm running
        statistics are discarded: they are those of the training point's batch, from the first pass.
        The returned losses are the first pass's; a member whose loss is not finite in either pass
        diverges. With ``dropout > 0`` one mask per step is drawn (every member, frozen ones too, so a
        member's stream does not depend on its pack-mates) and both SAM passes use it: the second pass
        takes the gradient of the same masked loss at the perturbed weights.
        """
        if self.fail_injection:
            raise RuntimeError(f"injected failure in cell {self.fail_injection}")
        x, y = self.batch(idx)
        self.net.train()
        mask = self.dropout_mask(x.shape[0]) if self.spec.dropout > 0 else None
        losses, bad = self._loss_backward(x, y, mask)
        if self.spec.sam_rho > 0:
            stats = [b.clone() for b in bn_buffers(self.net)]
            saved = sam_perturb(self.optimizer.params, self.spec.sam_rho)
            _, bad_perturbed = self._loss_backward(x, y, mask)
            bad = bad | bad_perturbed
            restore(self.optimizer.params, saved)
            restore(bn_buffers(self.net), stats)
        lr = float(self.lrs[self.step])
        newly = [g for g in torch.nonzero(bad).flatten().tolist() if g not in self.frozen]
        if self.meter is not None:
            self.meter.before_step(lr)
        self.optimizer.step(lr, self.frozen + newly)
        if self.meter is not None:
            self.meter.after_step()
        if self.ema is not None:
            self.ema.update()
        self.frozen.extend(newly)
        self.step += 1
        return lr, losses

    # -- the evaluated weights ------------------------------------------------------------------
    @contextlib.contextmanager
    def evaluated_weights(self, evaluate: bool = True) -> Iterator[None]:
        """Within: the net holds the weights a run is evaluated at, with their BatchNorm statistics.

        The training point, except with an EMA (its average) or a schedule-free optimizer (its
        average x, the optimizer's ``.eval()``), once a step has been taken. Those weights get their
        own BatchNorm running statistics when ``evaluate`` (:meth:`recompute_bn`; the kernel norms
        recorded between evaluations need none). On leaving, the training point's weights and
        statistics are copied back bit for bit, so recording changes no later step.
        """
        if self.step == 0 or (self.ema is None and not self.optimizer.schedule_free):
            yield
            return
        params = self.optimizer.params
        stats = [b.clone() for b in bn_buffers(self.net)]
        with torch.no_grad():
            saved = self.optimizer.to_average() if self.optimizer.schedule_free else [p.detach().clone()
                                                                                      for p in params]
            if self.ema is not None:
                self.ema.copy_to(params)
            if evaluate:
                self.recompute_bn()
        try:
            yield
        finally:
            with torch.no_grad():
                if self.optimizer.schedule_free:
                    self.optimizer.to_training_point(saved)
                else:
                    restore(params, saved)
                restore(bn_buffers(self.net), stats)

    def recompute_bn(self) -> None:
        """BatchNorm statistics of the current weights: a cumulative average over the training split
        in batches of the training batch size (full batches, in split order, without augmentation), a
        training-mode forward that takes no step and draws nothing from any random stream."""
        x = self.split.x_train
        b = self.spec.batch_size
        n = (x.shape[0] // b) * b

        def run(xb: torch.Tensor) -> None:
            with self.autocast():
                self.net(xb)

        recompute_bn_stats(self.net, (self._eval_input(x[i:i + b]) for i in range(0, n, b)), run)

    # -- evaluation -------------------------------------------------------------------------------
    def evaluate(self, x: torch.Tensor, y: torch.Tensor, want_pred: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Mean loss and accuracy per member ``[G]`` on one split in eval mode (and predictions).

        Under ``inference_mode`` (no autograd bookkeeping at all; nothing computed here is ever
        differentiated; ``no_grad`` for a compiled model, whose graphs are guarded on the grad
        mode), in batches of ``engine.eval_batch_size`` model-images whose losses are summed batch
        by batch in float64; the features may run in smaller sub-batches (:meth:`_eval_chunk`),
        which changes no number.
        """
        fast = FAST_EVAL and not self.grid.engine.compile
        with torch.inference_mode() if fast else torch.no_grad():
            return self._evaluate(x, y, want_pred)

    def _evaluate(self, x: torch.Tensor, y: torch.Tensor, want_pred: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        self.net.eval()
        G = self.G
        loss = torch.zeros(G, dtype=torch.float64, device=self.device)
        correct = torch.zeros(G, dtype=torch.float64, device=self.device)
        preds = []
        # eval_batch_size counts model-images per forward (images x members), at least 32 images.
        bs = max(32, self.grid.engine.eval_batch_size // G)
        for i in range(0, x.shape[0], bs):
            xb, yb = x[i:i + bs], y[i:i + bs]
            logits = self._eval_logits(xb).float()             # n G K
            n, _, K = logits.shape
            yy = yb[:, None].expand(n, G)
            ce = F.cross_entropy(logits.reshape(n * G, K), yy.reshape(-1), reduction="none").view(n, G)
            loss += ce.double().sum(0)   # in float64: the sum order over members cannot show
            pred = logits.argmax(-1)
            correct += (pred == yy).sum(0).double()
            if want_pred:
                preds.append(pred)
        N = x.shape[0]
        out_pred = torch.cat(preds).t().cpu().numpy() if want_pred else None   # G N
        return (loss / N).cpu().numpy(), (correct / N).cpu().numpy(), out_pred


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two float tensors hold the very same bits (NaNs compare by payload, -0.0 != 0.0)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.contiguous().view(bits), b.contiguous().view(bits))


class Recorder:
    """Curves, per-layer curves and checkpoint selection of a pack, as numpy (checkpointable)."""

    def __init__(self, G: int, epochs: int, n_layers: int, n_test: int, select: str, threshold: float):
        self.curves = {v: np.full((G, epochs + 1), np.nan) for v in CURVES}
        self.layer = {v: np.full((G, epochs + 1, n_layers), np.nan) for v in cube.LAYER_VARS}
        self.diverged_epoch = np.full(G, -1, dtype=np.int64)
        self.selector = Selector(G, n_test, select, threshold)
        self.wall = 0.0

    def to_state(self) -> dict[str, Any]:
        t = torch.from_numpy
        return {
            "curves": {k: t(v.copy()) for k, v in self.curves.items()},
            "layer": {k: t(v.copy()) for k, v in self.layer.items()},
            "diverged_epoch": t(self.diverged_epoch.copy()),
            "selector": {k: t(np.asarray(v)) for k, v in self.selector.to_state().items()},
            "wall": float(self.wall),
        }

    def load_state(self, st: dict[str, Any]) -> None:
        self.curves = {k: v.numpy().copy() for k, v in st["curves"].items()}
        self.layer = {k: v.numpy().copy() for k, v in st["layer"].items()}
        self.diverged_epoch = st["diverged_epoch"].numpy().copy()
        self.selector.load_state({k: v.numpy() for k, v in st["selector"].items()})
        self.wall = float(st["wall"])


def _record_epoch(tr: PackTrainer, rec: Recorder, epoch: int, evaluate: bool = True) -> None:
    """Record one epoch; without ``evaluate`` (grid eval.every) only the norms and clocks, the
    split metrics stay NaN and the epoch cannot be selected."""
    with tr.evaluated_weights(evaluate):
        _record_evaluated(tr, rec, epoch, evaluate)


def _record_evaluated(tr: PackTrainer, rec: Recorder, epoch: int, evaluate: bool) -> None:
    """:func:`_record_epoch` with the evaluated weights in the net."""
    s = tr.split
    nan = np.full(tr.G, np.nan)
    train_l = train_a = val_l = val_a = test_l = test_a = nan
    pred = None
    if evaluate:
        train_l, train_a, _ = tr.evaluate(s.x_train, s.y_train)
        val_l, val_a, _ = tr.evaluate(s.x_val, s.y_val)
        test_l, test_a, pred = tr.evaluate(s.x_test, s.y_test, want_pred=True)
    _, norms = kernel_norms(tr.net)
    norms = norms.double().cpu().numpy()
    lr_now = float(tr.clock_table[cube.LR_NOW][epoch])
    values = {
        cube.TRAIN_LOSS: train_l, cube.TRAIN_ACC: train_a, cube.VAL_LOSS: val_l, cube.VAL_ACC: val_a,
        cube.TEST_LOSS: test_l, cube.TEST_ACC: test_a, cube.KERNEL_NORM: np.sqrt((norms ** 2).sum(1)),
        **{c: np.full(tr.G, tr.clock_table[c][epoch]) for c in SCHEDULE_CURVES},
    }
    layer = {cube.LAYER_NORM: norms}
    if tr.meter is not None:
        values[cube.T_ANGLE] = tr.meter.t_angle().cpu().numpy()
        values[cube.T_EFF] = tr.meter.t_eff_now().cpu().numpy()
        layer[cube.COS_TO_INIT] = tr.meter.cos_to_init().cpu().numpy()
        layer[cube.ANGULAR_PATH] = tr.meter.path.cpu().numpy()
        layer[cube.EFF_LR] = tr.meter.eff_lr(lr_now).cpu().numpy()
    for g in range(tr.G):
        if g in tr.frozen:
            if rec.diverged_epoch[g] < 0:
                rec.diverged_epoch[g] = epoch
            continue
        for k, v in values.items():
            rec.curves[k][g, epoch] = v[g]
        for k, v in layer.items():
            rec.layer[k][g, epoch] = v[g]
        if pred is not None:
            rec.selector.update(g, epoch, float(train_a[g]), float(val_a[g]), float(val_l[g]), float(test_a[g]),
                                pred[g])


def _state(tr: PackTrainer, rec: Recorder, epoch: int) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "pack_pipeline": tr.pipeline,
        "cells": [[float(s), int(k)] for s, k in tr.cells],
        "epochs_done": int(epoch),
        "steps_done": int(tr.step),
        "frozen": list(tr.frozen),
        "model": {k: v.detach().cpu().clone() for k, v in tr.net.state_dict().items()},
        "optimizer": tr.optimizer.state_dict(),
        "meter": tr.meter.state_dict() if tr.meter is not None else None,
        "ema": tr.ema.state_dict() if tr.ema is not None else None,
        "gen_order": [g.get_state() for g in tr.gen_order],
        "gen_aug": [g.get_state() for g in tr.gen_aug],
        "gen_drop": [g.get_state() for g in tr.gen_drop] if tr.gen_drop is not None else None,
        "recorder": rec.to_state(),
    }


def _restore(tr: PackTrainer, rec: Recorder, st: dict[str, Any]) -> int:
    if int(st.get("version", -1)) != STATE_VERSION:
        raise UserError(f"checkpoint state version {st.get('version')} is not {STATE_VERSION}")
    cells = [(float(s), int(k)) for s, k in st["cells"]]
    if st["pack_pipeline"] != tr.pipeline or cells != tr.cells:
        raise UserError("checkpoint state belongs to another pack (pipeline or cells differ)")
    tr.net.load_state_dict({k: v.to(tr.device) for k, v in st["model"].items()})
    tr.optimizer.load_state_dict(st["optimizer"])
    if tr.meter is not None:
        if st.get("meter") is None:
            raise UserError("checkpoint state was saved without the measured clocks (engine.measure_clocks)")
        tr.meter.load_state_dict(st["meter"])
    if tr.ema is not None:
        if st.get("ema") is None:
            raise UserError("checkpoint state was saved without the weights' moving average (ema_decay)")
        tr.ema.load_state_dict(st["ema"])
    for g, s in zip(tr.gen_order, st["gen_order"], strict=True):
        g.set_state(s)
    for g, s in zip(tr.gen_aug, st["gen_aug"], strict=True):
        g.set_state(s)
    if tr.gen_drop is not None:
        if st.get("gen_drop") is None:
            raise UserError("checkpoint state was saved without the dropout streams (dropout)")
        for g, s in zip(tr.gen_drop, st["gen_drop"], strict=True):
            g.set_state(s)
    tr.step = int(st["steps_done"])
    tr.frozen = [int(g) for g in st["frozen"]]
    rec.load_state(st["recorder"])
    return int(st["epochs_done"])


def train_pack(grid: Grid, pipeline: str, cells: Sequence[tuple[float, int]], *, device: str = "cpu",
               checkpoint: Callable[[dict], None] | None = None,
               checkpoint_every_epochs: int = 1, checkpoint_every_seconds: float | None = None,
               resume: dict | None = None,
               progress: Callable[[int, int], None] | None = None,
               ) -> xr.Dataset:
    """Train the cells ``(sigma_w, run index)`` of one pipeline as one pack; return their cube slice.

    A run index is a seed of a grid's seed list, or a run of its crossed design (``Grid.seed_pair`` gives
    the init and data seeds it trains with)."""
    if pipeline not in grid.pipelines:
        raise UserError(f"no pipeline {pipeline!r} in grid {grid.name}")
    if not cells:
        raise ValueError("train_pack needs at least one cell")
    if len(set(cells)) != len(cells):
        raise ValueError("train_pack got duplicate cells")
    device = resolve_device(device)
    spec = grid.pipelines[pipeline]
    if device_kind(device) == "cpu":
        keep_freed_memory()  # speed only: no page fault per fresh activation buffer (devices.py)
    with deterministic(device, grid.engine.cpu_threads):
        split = load_split(grid.dataset).to(device)
        tr = PackTrainer(grid, pipeline, cells, split, device)
        rec = Recorder(tr.G, spec.epochs, len(tr.layers), int(split.y_test.numel()), grid.eval.select,
                       grid.eval.interp_threshold)
        start_epoch = 0
        if resume is not None:
            start_epoch = _restore(tr, rec, resume)
        t0 = time.perf_counter() - rec.wall
        if start_epoch == 0:
            _record_epoch(tr, rec, 0)
        last_ckpt = time.perf_counter()
        b, every = spec.batch_size, spec.eval_every or grid.eval.every
        for epoch in range(start_epoch + 1, spec.epochs + 1):
            order = tr.epoch_order()
            for i in range(tr.steps_per_epoch):
                tr.train_step(order[:, i * b:(i + 1) * b])
            _record_epoch(tr, rec, epoch, evaluate=epoch % every == 0 or epoch == spec.epochs)
            rec.wall = time.perf_counter() - t0
            if progress is not None:
                progress(epoch, spec.epochs)
            if checkpoint is not None and epoch < spec.epochs:
                due = epoch % max(checkpoint_every_epochs, 1) == 0
                if checkpoint_every_seconds is not None and time.perf_counter() - last_ckpt >= checkpoint_every_seconds:
                    due = True
                if due:
                    checkpoint(_state(tr, rec, epoch))
                    last_ckpt = time.perf_counter()
        rec.wall = time.perf_counter() - t0
        return _to_dataset(grid, pipeline, tr, rec, device)


def _to_dataset(grid: Grid, pipeline: str, tr: PackTrainer, rec: Recorder, device: str) -> xr.Dataset:
    spec = grid.pipelines[pipeline]
    sigmas = sorted({s for s, _ in tr.cells})
    seeds = sorted({k for _, k in tr.cells})
    S, K, E = len(sigmas), len(seeds), spec.epochs + 1
    L = len(tr.layers)
    n_test = int(tr.split.y_test.numel())
    pos = [(sigmas.index(s), seeds.index(k)) for s, k in tr.cells]

    def cell_array(fill: float, dtype: str, values: np.ndarray, extra: tuple[int, ...] = ()) -> np.ndarray:
        out = np.full((1, S, K, *extra), fill, dtype=dtype)
        for g, (i, j) in enumerate(pos):
            out[0, i, j] = values[g]
        return out

    tau = np.array([tau_interp(rec.curves[cube.TRAIN_ACC][g], grid.eval.interp_threshold) for g in range(tr.G)])
    sel = rec.selector.selected()
    status = np.where(rec.diverged_epoch >= 0, cube.DIVERGED, cube.OK)
    cd, ed = cube.CELL_DIMS, cube.CURVE_DIMS
    data: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    for v in CURVES:
        data[v] = (ed, cell_array(np.nan, cube.FLOAT_DTYPE, rec.curves[v], (E,)))
    for v in cube.LAYER_VARS:
        data[v] = ((*ed, cube.LAYER), cell_array(np.nan, cube.FLOAT_DTYPE, rec.layer[v], (E, L)))
    run = {
        cube.TAU_INTERP: tau, cube.TAU_BEST: sel["tau"], cube.SELECTED_VAL_ACC: sel["val"],
        cube.SELECTED_TEST_ACC: sel["test"], cube.FINAL_TEST_ACC: rec.curves[cube.TEST_ACC][:, -1],
        cube.INIT_KERNEL_NORM: rec.curves[cube.KERNEL_NORM][:, 0],
        cube.WALL_SECONDS: np.full(tr.G, rec.wall / tr.G),
    }
    int_dtype = {name: dtype for name, (dtype, _fill) in cube.INT_VARS.items()}
    data[cube.STATUS] = (cd, cell_array(cube.MISSING, int_dtype[cube.STATUS], status))
    for k, v in run.items():
        data[k] = (cd, cell_array(np.nan, cube.FLOAT_DTYPE, v))
    data[cube.SELECTED_TEST_CORRECT] = (cd, cell_array(-1, int_dtype[cube.SELECTED_TEST_CORRECT], sel["correct"]))
    data[cube.TEST_PRED] = ((*cd, cube.EXAMPLE), cell_array(-1, int_dtype[cube.TEST_PRED], sel["pred"], (n_test,)))
    data[cube.TEST_LABEL] = ((cube.EXAMPLE,), tr.split.y_test.cpu().numpy().astype(int_dtype[cube.TEST_LABEL]))
    coords: dict[str, Any] = {
        cube.PIPELINE: np.array([pipeline], dtype=object),
        cube.SIGMA: np.asarray(sigmas, dtype="float64"),
        cube.SEED: np.asarray(seeds, dtype="int64"),
        **{name: (cube.SEED, np.asarray(values, dtype="int64")) for name, values in grid.seed_coords(seeds).items()},
        cube.EPOCH: np.arange(E, dtype="int64"),
        cube.LAYER: np.array(tr.layers, dtype=object),
        cube.EXAMPLE: np.arange(n_test, dtype="int64"),
    }
    for k, v in pipeline_coords(spec, grid.model_of(pipeline) if grid.mixed_models else None).items():
        coords[k] = (cube.PIPELINE, np.array([v], dtype=object if isinstance(v, str) else None))
    ds = xr.Dataset({k: xr.Variable(d, a) for k, (d, a) in data.items()}, coords=coords)
    ds.attrs = cube_attrs(grid, device, n_test=n_test, dataset_fingerprint=tr.split.fingerprint)
    return cube.canonicalize(ds)


# A checkpoint of another state layout cannot resume (collect/execution/pack_job.py checks before resuming).
train_pack.state_version = STATE_VERSION  # type: ignore[attr-defined]

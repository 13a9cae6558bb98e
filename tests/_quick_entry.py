"""The quick preset's network trained by a user's plain loop (the recorder's and the user-code grid's reference).

:func:`user_loop` is a plain PyTorch loop over the packed resnet1d of the quick preset, one member, drawing the
engine's data order under the engine's deterministic CPU settings: recorded, it gives the built-in engine's
curves bit for bit (tests/test_recorder.py). :func:`train` is the same loop as a grid's entry point
(``entry: "initmem.tests._quick_entry:train"``), so the quick preset's network can be collected as user code and
compared with the engine's own cube (tests/test_user_code_quick.py, benchmarks/own_model_speed.py).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from initmem.collect.custom.cell import Cell
from initmem.collect.custom.probe import apply_probe
from initmem.collect.custom.recorder import Recorder
from initmem.collect.train.data import load_split
from initmem.collect.train.devices import deterministic
from initmem.collect.train.engine import STREAM_ORDER, seed_generator
from initmem.collect.train.nets import build_net
from initmem.collect.train.packed import use_channels_last
from initmem.schedule import LrSchedule, steps_per_epoch

from ._quick_small import quick_small

EVERY = 2


def evaluate(net, x, y, want_pred=False):
    """The user's evaluation: mean loss (summed in float64) and accuracy over one split, in eval mode."""
    net.eval()
    with torch.inference_mode():
        logits = net(x.contiguous(memory_format=torch.channels_last)).float()[:, 0]
        loss = F.cross_entropy(logits, y, reduction="none").double().sum() / x.shape[0]
        pred = logits.argmax(-1)
        acc = (pred == y).double().sum() / x.shape[0]
    return (float(acc), float(loss)), (pred if want_pred else None)


def user_loop(grid, pipeline, sigma, seed, *, make_optimizer=None, stop_after=None, path=None, rec_kwargs=None,
              resume=False, set_lr=True, every=EVERY):
    """A plain loop of the quick preset's network (the packed resnet1d, one member) with the engine's data order."""
    spec = grid.pipelines[pipeline]
    split = load_split(grid.dataset)
    net = build_net("resnet1d", 1, split.in_channels, split.n_classes, 16, "batch", size=split.image_size, depth=3)
    apply_probe(net, sigma, init_seed=seed)
    use_channels_last(net, True)
    if make_optimizer is None:
        opt = (torch.optim.SGD(net.parameters(), lr=spec.lr, momentum=spec.momentum, nesterov=spec.nesterov,
                               weight_decay=spec.weight_decay, foreach=True) if spec.optimizer == "sgd" else
               torch.optim.AdamW(net.parameters(), lr=spec.lr, betas=tuple(spec.betas), eps=spec.eps,
                                 weight_decay=spec.weight_decay, foreach=True))
    else:
        opt = make_optimizer(net)
    n, b = int(split.y_train.numel()), spec.batch_size
    spe = steps_per_epoch(n, b)
    lrs = LrSchedule.of(spec, spe).per_step()
    order = seed_generator(seed, STREAM_ORDER)
    kw = dict(coords={"pipeline": pipeline, "sigma_w": sigma, "seed": seed}, batch_size=b,
              test_labels=split.y_test, select=grid.eval.select, interp_threshold=grid.eval.interp_threshold,
              **(rec_kwargs or {}))
    if resume:
        rec = Recorder.resume(path, opt, net, **kw)
        order.set_state(rec.extra["order"])
    else:
        rec = Recorder(opt, net, path=path, **kw)

    def record(epoch, full):
        if not full:
            rec.evaluate(epoch, extra={"order": order.get_state()})
            return
        tr, _ = evaluate(net, split.x_train, split.y_train)
        va, _ = evaluate(net, split.x_val, split.y_val)
        te, pred = evaluate(net, split.x_test, split.y_test, want_pred=True)
        rec.evaluate(epoch, train=tr, val=va, test=te, predictions=pred, extra={"order": order.get_state()})

    if rec.next_epoch == 0:
        record(0, True)
    step = (rec.next_epoch - 1) * spe
    for epoch in range(rec.next_epoch, spec.epochs + 1):
        perm = torch.randperm(n, generator=order)
        net.train()
        for i in range(spe):
            idx = perm[i * b:(i + 1) * b]
            x = split.x_train[idx].contiguous(memory_format=torch.channels_last)
            logits = net(x)
            y = split.y_train[idx]
            loss = F.cross_entropy(logits.float().reshape(b, -1), y, reduction="none").view(b, 1).mean(0)
            for p in net.parameters():
                p.grad = None
            loss.sum().backward()
            for g in opt.param_groups if set_lr else ():
                g["lr"] = float(lrs[step])
            opt.step()
            rec.step(loss)
            step += 1
        record(epoch, epoch % every == 0 or epoch == spec.epochs)
        net.train()
        if stop_after is not None and epoch == stop_after:
            return rec
    rec.finish()
    return rec


def train(cell: Cell) -> None:
    """The entry point: the quick preset's pipeline named by the cell, on the settings' small MNIST-1D split
    (``data_root``, ``epochs``, ``n_train``, ``n_val``, ``n_test``, ``every``), recorded where the collector
    reads it."""
    s = cell.settings
    grid = quick_small(Path(s["data_root"]), pipelines=(cell.pipeline,), epochs=int(s["epochs"]),
                       n_train=int(s["n_train"]), n_val=int(s["n_val"]), n_test=int(s["n_test"]),
                       every=int(s["every"]), sigma_w=(cell.sigma_w,), seeds=(cell.seed,))
    with deterministic("cpu", 1):
        user_loop(grid, cell.pipeline, cell.sigma_w, cell.seed, path=cell.record, every=int(s["every"]),
                  rec_kwargs={"checkpoint": False})

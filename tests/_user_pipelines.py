"""A tiny user model and training loop for the user-code grid tests (tests/test_user_code*.py).

Each function is an entry point ``tests._user_pipelines:NAME``: it receives the cell and trains a two-layer
MLP on a small fixed classification set, initialised by the sigma_w probe from the cell's init seed, its batches
drawn from the cell's data seed, recording through the cell's recorder. The faulty ones misbehave at
sigma_w = 2 only, so that the other cells of the same grid show that they finish. Run as a module
(``python -m tests._user_pipelines``) it is the command form: the cell comes from ``INITMEM_CELL``.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import torch
from torch import nn

from initmem.collect.custom.cell import Cell, load_cell

N_TRAIN, N_VAL, N_TEST, DIM, CLASSES = 96, 48, 48, 6, 3


def _data(noise: float = 1.0, eval_noise: float | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """A fixed three-class set: Gaussian blobs in 6-D, ``noise`` around their centres in the training split and
    ``eval_noise`` (default: the same) in the validation and test splits (the same for every cell). At a low
    training noise every run interpolates; a higher evaluation noise leaves test accuracies that differ."""
    rng = np.random.default_rng(1234)
    centers = rng.normal(0, 1.2, size=(CLASSES, DIM))
    out = {}
    for split, n in (("train", N_TRAIN), ("val", N_VAL), ("test", N_TEST)):
        y = rng.integers(0, CLASSES, size=n)
        sd = noise if split == "train" or eval_noise is None else eval_noise
        x = centers[y] + rng.normal(0, sd, size=(n, DIM))
        out[split] = (torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64))
    return out


def _recorder(cell: Cell, optimizer: torch.optim.Optimizer, model: nn.Module) -> Any:
    # the record is written once, at the end (a save per evaluation is for a loop that resumes mid-run)
    return cell.recorder(optimizer, model, batch_size=int(cell.settings.get("batch_size", 32)), checkpoint=False)


def _measure(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    with torch.no_grad():
        out = model(x)
        return float((out.argmax(1) == y).float().mean()), float(nn.functional.cross_entropy(out, y))


def train(cell: Cell) -> None:
    """The plain loop: probe, SGD over shuffled batches, one evaluation per epoch."""
    torch.set_num_threads(1)
    eval_noise = cell.settings.get("eval_noise")
    data = _data(float(cell.settings.get("noise", 1.0)), None if eval_noise is None else float(eval_noise))
    model = nn.Sequential(nn.Linear(DIM, 16), nn.ReLU(), nn.Linear(16, CLASSES))
    cell.apply_probe(model)
    lr = float(cell.settings.get("lr", 0.1))
    if cell.settings.get("blow_up") and cell.sigma_w == 2:
        lr = 1e30   # the loss overflows within a few steps
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=float(cell.settings.get("momentum", 0.0)))
    rec = _recorder(cell, opt, model)
    order = torch.Generator().manual_seed(cell.data_seed)
    bs = int(cell.settings.get("batch_size", 32))
    xs, ys = data["train"]

    def evaluate(epoch: int) -> None:
        rec.evaluate(epoch, train=_measure(model, *data["train"]), val=_measure(model, *data["val"]),
                     test=_measure(model, *data["test"]))

    evaluate(0)
    for epoch in range(1, int(cell.settings.get("epochs", 4)) + 1):
        perm = torch.randperm(N_TRAIN, generator=order)
        for i in range(0, N_TRAIN, bs):
            idx = perm[i:i + bs]
            loss = nn.functional.cross_entropy(model(xs[idx]), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(loss.detach())
            if rec.diverged:
                break
        evaluate(epoch)
        if rec.diverged:
            break
    rec.finish()


def raises(cell: Cell) -> None:
    """Trains, except at sigma_w = 2, where the user's code has a bug."""
    if cell.sigma_w == 2:
        raise ValueError(f"a bug in the user's code at sigma_w {cell.sigma_w:g}")
    train(cell)


def exits(cell: Cell) -> None:
    """Trains, except at sigma_w = 2, where it calls sys.exit(3) (a script's way out, run as an entry point)."""
    if cell.sigma_w == 2:
        sys.exit(3)
    train(cell)


def no_record(cell: Cell) -> None:
    """Prints, and returns without recording anything."""
    print(f"trained at sigma_w {cell.sigma_w:g} but forgot the recorder", flush=True)


NOT_CALLABLE = 3


if __name__ == "__main__":
    train(load_cell())

"""A torchvision ResNet-18 trained by a plain PyTorch loop, as one cell of an initmem grid.

``initmem`` calls :func:`main` once per (pipeline, sigma_w, seed) with a cell (``entry:
"train_resnet18:main"`` in grid.yaml). The loop is an ordinary one; the four lines that make it an
initmem run are marked ``# initmem``:

* the model's kernels are drawn by the sigma_w probe from the cell's init seed (``cell.apply_probe``,
  i.e. ``initmem.apply_probe(model, cell.sigma_w, init_seed=cell.init_seed, ...)``);
* ``cell.recorder(...)`` builds the recorder that writes the run record where the grid collects it;
* ``rec.step(loss)`` after each optimizer step, ``rec.evaluate(epoch, ...)`` after each epoch;
* ``rec.finish()`` at the end.

The pipeline's ``settings`` (grid.yaml) are this script's own: the data, the optimizer and its schedule.

Data (``settings.data``):

* ``cifar10``: the CIFAR-10 python pickles (``data_batch_1`` .. ``data_batch_5``, ``test_batch``) from the
  folder ``settings.cifar_dir``, else from ``$CIFAR10_DIR``; ``n_train`` + ``n_val`` images of the training
  batches (split by ``split_seed``, the same for every cell), the first ``n_test`` of the test batch. Nothing
  is downloaded: a missing folder is an error.
* ``digits``: an offline STAND-IN for CIFAR-10 so that the example runs anywhere in minutes: scikit-learn's
  bundled 8x8 digits (1,797 images, 10 classes), resized to ``image_size`` and repeated over 3 channels.
  It is not CIFAR-10 and its figures say nothing about CIFAR-10.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

from initmem.collect.custom.cell import Cell

CIFAR_ENV = "CIFAR10_DIR"
Splits = dict[str, tuple[torch.Tensor, torch.Tensor]]


def resnet18_small(num_classes: int = 10) -> nn.Module:
    """torchvision's ResNet-18 (no pretrained weights) with its stem adapted to small images: a 3x3
    convolution at stride 1 instead of the 7x7 at stride 2, and no max-pool, so that a 32x32 image reaches
    the last stage at 4x4 instead of 1x1."""
    model = torchvision.models.resnet18(weights=None, num_classes=num_classes)
    model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


# Data -----------------------------------------------------------------------------------------------------------

def _standardize(splits: Splits) -> Splits:
    """Per-channel mean and SD of the training split applied to every split."""
    x = splits["train"][0]
    mean, sd = x.mean(dim=(0, 2, 3), keepdim=True), x.std(dim=(0, 2, 3), keepdim=True).clamp_min(1e-6)
    return {k: ((v[0] - mean) / sd, v[1]) for k, v in splits.items()}


def _split(x: np.ndarray, y: np.ndarray, sizes: dict[str, int], seed: int) -> Splits:
    order = np.random.default_rng(seed).permutation(len(y))
    out, start = {}, 0
    for name, n in sizes.items():
        idx = order[start:start + n]
        out[name] = (torch.as_tensor(x[idx], dtype=torch.float32), torch.as_tensor(y[idx], dtype=torch.int64))
        start += n
    return out


def load_cifar10(folder: str | os.PathLike, n_train: int, n_val: int, n_test: int, split_seed: int = 0) -> Splits:
    """CIFAR-10 from its python pickles in ``folder`` (the ``cifar-10-batches-py`` folder of the official
    archive): training and validation images drawn from the five training batches by ``split_seed``, the
    first ``n_test`` images of the test batch; pixels scaled to [0, 1], then standardized per channel."""
    root = Path(folder).expanduser()
    names = [f"data_batch_{i}" for i in range(1, 6)]
    missing = [n for n in (*names, "test_batch") if not (root / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{root}: no CIFAR-10 pickle {missing[0]} (give the cifar-10-batches-py folder "
                                f"in settings.cifar_dir or ${CIFAR_ENV}; nothing is downloaded)")

    def read(name: str) -> tuple[np.ndarray, np.ndarray]:
        with open(root / name, "rb") as fh:
            batch = pickle.load(fh, encoding="bytes")
        x = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
        return x, np.asarray(batch[b"labels"], dtype=np.int64)

    parts = [read(n) for n in names]
    x_all, y_all = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if n_train + n_val > len(y_all):
        raise ValueError(f"n_train + n_val = {n_train + n_val} > {len(y_all)} CIFAR-10 training images")
    splits = _split(x_all, y_all, {"train": n_train, "val": n_val}, split_seed)
    x_test, y_test = read("test_batch")
    splits["test"] = (torch.as_tensor(x_test[:n_test]), torch.as_tensor(y_test[:n_test]))
    return _standardize(splits)


def load_digits_standin(image_size: int, n_val: int, n_test: int, split_seed: int = 0) -> Splits:
    """The offline stand-in for CIFAR-10: scikit-learn's 1,797 bundled 8x8 digits, resized (bilinear) to
    ``image_size`` and repeated over 3 channels; ``n_test`` and ``n_val`` images held out by ``split_seed``,
    the rest for training."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.as_tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    if image_size != 8:
        x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    x = x.repeat(1, 3, 1, 1).numpy()
    n_train = len(x) - n_val - n_test
    splits = _split(x, digits.target, {"test": n_test, "val": n_val, "train": n_train}, split_seed)
    return _standardize(splits)


def load_data(settings: dict[str, Any]) -> Splits:
    """The splits ``settings`` names (module docstring)."""
    data = settings.get("data", "digits")
    if data == "cifar10":
        folder = settings.get("cifar_dir") or os.environ.get(CIFAR_ENV)
        if not folder:
            raise FileNotFoundError(f"data cifar10: give settings.cifar_dir or ${CIFAR_ENV}")
        return load_cifar10(folder, int(settings["n_train"]), int(settings["n_val"]), int(settings["n_test"]),
                            int(settings.get("split_seed", 0)))
    if data == "digits":
        return load_digits_standin(int(settings.get("image_size", 8)), int(settings.get("n_val", 323)),
                                   int(settings.get("n_test", 719)), int(settings.get("split_seed", 0)))
    raise ValueError(f"settings.data: unknown data set {data!r} (cifar10 or digits)")


# Training -------------------------------------------------------------------------------------------------------

def make_optimizer(model: nn.Module, settings: dict[str, Any]) -> torch.optim.Optimizer:
    """SGD (``momentum``, coupled ``weight_decay``) or AdamW (decoupled ``weight_decay``) at ``lr``.

    AdamW is torch's fused implementation: the same update as the default (for-each) one up to rounding, at a
    seventh of its cost per step on a CPU (10 against 74 ms for ResNet-18's 11 million parameters), where the
    for-each step cost as much as half a forward and backward pass at batch 32."""
    kind, lr, wd = settings["optimizer"], float(settings["lr"]), float(settings.get("weight_decay", 0.0))
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=float(settings.get("momentum", 0.0)),
                               weight_decay=wd)
    if kind == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd, fused=True)
    raise ValueError(f"settings.optimizer: {kind!r} (sgd or adamw)")


@torch.no_grad()
def measure(model: nn.Module, x: torch.Tensor, y: torch.Tensor, device: str,
            batch: int = 1000) -> tuple[float, float, torch.Tensor]:
    """Accuracy, mean cross-entropy and predicted classes of ``model`` (eval mode) on one split."""
    model.eval()
    preds, loss = [], 0.0
    for i in range(0, len(y), batch):
        out = model(x[i:i + batch].to(device))
        loss += float(F.cross_entropy(out, y[i:i + batch].to(device), reduction="sum"))
        preds.append(out.argmax(1).cpu())
    model.train()
    pred = torch.cat(preds)
    return float((pred == y).float().mean()), loss / len(y), pred


def main(cell: Cell) -> None:
    """Train one cell: the probe's initial weights, the pipeline's optimizer and schedule, an evaluation of
    the three splits after every epoch, the record through the cell's recorder."""
    settings = cell.settings
    device = cell.device
    data = load_data(settings)
    torch.manual_seed(cell.init_seed)                 # anything the probe does not draw follows the init seed
    model = resnet18_small(num_classes=10)
    cell.apply_probe(model)                           # initmem: sigma_w x Kaiming-normal kernels, from init_seed
    model.to(device)
    epochs, batch_size = int(settings["epochs"]), int(settings["batch_size"])
    optimizer = make_optimizer(model, settings)
    steps_per_epoch = -(-len(data["train"][1]) // batch_size)
    scheduler = (torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * steps_per_epoch)
                 if settings.get("schedule", "constant") == "cosine" else None)
    # initmem: the recorder (clocks from the optimizer, kernel norms, split metrics, the checkpoint rule)
    rec = cell.recorder(optimizer, model, batch_size=batch_size, test_labels=data["test"][1], checkpoint=False)
    order = torch.Generator().manual_seed(cell.data_seed)   # data order from the data seed
    x_train, y_train = data["train"]

    def evaluate(epoch: int) -> None:
        train, val, test = (measure(model, *data[s], device) for s in ("train", "val", "test"))
        rec.evaluate(epoch, train=train[:2], val=val[:2], test=test[:2], predictions=test[2])

    evaluate(0)
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(len(y_train), generator=order)
        for i in range(0, len(perm), batch_size):
            idx = perm[i:i + batch_size]
            if len(idx) < 2:                          # BatchNorm needs two images
                continue
            loss = F.cross_entropy(model(x_train[idx].to(device)), y_train[idx].to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            rec.step(loss.detach())                   # initmem: after each optimizer step
        evaluate(epoch)                               # initmem: each evaluation
        if rec.diverged:
            break
    rec.finish()                                      # initmem: the record is complete

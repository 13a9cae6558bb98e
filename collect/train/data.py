"""Datasets as tensors: fixed train / validation / test splits that live on the training device.

The split depends only on ``dataset.split_seed`` (never on a cell's seed), so every cell of a
grid sees the same examples. Images are standardised with the training split's per-channel
mean and standard deviation. Batches are gathered by index from these tensors (no DataLoader).

MNIST-1D (generated, :mod:`initmem.collect.train.mnist1d_gen`) is held as 1 x 40 images
``[N, 1, 1, 40]``: the engine's packed layout ``[B, G*C, H, W]`` carries it unchanged, the 1-D
ResNet convolves along the width and the dense arms see 40 features (or 1-D patches).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from initmem.errors import UserError
from initmem.grid import DatasetSpec
from initmem.grid.datasets import GENERATED, SKLEARN, Dataset, dataset


@dataclass(frozen=True)
class Split:
    """The three splits as float32 NCHW tensors plus int64 labels (on CPU until moved)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int
    fingerprint: str

    @property
    def in_channels(self) -> int:
        return int(self.x_train.shape[1])

    @property
    def image_size(self) -> int | tuple[int, int]:
        """The side of a square image, or ``(H, W)`` for another shape (mnist1d: ``(1, 40)``)."""
        h, w = int(self.x_train.shape[-2]), int(self.x_train.shape[-1])
        return w if h == w else (h, w)

    def to(self, device: str) -> Split:
        move = lambda t: t.to(device)  # noqa: E731
        return Split(move(self.x_train), move(self.y_train), move(self.x_val), move(self.y_val),
                     move(self.x_test), move(self.y_test), self.n_classes, self.fingerprint)


def _fingerprint(*arrays: torch.Tensor) -> str:
    h = hashlib.sha256()
    for a in arrays:
        t = a.detach().cpu().contiguous()
        h.update(str(tuple(t.shape)).encode())
        h.update(str(t.dtype).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None, :, :]
    return x, d.target.astype(np.int64)


def _cifar(entry: Dataset, root: Path, hint: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """CIFAR-10/100 read straight from torchvision's on-disk pickles, never downloaded.

    torchvision's loader insists on the md5 of the official files, so it refuses a subset or
    a rebuilt copy in the same layout; here a file only has to unpickle to the right shapes.
    The cube records the split's fingerprint, which names the data exactly either way.
    """
    import pickle

    assert entry.pickles is not None
    folder, train_files, test_files, label_key = (entry.pickles.folder, entry.pickles.train, entry.pickles.test,
                                                  entry.pickles.label_key)
    c, (h, w) = entry.channels, entry.size

    def read(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        xs, ys = [], []
        for name in names:
            path = root / folder / name
            try:
                with path.open("rb") as fh:
                    batch = pickle.load(fh, encoding="latin1")
                x = np.asarray(batch["data"], dtype=np.uint8).reshape(-1, c, h, w)
                y = np.asarray(batch[label_key], dtype=np.int64)
            except (OSError, EOFError, pickle.UnpicklingError, KeyError, TypeError, ValueError) as exc:
                raise UserError(f"{entry.name} files not found or corrupt under {root} ({path.name}: "
                                f"{exc.__class__.__name__}): {hint}") from None
            if len(x) != len(y):
                raise UserError(f"{entry.name} file {path} is corrupt: {len(x)} images, {len(y)} labels")
            xs.append(x)
            ys.append(y)
        return np.concatenate(xs).astype(np.float32) / 255.0, np.concatenate(ys)

    xtr, ytr = read(train_files)
    xte, yte = read(test_files)
    n_classes = entry.classes
    if min(ytr.min(), yte.min()) < 0 or max(ytr.max(), yte.max()) >= n_classes:
        raise UserError(f"{entry.name} labels under {root} fall outside 0..{n_classes - 1}")
    return xtr, ytr, xte, yte, n_classes


def _torchvision(spec: DatasetSpec, entry: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """A torchvision data set from its files under ``dataset.root`` (never downloaded)."""
    import torchvision.datasets as tvd

    assert entry.torchvision is not None
    root = Path(str(spec.root)).expanduser()
    cls, kw_train, kw_test = entry.torchvision
    kw_txt = "".join(f"{k}={v!r}, " for k, v in kw_train.items())
    hint = entry.how_to_get.format(cls=cls, root=root, kw=kw_txt)
    if not root.is_dir():
        raise UserError(f"dataset.root {root} does not exist: {hint}")
    if entry.pickles is not None:
        return _cifar(entry, root, hint)
    try:
        train = getattr(tvd, cls)(str(root), download=False, **kw_train)
        test = getattr(tvd, cls)(str(root), download=False, **kw_test)
    except (RuntimeError, OSError, FileNotFoundError) as exc:
        raise UserError(f"{entry.name} files not found or corrupt under {root} ({exc}): {hint}") from None

    def arrays(ds) -> tuple[np.ndarray, np.ndarray]:
        data = ds.data.numpy() if isinstance(ds.data, torch.Tensor) else np.asarray(ds.data)
        labels = getattr(ds, "targets", None)
        if labels is None:
            labels = ds.labels
        labels = labels.numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
        if data.ndim == 3:                      # N H W (grayscale)
            data = data[:, None]
        elif data.shape[-1] in (1, 3):          # N H W C (CIFAR)
            data = data.transpose(0, 3, 1, 2)
        return data.astype(np.float32) / 255.0, labels.astype(np.int64)

    xtr, ytr = arrays(train)
    xte, yte = arrays(test)
    if min(ytr.min(), yte.min()) < 0 or max(ytr.max(), yte.max()) >= entry.classes:
        raise UserError(f"{entry.name} labels under {root} fall outside 0..{entry.classes - 1}")
    return xtr, ytr, xte, yte, entry.classes


@functools.lru_cache(maxsize=4)
def load_split(spec: DatasetSpec) -> Split:
    """The fixed split of ``spec`` (cached per process; tensors on CPU)."""
    rng = np.random.default_rng(spec.split_seed)
    entry = dataset(spec.name)
    if entry.source == GENERATED:
        from initmem.collect.train import mnist1d_gen

        xt, yt, xv, yv, xte, yte = (a[:, None, None, :] if a.ndim == 2 else a for a in mnist1d_gen.load(spec))
        return _standardised(xt, yt, xv, yv, xte, yte, entry.classes)
    if entry.source == SKLEARN:
        x, y = _digits()
        perm = rng.permutation(len(y))
        n_test = int(round(spec.test_fraction * len(y)))
        test_idx, rest = perm[:n_test], perm[n_test:]
        xte, yte = x[test_idx], y[test_idx]
        xtr, ytr = x[rest], y[rest]
        n_classes = entry.classes
    else:
        xtr, ytr, xte, yte, n_classes = _torchvision(spec, entry)
    perm = rng.permutation(len(ytr))
    n_val = int(round(spec.val_fraction * len(ytr)))
    if n_val < 1 or n_val >= len(ytr):
        raise UserError(f"dataset.val_fraction {spec.val_fraction} leaves an empty train or validation split")
    val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    return _standardised(xtr[train_idx], ytr[train_idx], xtr[val_idx], ytr[val_idx], xte, yte, n_classes)


def _standardised(xt: np.ndarray, yt: np.ndarray, xv: np.ndarray, yv: np.ndarray, xte: np.ndarray,
                  yte: np.ndarray, n_classes: int) -> Split:
    """The split as tensors, every image standardised by the training split's per-channel moments."""
    mean = xt.mean(axis=(0, 2, 3), keepdims=True)
    std = xt.std(axis=(0, 2, 3), keepdims=True) + 1e-6
    norm = lambda a: torch.from_numpy(np.ascontiguousarray((a - mean) / std, dtype=np.float32))  # noqa: E731
    lab = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))  # noqa: E731
    tensors = (norm(xt), lab(yt), norm(xv), lab(yv), norm(xte), lab(yte))
    return Split(*tensors, n_classes=n_classes, fingerprint=_fingerprint(*tensors))

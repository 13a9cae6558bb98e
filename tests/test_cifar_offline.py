"""CIFAR-10 offline, end to end: a small dataset written in torchvision's on-disk layout
(cifar-10-batches-py pickles), a reduced paper grid (ResNet-9 at width 4, 2 sigma_w, 1 seed,
1 epoch, 2 pipelines) collected through ``runner.collect`` into a valid cube, with the
network switched off so that nothing can download."""

from __future__ import annotations

import pickle
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.execution.runner import collect
from initmem.collect.train.data import load_split
from initmem.errors import UserError
from initmem.grid import load_grid, parse_grid

N_TRAIN_PER_FILE, N_TEST = 60, 50


def write_cifar10(root: Path, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random uint8 images in the official layout; returns the train images and labels."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    xs, ys = [], []

    def dump(name: str, n: int) -> None:
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, size=n)]
        with (folder / name).open("wb") as fh:
            pickle.dump({"batch_label": name, "data": data, "labels": labels,
                         "filenames": [f"{name}_{i}.png" for i in range(n)]}, fh)
        if name.startswith("data_batch"):
            xs.append(data)
            ys.append(labels)

    for i in range(1, 6):
        dump(f"data_batch_{i}", N_TRAIN_PER_FILE)
    dump("test_batch", N_TEST)
    with (folder / "batches.meta").open("wb") as fh:
        pickle.dump({"label_names": [f"class{i}" for i in range(10)], "num_cases_per_batch": N_TRAIN_PER_FILE,
                     "num_vis": 3072}, fh)
    return np.concatenate(xs), np.concatenate(ys)


@pytest.fixture
def offline(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("something tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def reduced_paper(root: Path) -> dict:
    d = load_grid("paper").to_dict()
    d["name"] = "paper_offline"
    d["dataset"]["root"] = str(root)
    d["model"]["width"] = 4
    d["sigma_w"] = [0.5, 2.0]
    d["seeds"] = [0]
    keep = ("sgd_low_lr", "adamw")
    d["pipelines"] = {k: {**d["pipelines"][k], "epochs": 1, "warmup_epochs": 0} for k in keep}
    d["engine"] = {**d["engine"], "cpu_threads": 1, "eval_batch_size": 512}
    return d


@pytest.mark.slow
def test_reduced_paper_grid_collects_from_an_offline_cifar10_folder(tmp_path, offline):
    x_train, y_train = write_cifar10(tmp_path / "data")
    grid = parse_grid(reduced_paper(tmp_path / "data"))
    split = load_split(grid.dataset)
    n_val = round(grid.dataset.val_fraction * len(y_train))
    assert split.x_train.shape[1:] == (3, 32, 32) and split.n_classes == 10
    assert split.y_train.numel() + split.y_val.numel() == len(y_train) == 5 * N_TRAIN_PER_FILE
    assert split.y_val.numel() == n_val and split.y_test.numel() == N_TEST
    # The split holds the files' images (here: the label multiset survives, pixels are standardised).
    assert sorted(torch.cat([split.y_train, split.y_val]).tolist()) == sorted(y_train.tolist())

    path = collect(grid, tmp_path / "run", device="cpu", jobs=1, quiet=True, progress=False)
    ds = cube.open_cube(path)
    assert not cube.errors(ds)
    assert list(ds[cube.PIPELINE].values) == ["sgd_low_lr", "adamw"]
    assert list(ds[cube.SIGMA].values) == [0.5, 2.0]
    assert bool(cube.ok_cells(ds).all())
    acc = ds[cube.TEST_ACC].isel({cube.EPOCH: -1})
    assert bool(((acc >= 0) & (acc <= 1)).all())
    assert ds.sizes[cube.EPOCH] == 2   # epoch 0 (init) and epoch 1


def test_a_broken_cifar_file_is_a_user_error(tmp_path, offline):
    write_cifar10(tmp_path / "data")
    (tmp_path / "data" / "cifar-10-batches-py" / "data_batch_3").write_bytes(b"\x80\x04truncated")
    grid = parse_grid(reduced_paper(tmp_path / "data"))
    with pytest.raises(UserError, match="data_batch_3"):
        load_split(grid.dataset)

"""The worked examples in examples/ (docs/own-model.md, "Worked examples"), each collected as a user runs it, at
a small size: its grid file with fewer sigma_w levels, seeds and epochs, written elsewhere with the example's
folder as its pipelines' ``workdir`` (where the entry point's module lies), gives a cube of the example's
pipelines, levels and seeds with every cell ok and the example's code recorded, which ``initmem analyze`` reads.
No network and no CIFAR-10 files: the ResNet-18 runs on the digits stand-in, the transformer on generated
MNIST-1D; the CIFAR-10 reader is checked on pickles written here in CIFAR-10's format."""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from initmem import cube
from initmem.collect.custom.identity import CODE, CODE_SHA256
from initmem.collect.execution.runner import collect
from initmem.tests._cli import invoke
from initmem.tests._compile_shape import SMALL_FLAG

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"   # shipped beside the package's modules, not in it
SIGMAS, SEEDS = [0.5, 2.0], [0, 1]


def _small_grid(example: str, tmp_path: Path, **settings: object) -> tuple[Path, dict]:
    """The example's grid.yaml at two sigma_w levels and two seeds, ``settings`` overriding every pipeline's,
    written in ``tmp_path``: its pipelines' ``workdir`` is the example's folder, where their code lies."""
    grid = yaml.safe_load((EXAMPLES / example / "grid.yaml").read_text(encoding="utf-8"))
    grid.update(sigma_w=SIGMAS, seeds=SEEDS)
    for spec in grid["pipelines"].values():
        spec["settings"].update(settings)
        spec["workdir"] = str(EXAMPLES / example)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
    return path, grid


def _collect_and_analyze(example: str, grid_path: Path, grid: dict, tmp_path: Path) -> object:
    folder = EXAMPLES / example
    path = Path(collect(grid_path, tmp_path / "run", device="cpu", jobs=1, progress=False, quiet=True))
    ds = cube.open_cube(path)
    assert list(ds[cube.PIPELINE].values) == list(grid["pipelines"])
    assert ds[cube.SIGMA].values.tolist() == SIGMAS and ds[cube.SEED].values.tolist() == SEEDS
    assert (ds[cube.STATUS].values == cube.OK).all(), json.loads(ds.attrs.get(cube.A_FAILED_CELLS, "[]"))
    assert ds[CODE].values.tolist() == [spec["entry"] for spec in grid["pipelines"].values()]
    module = folder / (grid["pipelines"][next(iter(grid["pipelines"]))]["entry"].partition(":")[0] + ".py")
    assert set(ds[CODE_SHA256].values.tolist()) == {hashlib.sha256(module.read_bytes()).hexdigest()}
    assert np.isfinite(ds[cube.SELECTED_TEST_ACC].values).all()
    # at this size no run interpolates: --gate all lets the analysis read every ok run
    rc = invoke("analyze", path, "--out", tmp_path / "analysis", "--delta", "2pt", "--gate", "all", "--draws", "50",
                "--tune", "50", "--chains", "2", *SMALL_FLAG)
    assert rc.returncode == 0, rc.stderr
    summary = json.loads((tmp_path / "analysis" / "summary.json").read_text(encoding="utf-8"))
    return ds, summary


@pytest.mark.slow
def test_the_resnet18_example_collects_on_the_digits_stand_in(tmp_path):
    # 1 epoch on 297 training images (n_val + n_test of the 1,797 held out): seconds per cell
    grid_path, grid = _small_grid("resnet18_cifar", tmp_path, epochs=1, n_val=500, n_test=1000)
    assert all(spec["settings"]["data"] == "digits" for spec in grid["pipelines"].values())
    ds, summary = _collect_and_analyze("resnet18_cifar", grid_path, grid, tmp_path)
    assert list(ds[cube.EPOCH].values) == [0, 1]
    assert ds.sizes[cube.EXAMPLE] == 1000                       # the per-example test predictions were recorded
    assert set(summary["pipelines"]) == set(grid["pipelines"])


@pytest.mark.slow
def test_the_transformer_example_collects_through_lightning(tmp_path):
    grid_path, grid = _small_grid("transformer_mnist1d", tmp_path, epochs=1, n_train=200, n_val=200, n_test=400)
    ds, summary = _collect_and_analyze("transformer_mnist1d", grid_path, grid, tmp_path)
    assert list(ds[cube.EPOCH].values) == [0, 1]                 # epoch 0: Lightning's full sanity check
    assert np.isfinite(ds[cube.TEST_ACC].values).all() and ds.sizes[cube.EXAMPLE] == 400
    assert set(summary["pipelines"]) == set(grid["pipelines"])


def test_the_cifar10_reader_reads_the_python_pickles(tmp_path, monkeypatch):
    """CIFAR-10's python format (``data`` rows of 3,072 uint8, channel-major, ``labels``), written here: the
    reader splits the training batches by the split seed, takes the first test images, standardizes by the
    training split; a folder without the pickles is refused, naming the missing file."""
    monkeypatch.syspath_prepend(str(EXAMPLES / "resnet18_cifar"))
    import train_resnet18 as example

    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, size=(20, 3072), dtype=np.uint8),
                 b"labels": rng.integers(0, 10, size=20).tolist()}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    splits = example.load_data({"data": "cifar10", "cifar_dir": str(tmp_path), "n_train": 60, "n_val": 30,
                                "n_test": 15})
    assert {k: tuple(v[0].shape) for k, v in splits.items()} == {"train": (60, 3, 32, 32), "val": (30, 3, 32, 32),
                                                                 "test": (15, 3, 32, 32)}
    test_raw = pickle.loads((tmp_path / "test_batch").read_bytes())
    assert splits["test"][1].tolist() == test_raw[b"labels"][:15]
    x = splits["train"][0]
    np.testing.assert_allclose(x.mean(dim=(0, 2, 3)).numpy(), 0.0, atol=1e-5)
    np.testing.assert_allclose(x.std(dim=(0, 2, 3)).numpy(), 1.0, rtol=1e-5)
    # the first test image is the first row of the test pickle, channel-major, mapped per channel by one
    # increasing affine map (the training split's standardization)
    raw = np.asarray(test_raw[b"data"][0], dtype=np.float64).reshape(3, 32, 32)
    for channel in range(3):
        r = np.corrcoef(raw[channel].ravel(), splits["test"][0][0, channel].numpy().ravel())[0, 1]
        assert r == pytest.approx(1.0, abs=1e-6)
    model = example.resnet18_small()
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert model(splits["test"][0][:2]).shape == (2, 10)
    (tmp_path / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        example.load_data({"data": "cifar10", "cifar_dir": str(tmp_path), "n_train": 6, "n_val": 3, "n_test": 1})
    sys.modules.pop("train_resnet18", None)

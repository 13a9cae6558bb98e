"""MNIST-1D as a grid data set: generated offline, cached by its generator arguments, named in the cube.

Why these checks: the set is generated, not read, so its identity is the generator's arguments
(seed included) and the package version; a run must never reach the network (the package's own
loader downloads), and the generator's global seeding must not leak into the caller's streams.
"""

from __future__ import annotations

import json
import random
import socket
import urllib.request

import numpy as np
import pytest

from initmem.collect.train import mnist1d_gen
from initmem.collect.train.coords import A_DATASET_PROVENANCE, cube_attrs
from initmem.collect.train.data import load_split
from initmem.errors import UserError
from initmem.grid import DatasetSpec, grid_hash, load_grid, parse_grid


def _spec(tmp_path, **kw) -> DatasetSpec:
    return DatasetSpec(**{"name": "mnist1d", "n_train": 60, "n_val": 20, "n_test": 35, "seed": 1,
                          "root": str(tmp_path), **kw})


def _grid(**dataset) -> dict:
    return {"name": "t", "dataset": {"name": "mnist1d", **dataset}, "model": {"arch": "resnet1d", "width": 8},
            "sigma_w": [1], "seeds": [0], "pipelines": {"a": {"optimizer": "sgd", "lr": 0.1, "batch_size": 8,
                                                               "epochs": 1}}}


def test_same_args_same_arrays_other_seed_other_arrays_sizes_honoured(tmp_path):
    a = mnist1d_gen.load(_spec(tmp_path / "a"))
    b = mnist1d_gen.load(_spec(tmp_path / "b"))            # generated again, in another cache
    c = mnist1d_gen.load(_spec(tmp_path / "a"))            # read back from the cache
    assert [len(t) for t in a] == [60, 60, 20, 20, 35, 35]
    assert a[0].shape == (60, 40) and a[0].dtype == np.float32 and a[1].dtype == np.int64
    for x, y, z in zip(a, b, c, strict=True):
        assert np.array_equal(x, y) and np.array_equal(x, z)
    assert len(list((tmp_path / "a").glob("mnist1d-*.npz"))) == 1
    other = mnist1d_gen.load(_spec(tmp_path / "a", seed=2))
    assert not np.array_equal(other[0], a[0])
    assert set(np.unique(np.concatenate([a[1], a[3], a[5]]))) <= set(range(10))


def test_generation_leaves_global_random_state_alone(tmp_path):
    np.random.seed(123)
    random.seed(456)
    np_before, py_before = np.random.get_state(), random.getstate()
    mnist1d_gen.load(_spec(tmp_path))
    np_after = np.random.get_state()
    assert all(np.array_equal(x, y) for x, y in zip(np_before, np_after, strict=True))
    assert random.getstate() == py_before


def test_no_network(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("network access")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    requests = pytest.importorskip("requests")
    monkeypatch.setattr(requests, "get", refuse)
    monkeypatch.setattr(requests.Session, "request", refuse)
    x = mnist1d_gen.load(_spec(tmp_path, seed=7))[0]
    assert x.shape == (60, 40)


def test_corrupt_cache_is_regenerated(tmp_path):
    spec = _spec(tmp_path)
    good = mnist1d_gen.load(spec)[0]
    (path,) = tmp_path.glob("mnist1d-*.npz")
    path.write_bytes(b"not a zip")
    assert np.array_equal(mnist1d_gen.load(spec)[0], good)


def test_split_tensors_and_provenance(tmp_path):
    grid = parse_grid(_grid(n_train=60, n_val=20, n_test=35, seed=1, root=str(tmp_path)))
    split = load_split(grid.dataset)
    assert tuple(split.x_train.shape) == (60, 1, 1, 40) and tuple(split.x_test.shape) == (35, 1, 1, 40)
    assert split.image_size == (1, 40) and split.in_channels == 1 and split.n_classes == 10
    prov = json.loads(cube_attrs(grid, "cpu")[A_DATASET_PROVENANCE])
    assert prov["args"]["seed"] == 1 and prov["args"]["num_samples"] == 120
    assert prov["mnist1d_version"] == mnist1d_gen.package_version() != ""
    assert prov["split"] == {"train": [0, 60], "val": [60, 80], "test": [80, 115]}


def test_grid_fields_defaults_identity_and_errors():
    g = parse_grid(_grid())
    assert (g.dataset.n_train, g.dataset.n_val, g.dataset.n_test, g.dataset.seed) == (4000, 1000, 10000, 0)
    assert "n_train: 4000" in g.to_yaml() and "val_fraction" not in g.to_yaml()
    assert parse_grid(json.loads(json.dumps(g.to_dict()))) == g             # the canonical form round-trips
    assert grid_hash(parse_grid(_grid(seed=1))) != grid_hash(g)              # the seed is identity
    quick = load_grid("digits")
    assert set(quick.to_dict()["dataset"]) == {"name", "root", "val_fraction", "test_fraction", "split_seed",
                                               "augment"}                    # digits: as before mnist1d
    bad = [
        ({**_grid(), "dataset": {"name": "digits", "n_train": 10}}, "dataset.n_train"),
        (_grid(val_fraction=0.3), "dataset.val_fraction"),
        (_grid(augment="crop_flip"), "dataset.augment"),
        (_grid(n_test=0), "dataset.n_test"),
        ({**_grid(), "model": {"arch": "resnet_tiny"}}, "model.arch"),
        ({**_grid(), "dataset": {"name": "digits"}}, "model.arch"),
        ({**_grid(), "model": {"arch": "vit_tiny", "patch": 3}}, "model.patch"),
    ]
    for data, field in bad:
        with pytest.raises(UserError, match=field):
            parse_grid(data)


def test_the_quick_preset_mirrors_the_digits_one_on_mnist1d():
    q1, q = load_grid("quick"), load_grid("digits")
    assert q1.dataset.name == "mnist1d" and q1.dataset.n_test >= 10_000
    assert list(q1.pipelines) == list(q.pipelines)
    assert [p.optimizer for p in q1.pipelines.values()] == [p.optimizer for p in q.pipelines.values()]
    assert q1.model.arch == "resnet1d" and q1.eval.interp_threshold == 0.995

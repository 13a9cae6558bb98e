"""MNIST-1D (Greydanus & Kobak, ICML 2024), generated offline and cached: no download, ever.

Why generated: the set is procedural (ten 1-D digit templates, randomly padded, scaled,
translated, sheared and noised, then resampled to 40 points), so a grid can ask for a test set
of 10,000 or more examples, which a decisive memory test needs (the digits demo's 719 leave
0.6 points of binomial noise per cell). The ``mnist1d`` package's own ``get_dataset`` downloads
a pickle; it is never called: :func:`generate` runs the package's generator
``mnist1d.data.make_dataset`` on its built-in templates.

Identity and cache: the generator arguments (the package defaults, with ``num_samples`` the
three split sizes summed and rounded up to a multiple of the 10 classes, ``train_split`` 1 and
``seed`` the grid's ``dataset.seed``) and the package version name the data. They key a cache
file ``mnist1d-<hash>.npz`` under ``dataset.root`` (or the user cache dir), written atomically
and read back with NumPy (no pickle). The same arguments and package version give the same
arrays on any machine (tested); the cube records them as provenance (``dataset_provenance``).

The generator seeds NumPy's and Python's global random state (``set_seed``); both are saved and
restored around it, so generating the data leaves the caller's random streams untouched.

NumPy only (no torch): the split arrays are made tensors by :mod:`initmem.collect.train.data`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from initmem.atomic import atomic_path
from initmem.errors import UserError
from initmem.grid import MNIST1D_LENGTH, DatasetSpec
from initmem.grid.datasets import GENERATED, dataset

N_CLASSES = 10
GENERATOR = "mnist1d.data.make_dataset"
CACHE_ENV = "INITMEM_CACHE_DIR"  # overrides the default cache folder (when dataset.root is null)


def package_version() -> str:
    """The installed ``mnist1d`` version ('' when it is missing)."""
    try:
        return metadata.version("mnist1d")
    except metadata.PackageNotFoundError:
        return ""


def sizes(spec: DatasetSpec) -> tuple[int, int, int]:
    """``(n_train, n_val, n_test)`` of an mnist1d spec."""
    if dataset(spec.name).source != GENERATED or None in (spec.n_train, spec.n_val, spec.n_test):
        raise ValueError(f"not an mnist1d spec: {spec}")
    return int(spec.n_train), int(spec.n_val), int(spec.n_test)  # type: ignore[arg-type]


def generator_args(spec: DatasetSpec) -> dict[str, Any]:
    """The arguments handed to the generator: the package defaults (its download URL dropped),
    every example in one pool (``train_split`` 1, split here), sized and seeded by the grid."""
    total = sum(sizes(spec))
    args = {k: v for k, v in _default_args().items() if k != "url"}
    args.update(num_samples=-(-total // N_CLASSES) * N_CLASSES, train_split=1.0, seed=int(spec.seed or 0))
    if args.get("final_seq_length") != MNIST1D_LENGTH:
        raise UserError(f"mnist1d {package_version()}: its signals have length {args.get('final_seq_length')}, "
                        f"initmem expects {MNIST1D_LENGTH}")
    return args


def _default_args() -> dict[str, Any]:
    try:
        from mnist1d.data import get_dataset_args
    except ImportError:
        raise UserError("dataset mnist1d needs the mnist1d package (pip install mnist1d)") from None
    return dict(get_dataset_args(as_dict=True))


def provenance(spec: DatasetSpec) -> dict[str, Any]:
    """What names an mnist1d split: generator, its arguments, package version, split sizes."""
    n_train, n_val, n_test = sizes(spec)
    return {"generator": GENERATOR, "mnist1d_version": package_version(), "args": generator_args(spec),
            "split": {"train": [0, n_train], "val": [n_train, n_train + n_val],
                      "test": [n_train + n_val, n_train + n_val + n_test]}}


def cache_dir(spec: DatasetSpec) -> Path:
    """``dataset.root``, else ``$INITMEM_CACHE_DIR``, else ``$XDG_CACHE_HOME/initmem`` (``~/.cache``)."""
    if spec.root is not None:
        return Path(spec.root).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "initmem"


def cache_key(args: dict[str, Any], version: str) -> str:
    """sha256 of the canonical JSON of the generator arguments and the package version."""
    text = json.dumps({"args": args, "mnist1d_version": version}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def generate(args: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Run the package's generator on ``args``: signals ``[N, 40]`` float32 and labels ``[N]`` int64.

    The generator calls ``np.random.seed`` and ``random.seed`` (global state); both states are
    restored afterwards, whatever happens, so the caller's random streams are untouched.
    """
    from mnist1d.data import make_dataset
    from mnist1d.utils import ObjectView

    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        data = make_dataset(ObjectView(dict(args)))
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
    return np.asarray(data["x"], dtype=np.float32), np.asarray(data["y"], dtype=np.int64)


def _read(path: Path, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached arrays, or None when the file is missing, unreadable or for other arguments."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return None
            return np.asarray(z["x"], dtype=np.float32), np.asarray(z["y"], dtype=np.int64)
    except (OSError, KeyError, ValueError, EOFError):
        return None


def load(spec: DatasetSpec) -> tuple[np.ndarray, ...]:
    """The three splits ``(x_train, y_train, x_val, y_val, x_test, y_test)``, x shaped ``[N, 40]``.

    From the cache when a file for these generator arguments exists; otherwise generated and
    cached (atomically: a concurrent worker or a crash never leaves a half-written file; two
    workers that race both write the same bytes). An unwritable cache folder only costs the
    regeneration next time.
    """
    n_train, n_val, n_test = sizes(spec)
    args, version = generator_args(spec), package_version()
    key = cache_key(args, version)
    path = cache_dir(spec) / f"mnist1d-{key[:20]}.npz"
    cached = _read(path, key)
    if cached is None:
        x, y = generate(args)
        try:
            with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                np.savez(fh, x=x, y=y, key=np.array(key), args=np.array(json.dumps(args, sort_keys=True)),
                         mnist1d_version=np.array(version))
        except OSError:
            pass
    else:
        x, y = cached
    a, b, c = n_train, n_train + n_val, n_train + n_val + n_test
    return x[:a], y[:a], x[a:b], y[a:b], x[b:c], y[b:c]

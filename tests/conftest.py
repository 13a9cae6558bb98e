"""Shared fixtures and the order in which the test files run.

The tests import their shared helpers from the package they live in, ``initmem.tests`` (``tests/_*.py``:
``from initmem.tests._cli import invoke``), which the installed package resolves in this process and in every
subprocess a test starts; nothing here or in the tests edits ``sys.path``."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from initmem.tests._cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
_SESSION_CACHE = "INITMEM_TEST_SESSION_CACHE"
_cache_key = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """One compiled-model cache (models/compiled.py) for the whole test run: every test file, the
    xdist workers (they inherit the environment set here) and the CLI subprocesses compile each
    model structure once between them. A fresh folder, removed at the end, so no test depends on
    what an earlier run left behind and the user's own cache is never touched."""
    if os.environ.get(_SESSION_CACHE):      # an xdist worker: the controller made the folder
        return
    _share_cores(config)
    folder = tempfile.mkdtemp(prefix="initmem-test-cache-")
    os.environ["INITMEM_CACHE_DIR"] = os.environ[_SESSION_CACHE] = folder
    config.stash[_cache_key] = folder


def _share_cores(config: pytest.Config) -> None:
    """Under xdist, each worker's thread pools (OpenBLAS, OpenMP, torch) get its share of the cores.

    With a pool per core in every worker, two workers on two cores run four busy threads, and OpenBLAS's
    threads spin while they wait: the planner's quadrature tests spent 40% more CPU seconds for the same
    work (tests/test_plan.py and tests/test_paired.py on two workers, 140 s against 101 s of user time), CPU
    that the other worker's file then lacks. The workers inherit the environment set here; a thread count
    the user set stays as it is. A run without workers keeps the libraries' defaults."""
    workers = getattr(config.option, "numprocesses", None)
    if not isinstance(workers, int) or workers < 1:
        return
    share = str(max(1, (os.cpu_count() or 1) // workers))
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, share)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files with the most ``slow`` tests first, the others after them, each file's tests in their own order.

    xdist hands whole files to its two workers in collection order (``--dist loadfile --no-loadscope-reorder``,
    as `make test` runs it), so a long file collected last keeps one worker busy while the other idles; the
    long tests are the ones marked ``slow``, so their files go first and the short files fill in behind them.
    The order follows the marks: no list of file names to keep up to date."""
    slow = Counter(item.path for item in items if item.get_closest_marker("slow"))
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    order = {item: i for i, item in enumerate(items)}
    items.sort(key=lambda item: (-slow[item.path], first[item.path], order[item]))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_cache_key, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_SESSION_CACHE, None)


@pytest.fixture
def one_torch_thread():
    """For tests that drive the packed trainer directly, outside train_pack's own thread setting: one torch
    thread, so the two test workers do not oversubscribe two cores; the setting is restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def cli():
    return run_cli

"""Shared fixtures, and the one way tests import their helpers: this folder is put on ``sys.path`` here, and
the helpers are modules named ``_*.py`` imported by their bare names (``from _cli import invoke``)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _cli import run_cli

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
    folder = tempfile.mkdtemp(prefix="initmem-test-cache-")
    os.environ["INITMEM_CACHE_DIR"] = os.environ[_SESSION_CACHE] = folder
    config.stash[_cache_key] = folder


# The longest files first (measured: `python benchmarks/suite_timing.py`, 2026-12-01; test_collect_slurm.py is long
# where a real Slurm cluster is up, as in CI, and short elsewhere): xdist hands
# files to the two workers in collection order (with --no-loadscope-reorder, as `make test` runs it; by default
# xdist reorders files by their number of tests), so a long file collected last keeps one worker busy while
# the other idles. Longest-first evens the workers out; the order of tests inside a file is unchanged.
# The three files on the shared (24, 7, 6) compiled model (tests/_memory_designs.py) are spread out: test_plan.py
# early compiles it, and the two calibration files, later, load it from the shared cache instead of compiling
# it again at the same time on the other worker.
LONGEST_FILES = ("test_demo_contrast.py", "test_memory_model.py", "test_plan.py", "test_runner.py",
                 "test_collect_slurm.py", "test_cli.py", "test_runner_engine.py", "test_engine.py",
                 "test_sequential.py", "test_report.py", "test_import_epochs.py", "test_calibration_designs.py",
                 "test_collapse.py", "test_browser.py", "test_exponents.py", "test_export.py", "test_frequentist.py",
                 "test_calibration.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    order = {item: i for i, item in enumerate(items)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), order[item]))


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_cache_key, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_SESSION_CACHE, None)


@pytest.fixture
def cli():
    return run_cli

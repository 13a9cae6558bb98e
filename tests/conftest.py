"""Shared fixtures: run the real CLI in this process (invoke) or in a subprocess (run_cli)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
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


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_cache_key, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(_SESSION_CACHE, None)


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``initmem ARGS`` exactly as a user would, in a fresh interpreter."""
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "initmem.cli", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout,
    )


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2, exactly one line on stderr that starts 'initmem: error:', no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("initmem: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def cli():
    return run_cli


def invoke(*args: object) -> subprocess.CompletedProcess:
    """Run ``initmem ARGS`` in this process through the real entry point (``cli.main``: exit codes and
    the one-line errors included), with click's CliRunner isolating stdin, stdout and stderr.

    As exact as :func:`run_cli` for everything but a fresh interpreter, and seconds faster."""
    from click.testing import CliRunner

    from initmem import cli

    with CliRunner().isolation() as (out, err, _):
        rc = cli.main([str(a) for a in args])
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(list(args), rc, stdout, stderr)

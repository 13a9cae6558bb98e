"""Helpers shared by the collector tests: tiny grids, a subprocess runner, cube comparison."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import xarray as xr

from initmem import cube
from initmem.atomic import leftover_temporaries
from initmem.collect.execution.events import read_events

FAKE_GRID = """\
name: fake
sigma_w: [0.5, 1, 2]
seeds: [0, 1]
pipelines:
  sgd: {optimizer: sgd, lr: 0.1, batch_size: 32, epochs: 4}
  adam: {optimizer: adam, lr: 0.01, batch_size: 32, epochs: 3}
"""

REAL_GRID = """\
name: tinyreal
dataset: {name: digits}
model: {arch: resnet_tiny, width: 4}
sigma_w: [0.5, 2]
seeds: [0]
pipelines:
  sgd: {optimizer: sgd, lr: 0.05, batch_size: 128, epochs: 2}
"""


def checkpoint_recorder() -> tuple[list[dict], Callable[[dict], None]]:
    """A ``checkpoint=`` callback for ``train_pack`` and the list it fills: each state as a resume reads it back,
    saved with ``torch.save`` and loaded with ``weights_only=True``."""
    import io

    import torch

    states: list[dict] = []

    def keep(state: dict) -> None:
        buf = io.BytesIO()
        torch.save(state, buf)
        buf.seek(0)
        states.append(torch.load(buf, weights_only=True))

    return states, keep


def write_grid(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def run_collect_subprocess(grid: Path, out: Path, *, fake: bool = True, resume: bool = False,
                           env: dict[str, str] | None = None, pack_size: int = 3,
                           timeout: float = 1800) -> subprocess.CompletedProcess:
    """``collect(...)`` in a fresh interpreter (so a test hook can SIGKILL it).

    The kill lands at a hook point, never at a time; the generous timeout only guards against a
    hang, so a loaded machine slows the test down but cannot fail it."""
    code = textwrap.dedent(f"""
        from initmem.collect.execution.runner import collect
        train_fn = None
        if {fake!r}:
            from initmem.tests._collect_fake import fake_train_pack as train_fn
        collect({str(grid)!r}, {str(out)!r}, resume={resume!r}, device="cpu", progress=False, quiet=True,
                pack_size={pack_size!r}, train_fn=train_fn)
    """)
    full_env = {**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env,
                          timeout=timeout)


def comparable(path: Path) -> xr.Dataset:
    """A cube without what legitimately differs between two runs (wall time, creation time)."""
    ds = cube.open_cube(path)
    ds = ds.drop_vars([v for v in ("wall_seconds",) if v in ds.data_vars])
    ds.attrs = {k: v for k, v in ds.attrs.items() if k != "created"}
    return ds


def assert_same_cube(a: Path, b: Path) -> None:
    xr.testing.assert_identical(comparable(a), comparable(b))


def assert_clean(run: Path) -> None:
    """No temporary file survives; no checkpoint or manifest is left once every cell finished."""
    assert leftover_temporaries(run) == []
    assert sorted(p.name for p in (run / "checkpoints").glob("*")) == []


def preempt_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Make the first task that saves a checkpoint send itself submitit's preemption signal, once.

    The array tasks unpickle the stand-in engine by its module name (``initmem.tests._collect_fake``),
    which the installed package resolves in any interpreter: no search path to extend."""
    monkeypatch.setenv("INITMEM_TEST_HOOK", "checkpoint_saved:1:preempt")
    monkeypatch.setenv("INITMEM_TEST_HOOK_ONCE", str(tmp_path / "preempted"))


def check_preempted_once(run: Path) -> None:
    """One requeue, one resume from the epoch-1 checkpoint, the requeued pack started twice."""
    events = read_events(run / "events.jsonl")
    kinds = Counter(e["event"] for e in events)
    assert kinds["requeue"] == 1
    resumed = [e for e in events if e["event"] == "resume"]
    assert len(resumed) == 1 and resumed[0]["epochs_done"] == 1
    requeued = next(e["pack"] for e in events if e["event"] == "requeue")
    assert sum(1 for e in events if e["event"] == "job_start" and e["pack"] == requeued) == 2
    assert (run / "slurm").is_dir() and any((run / "slurm").iterdir())

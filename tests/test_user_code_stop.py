"""One Ctrl-C stops a grid of user code (docs/own-model.md, "Stopping a grid"), whatever the code makes of it:
the command exits 130 with one line, the cells in flight get no shard (not ``failed``: ``--resume`` trains them),
the finished cells stay, nothing is left half-written, no process of the grid survives, and the resume gives the
uninterrupted cube. The Ctrl-C lands at an exact point (a fault hook in the user's loop, or the user's code itself
once the other cells are done), never at a time."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from initmem import cube
from initmem.atomic import leftover_temporaries
from initmem.collect.execution.events import read_events
from initmem.collect.execution.runner import collect
from initmem.collect.execution.shards import read_shard, shard_files, shard_path
from initmem.tests import _user_pipelines
from initmem.tests._cli import run_cli
from initmem.tests._collect_util import assert_clean, assert_same_cube

pytestmark = pytest.mark.slow
MODULE = "initmem.tests.test_user_code_stop"
INTERRUPTED = ["initmem: error: aborted"]   # the command line on a Ctrl-C, as for the built-in engine


# The user's code ------------------------------------------------------------------------------------------

def swallows(cell) -> None:
    """PyTorch Lightning's way with a Ctrl-C (``pytorch_lightning/trainer/call.py``): catch it, ignore every later
    one while shutting down, ``sys.exit(1)``."""
    try:
        _user_pipelines.train(cell)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.exit(1)


def goes_on(cell) -> None:
    """A loop that catches a Ctrl-C and never ends (after the grace period only a kill stops it)."""
    try:
        _user_pipelines.train(cell)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            time.sleep(0.05)


def holds(cell) -> None:
    """Trains, except the grid's last cell on its first attempt: deaf to SIGINT and SIGTERM, it waits for the other
    cells' shards, then presses the user's Ctrl-C at the collector (its worker's parent) and never ends."""
    release = Path(cell.settings["release"])
    if (cell.sigma_w, cell.seed) != (2.0, 1) or release.exists():
        _user_pipelines.train(cell)
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    (release.parent / "held.pid").write_text(str(os.getpid()), encoding="utf-8")
    shards = cell.record.parents[2] / "shards"
    while len(list(shards.glob("*.nc"))) < 3:
        time.sleep(0.05)
    os.kill(os.getppid(), signal.SIGINT)
    while True:
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------------------------

def _grid(tmp_path: Path, entry: str, settings: str = "") -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(f"name: stop\nsigma_w: [0.5, 2]\nseeds: [0, 1]\npipelines:\n"
                    f'  mine: {{entry: "{entry}", settings: {{epochs: 2, lr: 0.2{settings}}}}}\n',
                    encoding="utf-8")
    return path


def _shards(out: Path) -> dict[tuple, int]:
    return {info.cell: info.status for info in map(read_shard, shard_files(out / "shards"))}


def _stopped_cleanly(out: Path, proc) -> None:
    assert proc.returncode == 130, (proc.returncode, proc.stderr)
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == INTERRUPTED, proc.stderr
    assert leftover_temporaries(out) == []
    assert not any(e["event"] in ("pack_failed", "cell_failed") for e in read_events(out / "events.jsonl"))


@pytest.mark.parametrize("entry", ["swallows", "goes_on"])
def test_a_ctrl_c_in_the_users_loop_stops_the_grid_and_the_resume_finishes_it(tmp_path, entry):
    grid = _grid(tmp_path, f"{MODULE}:{entry}")
    out = tmp_path / "run"
    # three evaluations a cell (epochs 0, 1, 2): the fifth is the second cell's second, inside its loop
    proc = run_cli("collect", grid, "--out", out, "--jobs", "1", "--device", "cpu", "-q",
                   env={"INITMEM_TEST_HOOK": "evaluate:5:interrupt"}, timeout=900)
    _stopped_cleanly(out, proc)
    first = ("mine", 0.5, 0)
    assert _shards(out) == {first: cube.OK}          # the cell in flight has none: it is not failed
    kept = shard_path(out / "shards", first).stat().st_mtime_ns
    collect(grid, out, resume=True, device="cpu", jobs=1, progress=False, quiet=True)
    if entry == "swallows":   # the interrupted grid, resumed, is the uninterrupted one
        baseline = collect(grid, tmp_path / "baseline", device="cpu", jobs=1, progress=False, quiet=True)
        assert_same_cube(out / "cube.nc", baseline)
    assert set(_shards(out).values()) == {cube.OK} and len(_shards(out)) == 4
    assert shard_path(out / "shards", first).stat().st_mtime_ns == kept   # the finished cell stayed as it was
    assert_clean(out)


def test_a_worker_deaf_to_the_signal_is_killed_and_the_others_shards_stay(tmp_path):
    release = tmp_path / "release"
    # the user's module beside the grid file, the collect started elsewhere: the workers find it there
    (tmp_path / "stop_here.py").write_text(f"from {MODULE} import holds  # noqa: F401\n", encoding="utf-8")
    grid = _grid(tmp_path, "stop_here:holds", f", release: {release}")
    out = tmp_path / "run"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli("collect", grid, "--out", out, "--jobs", "2", "--device", "cpu", "-q", cwd=elsewhere,
                   timeout=900)
    _stopped_cleanly(out, proc)
    held = ("mine", 2.0, 1)
    assert _shards(out) == {c: cube.OK for c in (("mine", 0.5, 0), ("mine", 0.5, 1), ("mine", 2.0, 0))}
    pid = int((tmp_path / "held.pid").read_text(encoding="utf-8"))
    with pytest.raises(ProcessLookupError):   # the deaf worker was killed, with its process group
        os.kill(pid, 0)
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "shards").glob("*.nc")}
    release.touch()
    collect(out / "grid.yaml", out, resume=True, device="cpu", jobs=1, progress=False, quiet=True)
    assert _shards(out) == {(c[0], float(c[1]), int(c[2])): cube.OK for c in [
        ("mine", 0.5, 0), ("mine", 0.5, 1), ("mine", 2.0, 0), held]}
    assert all((out / "shards" / name).stat().st_mtime_ns == t for name, t in kept.items())
    assert_clean(out)

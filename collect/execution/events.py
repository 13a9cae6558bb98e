"""The run's event log, ``DIR/events.jsonl``: one JSON object per line, appended.

Several processes (local workers, Slurm array tasks) append to one log. Each event is written
with a single ``os.write`` on an ``O_APPEND`` descriptor, so lines from different processes do
not interleave on a local file system. A process killed mid-write can leave a truncated last
line; :func:`read_events` skips lines that do not parse.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

from initmem import cube
from initmem.names import EVENTS_JSONL

EVENTS_FILE = EVENTS_JSONL  # initmem/names.py


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def cell_dict(pipeline: str, sigma_w: float, seed: int) -> dict[str, Any]:
    return {cube.PIPELINE: pipeline, cube.SIGMA: float(sigma_w), cube.SEED: int(seed)}


class EventLog:
    """Append-only JSON-lines log; ``emit(event, **fields)`` adds one line."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def emit(self, event: str, **fields: Any) -> None:
        record = {"time": now_iso(), "event": event, "pid": os.getpid(), **fields}
        line = (json.dumps(record, default=str, sort_keys=False) + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


def read_events(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every complete event in the log (a truncated or garbled line is skipped)."""
    path = Path(path)
    if not path.exists():
        return []
    out: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict):
                out.append(rec)
    return out

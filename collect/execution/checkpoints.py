"""Per-pack training checkpoints under ``DIR/checkpoints/``, written atomically.

The engine hands over its state (model, optimizer and scheduler state, RNG states, the
position in the data order, the curves so far) as plain tensors, numbers, strings, lists and
dicts; this module wraps it with the pack's identity and saves it with ``torch.save`` to a
temporary name, then renames. Loading uses ``torch.load(weights_only=True)``: a checkpoint can
never execute code. A checkpoint that does not load is reported and ignored (the pack then
starts from scratch), never trusted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from initmem.atomic import atomic_path, write_text
from initmem.collect.execution.fault_hooks import hook
from initmem.collect.execution.shards import Cell

CKPT_FORMAT = "initmem.pack-checkpoint/1"


def pack_id(pipeline: str, cells: list[tuple[float, int]]) -> str:
    """A stable name for a pack: its pipeline and a hash of its sorted cells."""
    key = json.dumps([pipeline, sorted([float(s), int(k)] for s, k in cells)])
    return f"{pipeline}-{hashlib.sha1(key.encode()).hexdigest()[:12]}"


def checkpoint_path(ckpt_dir: str | os.PathLike, pid: str) -> Path:
    return Path(ckpt_dir) / f"{pid}.pt"


def lock_path(ckpt_dir: str | os.PathLike, pid: str) -> Path:
    return Path(ckpt_dir) / f"{pid}.lock"


@contextlib.contextmanager
def pack_lock(ckpt_dir: str | os.PathLike, pid: str) -> Iterator[None]:
    """Hold ``DIR/checkpoints/<pack>.lock`` while a process trains the pack (the kernel frees it when
    the process dies), so ``--status`` can tell a pack in training from an interrupted one."""
    fd = None
    try:
        Path(ckpt_dir).mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path(ckpt_dir, pid), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # a file system without flock: train anyway, --status then cannot tell
        if fd is not None:
            os.close(fd)
        fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def pack_running(ckpt_dir: str | os.PathLike, pid: str) -> bool | None:
    """Whether a live process holds the pack's lock (None: this file system cannot say)."""
    try:
        fd = os.open(lock_path(ckpt_dir, pid), os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # also drops the shared lock, if taken
    return False


def manifest_path(ckpt_dir: str | os.PathLike, pid: str) -> Path:
    return Path(ckpt_dir) / f"{pid}.json"


def write_manifest(ckpt_dir: str | os.PathLike, pid: str, pipeline: str, cells: list[tuple[float, int]]) -> Path:
    """Record a pack's composition when it starts, so a resume rebuilds the very same pack.

    The engine trains the members of a pack jointly, so a resumed run must keep each pack's
    cells together (a checkpoint only fits its own pack, and bit-identical curves need the same
    packing). The manifest lives until the pack's shards are all written.
    """
    body = {"format": CKPT_FORMAT, "pack": pid, "pipeline": pipeline,
            "cells": [[float(s), int(k)] for s, k in cells]}
    return write_text(manifest_path(ckpt_dir, pid), json.dumps(body) + "\n")


def read_manifests(ckpt_dir: str | os.PathLike) -> list[tuple[str, list[Cell]]]:
    """(pack id, cells) of every pack that started and has not finished; unreadable ones skipped."""
    d = Path(ckpt_dir)
    out: list[tuple[str, list[Cell]]] = []
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.json")):
        try:
            body = json.loads(p.read_text(encoding="utf-8"))
            cells = [(str(body["pipeline"]), float(s), int(k)) for s, k in body["cells"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        out.append((p.stem, cells))
    return out


def save(path: str | os.PathLike, *, pipeline: str, cells: list[tuple[float, int]], grid_hash: str,
         epochs_done: int, state: dict[str, Any]) -> Path:
    import torch  # torch.save: the CLI-side callers (plan, status) must not load torch

    payload = {
        "format": CKPT_FORMAT,
        "pipeline": pipeline,
        "cells": [[float(s), int(k)] for s, k in cells],
        "grid_hash": grid_hash,
        "epochs_done": int(epochs_done),
        "state": state,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
        hook("checkpoint_write")
    hook("checkpoint_saved")
    return Path(path)


def load(path: str | os.PathLike) -> tuple[dict[str, Any] | None, str]:
    """(payload, "") or (None, why it is unusable)."""
    import torch  # as in save

    path = Path(path)
    if not path.exists():
        return None, "no checkpoint"
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        return None, f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    if not isinstance(payload, dict) or payload.get("format") != CKPT_FORMAT:
        return None, "not an initmem pack checkpoint"
    return payload, ""


def cells_of(payload: dict[str, Any]) -> list[Cell]:
    return [(str(payload["pipeline"]), float(s), int(k)) for s, k in payload["cells"]]


def remove(path: str | os.PathLike) -> None:
    with contextlib.suppress(FileNotFoundError):
        Path(path).unlink()


def drop_orphan_locks(ckpt_dir: str | os.PathLike) -> list[str]:
    """Remove the lock files that no live process holds and no manifest goes with: a worker killed between taking
    its pack's lock and writing the manifest, or between dropping the manifest and the lock, leaves one behind,
    and nothing else would ever remove it. Returns the packs whose lock was removed."""
    d = Path(ckpt_dir)
    if not d.is_dir():
        return []
    dropped = []
    for lock in sorted(d.glob("*.lock")):
        pid = lock.name[: -len(".lock")]
        if not manifest_path(d, pid).exists() and pack_running(d, pid) is False:
            remove(lock)
            dropped.append(pid)
    return dropped


def finish(ckpt_dir: str | os.PathLike, pid: str) -> None:
    """Drop a finished (or abandoned) pack's checkpoint, then its manifest and lock file."""
    remove(checkpoint_path(ckpt_dir, pid))
    remove(manifest_path(ckpt_dir, pid))
    remove(lock_path(ckpt_dir, pid))

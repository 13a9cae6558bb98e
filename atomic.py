"""Atomic file writes: a reader or a crash never sees a half-written output.

Every output goes to a temporary name in the same folder (so ``os.replace`` is a rename on one
file system) and is renamed into place only once complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TMP_SUFFIX = ".initmem-tmp"


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` if the block succeeds."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=TMP_SUFFIX, dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
    try:
        yield tmp_path
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def blocking_file(folder: str | os.PathLike) -> Path | None:
    """The file that keeps ``folder`` from being a folder: ``folder`` itself, or the nearest existing path
    above it, when that is not a folder; None when the folder exists or can be made."""
    path = Path(folder)
    for p in (path, *path.parents):
        if p.exists():
            return None if p.is_dir() else p
    return None


def leftover_temporaries(folder: str | os.PathLike) -> list[Path]:
    """Temporary files a killed writer left behind (they are never mistaken for outputs)."""
    return sorted(Path(folder).rglob(f"*{TMP_SUFFIX}"))

"""All or nothing for an output folder: ``initmem analyze`` and ``initmem collapse`` write their files into
a temporary folder beside the target and move them in only once every file is written.

A run that fails (bad input found late, a crash in the statistics, Ctrl-C) leaves the target as it was:
not created when it did not exist, its earlier files untouched when it did. Each file is renamed into
place (``os.replace``, atomic on one file system), the key file (``summary.json``) last, so a reader never
sees a new summary beside old companions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from initmem.atomic import TMP_SUFFIX, blocking_file
from initmem.errors import UserError, option


def check_out_dir(out_dir: str | os.PathLike, what: str = "output") -> Path:
    """``out_dir`` as a path, refused in one line when it (or a folder above it) is a file."""
    out = Path(out_dir)
    blocker = blocking_file(out)
    if blocker == out:
        raise UserError(f"{out} is a file, not a folder: {option('out')} names the folder the {what} is written to")
    if blocker is not None:
        raise UserError(f"{blocker} is a file, not a folder: {out} cannot be created under it")
    return out


@contextlib.contextmanager
def staged_folder(out_dir: str | os.PathLike, *, what: str = "output", last: str | None = None,
                  stale: Sequence[str] = (), replace: bool = False) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``out_dir``; when the block succeeds its files become
    ``out_dir``'s (the folder itself is renamed into place when ``out_dir`` did not exist).

    ``last``: the file moved last into an existing folder (the one readers start from). ``stale``: files an
    earlier run may have left in ``out_dir`` that this run did not write (they would be read beside the new
    files), removed after the move. ``replace``: the new folder takes the place of ``out_dir`` whole (nothing of
    the old one is kept; the old folder is renamed aside, then removed). On failure the temporary folder and any
    parent folders it created are removed and ``out_dir`` is left as it was."""
    out = check_out_dir(out_dir, what)
    created = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=TMP_SUFFIX, dir=out.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700; the folder gets the usual permissions
    except OSError as exc:
        _remove_empty(created)
        raise UserError(f"cannot write {out} ({exc.strerror or exc})") from None
    try:
        yield tmp
        if replace and out.is_dir():
            _swap(tmp, out)
        else:
            _publish(tmp, out, last, stale)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(created)
        raise
    shutil.rmtree(tmp, ignore_errors=True)


def _publish(tmp: Path, out: Path, last: str | None, stale: Sequence[str]) -> None:
    written = sorted(p.name for p in tmp.iterdir())
    if not out.exists():
        try:
            os.rename(tmp, out)  # a new folder appears whole
            return
        except OSError:
            if not out.is_dir():  # made meanwhile by someone else: move the files in as below
                raise
    order = [n for n in written if n != last] + [n for n in written if n == last]
    for name in order:
        os.replace(tmp / name, out / name)
    for name in stale:
        if name not in written:
            with contextlib.suppress(FileNotFoundError):
                (out / name).unlink()


def _swap(tmp: Path, out: Path) -> None:
    """Put the folder ``tmp`` in the place of the folder ``out``: two renames, so a reader sees the old folder or
    the new one, never a mix; the old one is removed afterwards."""
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", suffix=TMP_SUFFIX, dir=out.parent))
    os.rename(out, old / out.name)
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_empty(folders: list[Path]) -> None:
    """Remove the parent folders this run created (deepest first), if they are still empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


__all__ = ["check_out_dir", "staged_folder"]

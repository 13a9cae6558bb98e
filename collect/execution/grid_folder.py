"""The grid folder: its layout, its record (``run.json``), grid-change checks and its lock.

The folder a grid trains into (docs/glossary.md: a *run* is one trained network, a cell's, never the folder). The
files keep the names of earlier versions (``run.json``, schema ``initmem.run/1``; the events ``run_start``,
``resume_run``, ``run_end``), so every folder written before resumes, merges and reports unchanged.

    DIR/grid.yaml        the grid the folder trains (canonical YAML, rewritten when extended)
    DIR/run.json         schema, accepted grid hashes (one per extension), executor, Slurm jobs
    DIR/shards/          one NetCDF shard per finished cell (shards/corrupt/: quarantined ones)
    DIR/checkpoints/     one torch checkpoint per pack still in training
    DIR/events.jsonl     the event log
    DIR/cube.nc          the merge of all shards
    DIR/slurm/           submitit's job folders (Slurm executor)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from initmem.atomic import blocking_file, leftover_temporaries, write_text
from initmem.collect.execution.budgets import training_grid
from initmem.errors import OptionError, UserError, option
from initmem.names import CUBE_NC, EVENTS_JSONL

RUN_SCHEMA = "initmem.run/1"
# What a resume may change freely: how the grid runs or where its data sit, never what it computes.
# Every other engine setting changes a cell's numbers or what is recorded (bf16 autocast, the measured
# clocks, torch.compile's kernels, the channels_last layout, the CPU thread count, the evaluation
# batches), so a resume refuses a change there; pack_size does not (docs/collect.md, *Packing is
# exact*). dataset.root is where the data are; the data fingerprint in run.json checks they are the same.
EXEMPT_FIELDS = ("slurm", "engine.pack_size", "engine.cells_per_gpu", "dataset.root")


@dataclass(frozen=True)
class GridFolder:
    """The paths of one grid folder under ``root``, and its record (``run.json``)."""

    root: Path

    @property
    def grid_file(self) -> Path:
        return self.root / "grid.yaml"

    @property
    def record_file(self) -> Path:
        return self.root / "run.json"

    @property
    def shards(self) -> Path:
        return self.root / "shards"

    @property
    def corrupt(self) -> Path:
        return self.root / "shards" / "corrupt"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def events(self) -> Path:
        return self.root / EVENTS_JSONL

    @property
    def cube(self) -> Path:
        return self.root / CUBE_NC

    @property
    def slurm(self) -> Path:
        return self.root / "slurm"

    @property
    def lock_file(self) -> Path:
        return self.root / ".collect.lock"

    def exists(self) -> bool:
        return self.record_file.exists()

    def not_a_grid_folder(self, what: str = "no run.json") -> UserError:
        """The error for a path that is no grid folder: a file, a missing folder, a folder without ``what``."""
        if self.root.exists() and not self.root.is_dir():
            return UserError(f"{self.root} is a file, not a collect grid folder")
        if not self.root.exists():
            return UserError(f"{self.root} is not a collect grid folder (it does not exist)")
        return UserError(f"{self.root} is not a collect grid folder ({what})")

    def read_record(self) -> dict[str, Any]:
        try:
            return json.loads(self.record_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            raise self.not_a_grid_folder() from None
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{self.record_file} is unreadable ({exc}); start anew with "
                            f"{option('force_new', True)}") from None

    def write_record(self, record: dict[str, Any]) -> None:
        write_text(self.record_file, json.dumps(record, indent=2, sort_keys=True) + "\n")

    def update_record(self, **changes: Any) -> dict[str, Any]:
        rec = self.read_record()
        rec.update(changes)
        self.write_record(rec)
        return rec

    def accepted_hashes(self) -> set[str]:
        return set(self.read_record().get("grid_hashes", []))

    def load_grid(self) -> Any:
        if not self.grid_file.is_file():
            raise self.not_a_grid_folder("no grid.yaml")
        return training_grid(self.grid_file)

    def clean_temporaries(self) -> list[Path]:
        """Remove temporaries a killed writer left behind (only while no writer runs)."""
        removed = []
        for p in leftover_temporaries(self.root):
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
        return removed


def check_out_folder(root: Path) -> None:
    """Refuse an output path that cannot be a grid folder (a file, or a path under a file) before
    anything is written."""
    blocker = blocking_file(root)
    if blocker is not None:
        what = "is a file" if blocker == root else f"lies under {blocker}, a file"
        raise OptionError("out", f"{{option}} {root} {what}; give the grid folder DIR ({CUBE_NC} is written inside it)")


def fresh_folder(root: Path) -> Path:
    """``root`` if it holds no run, else the first ``root-2``, ``root-3``... that does not."""
    if not GridFolder(root).exists():
        return root
    if root.name in ("", ".", ".."):  # '.', '..', 'a/..': name the folder itself, then its siblings
        root = root.resolve()
    if not root.name:
        raise OptionError("out", f"{{option}} {root} holds a training; cannot start a new grid folder next to it")
    n = 2
    while GridFolder(root.with_name(f"{root.name}-{n}")).exists():
        n += 1
    return root.with_name(f"{root.name}-{n}")


@contextlib.contextmanager
def folder_lock(folder: GridFolder) -> Iterator[None]:
    """Exclusive lock on the grid folder for the life of a local collect (freed if killed)."""
    try:
        folder.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UserError(f"cannot create the grid folder {folder.root}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"another initmem collect is running on {folder.root}; wait for it to finish") from None
        yield
    finally:
        os.close(fd)


def undo_fresh_start(folder: GridFolder, *, made_root: bool) -> bool:
    """Remove what a refused new run wrote (record, grid, event log, empty folders, the lock) so the
    corrected command starts cleanly; True if removed. A run that trained anything (a shard or a
    checkpoint) or submitted Slurm jobs is kept: ``--resume`` continues it."""
    if shard_files_exist(folder) or any(folder.checkpoints.glob("*.pt")):
        return False
    try:
        if json.loads(folder.record_file.read_text(encoding="utf-8")).get("slurm_jobs"):
            return False
    except (OSError, ValueError):
        pass
    for f in (folder.record_file, folder.grid_file, folder.events, folder.lock_file):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
    for d in (folder.checkpoints, folder.slurm, folder.shards):
        shutil.rmtree(d, ignore_errors=True)
    if made_root:
        with contextlib.suppress(OSError):
            folder.root.rmdir()  # only if empty: never a file the user put there
    return True


def shard_files_exist(folder: GridFolder) -> bool:
    return folder.shards.is_dir() and any(p.is_file() for p in folder.shards.iterdir())


# Grid changes ------------------------------------------------------------------------------

def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in new:
                out.append(f"{sub} (removed)")
            elif key not in old:
                out.append(f"{sub} (added)")
            else:
                _diff(old[key], new[key], sub, out)
    elif old != new:
        out.append(f"{path} ({_short(old)} -> {_short(new)})")


def _short(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _drop(d: dict[str, Any], dotted: str) -> None:
    """Remove the field at a dotted path (``engine.pack_size``) from nested dicts, if present."""
    *parents, last = dotted.split(".")
    for key in parents:
        d = d.get(key) if isinstance(d, dict) else None
        if not isinstance(d, dict):
            return
    d.pop(last, None)


def _seeds_text(seeds: Any) -> str:
    """A grid's ``seeds`` as the grid file writes them: ``[0, 1]`` or ``{init: [0, 1], data: [0]}``."""
    if isinstance(seeds, dict):
        return "{" + ", ".join(f"{k}: {list(v)}" for k, v in seeds.items()) + "}"
    return str(list(seeds))


def grid_changes(old: Any, new: Any) -> tuple[list[str], dict[str, list[Any]]]:
    """Compare two grids: (fields that differ in a way resume refuses, what was only added).

    Adding pipelines, sigma_w levels or seeds is an extension (its new cells simply run), except to a
    crossed seed design (``seeds: {init: [...], data: [...]}``), whose seeds may not change at all;
    anything else that differs, including removing a level, is a change that resume refuses.
    The fields in ``EXEMPT_FIELDS`` (the ``slurm`` block, ``engine.pack_size``, ``engine.cells_per_gpu``,
    ``dataset.root``) and a user-code pipeline's ``timeout_min``
    say how to run or where the data are, not what to compute, and are ignored; every other
    ``engine`` setting counts (it changes the numbers or what is recorded).
    """
    a, b = old.to_dict(), new.to_dict()
    for key in EXEMPT_FIELDS:
        _drop(a, key)
        _drop(b, key)
    for d in (a, b):   # a user-code cell's time limit says how long to wait, not what it computes
        for name in old.user_pipelines.keys() | new.user_pipelines.keys():
            _drop(d, f"pipelines.{name}.timeout_min")
    changed: list[str] = []
    added: dict[str, list[Any]] = {"pipelines": [], "sigma_w": [], "seeds": []}
    if isinstance(a["seeds"], dict) or isinstance(b["seeds"], dict):
        # A crossed design numbers its runs row-major over its (init, data) lists: another list renumbers
        # the runs already trained, so it is a change, never an extension.
        olds, news = a.pop("seeds"), b.pop("seeds")
        if olds != news:
            changed.append(f"seeds ({_seeds_text(olds)} -> {_seeds_text(news)}; a crossed design's seeds cannot "
                           "change on resume: its run index would renumber the runs already trained)")
    for key in ("sigma_w", "seeds"):
        if key not in a:
            continue
        olds, news = a.pop(key), b.pop(key)
        gone = [v for v in olds if v not in news]
        if gone:
            changed.append(f"{key} (removed {', '.join(f'{v:g}' if isinstance(v, float) else str(v) for v in gone)})")
        added[key] = [v for v in news if v not in olds]
    op, np_ = a.pop("pipelines"), b.pop("pipelines")
    for name, cfg in op.items():
        if name not in np_:
            changed.append(f"pipelines.{name} (removed)")
        else:
            _diff(cfg, np_[name], f"pipelines.{name}", changed)
    added["pipelines"] = [n for n in np_ if n not in op]
    _diff(a, b, "", changed)
    return changed, added

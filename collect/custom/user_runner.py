"""Running the cells of a user-code pipeline: the collector's train function for ``entry`` and ``command``.

:class:`UserTrainFn` stands where the built-in engine's ``train_pack`` stands (collect/execution/pack_job.py
calls it with a pack of cells), so that everything the collector does for the engine's packs it does for the
user's runs: shards, the merge, resume after a kill, ``--until-decided``, crossed seeds, worker processes, GPUs
and Slurm. A user-code pack is one cell. Built-in pipelines of the same grid go to the engine.

One cell (:func:`run_cell`): its :class:`~initmem.collect.custom.cell.Cell` is written to
``RUN/cells/CELL/cell.json``; the code runs (an entry point in this process, or in a child process when its
pipeline has a ``timeout_min``; a command always in a child process, with ``INITMEM_CELL`` naming the cell file,
its output in ``output.log``); the record it wrote through the recorder becomes the cell's shard, with the
code's identity as per-pipeline coordinates. Faults become statuses with reasons (docs/own-model.md,
"Faults"): the code raised (``failed``, its traceback kept in the shard), the loss went non-finite
(``diverged``, from the record), it ran past ``timeout_min`` (``failed``, "timed out"), it wrote no record or
left it unfinished (``failed``, with the last lines it printed). A Ctrl-C or SIGTERM is no fault of the cell's:
the cell ends as interrupted, with no shard, whatever the code makes of the signal (collect/custom/stopping.py).

Run as ``python -m initmem.collect.custom.user_runner CELL_FILE ENTRY WORKDIR``: an entry point's child process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.atomic import write_text
from initmem.collect.custom.cell import CELL_ENV, CELL_FILE, RECORD_FILE, SCRATCH_DIR, Cell
from initmem.collect.custom.identity import CODE, CODE_COORDS, command_argv, import_entry, on_path
from initmem.collect.custom.stopping import cell_guard, stop_child
from initmem.collect.execution.shards import shard_name
from initmem.collect.train.coords import cube_attrs
from initmem.grid import Grid, UserPipelineSpec

CELLS_DIR = "cells"          # RUN/cells/<cell>/: the cell file, the record, the output, the scratch folder
OUTPUT_FILE = "output.log"   # a child process's stdout and stderr
TRACEBACK_FILE = "traceback.txt"
LAST_LINES = 20              # output lines kept with a cell that failed without a traceback of its own
USER_CODE = "user code"      # the cube's arch (and dataset, for a grid of user code only)
RUN_COMPLETE = "run_complete"  # the recorder's attribute: 1 once the loop called rec.finish()


class CellFailed(Exception):
    """A user-code cell that did not give a usable record: ``reason`` is the one-line why (the failure table's
    detail), ``traceback_text`` what the shard keeps of it (the code's traceback, or its last output lines)."""

    def __init__(self, reason: str, traceback_text: str = "") -> None:
        super().__init__(reason)
        self.reason, self.traceback_text = reason, traceback_text


def cell_folder(root: str | os.PathLike, cell: tuple[str, float, int]) -> Path:
    """A cell's own folder under the grid folder (named as its shard, without the suffix)."""
    return Path(root) / CELLS_DIR / shard_name(cell).removesuffix(".nc")


def make_cell(grid: Grid, pipeline: str, sigma_w: float, run: int, *, device: str, folder: Path) -> Cell:
    """The cell of (pipeline, sigma_w, run index) with its seeds, device and paths."""
    spec = grid.pipelines[pipeline]
    assert isinstance(spec, UserPipelineSpec)
    init_seed, data_seed = grid.seed_pair(run)
    coords: dict[str, Any] = {cube.PIPELINE: pipeline, cube.SIGMA: float(sigma_w), cube.SEED: int(run)}
    if grid.crossed:
        coords.update({cube.INIT_SEED: init_seed, cube.DATA_SEED: data_seed})
    return Cell(pipeline=pipeline, settings=dict(spec.settings), sigma_w=float(sigma_w), seed=int(run),
                init_seed=init_seed, data_seed=data_seed, device=str(device), scratch=folder / SCRATCH_DIR,
                record=folder / RECORD_FILE, coords=coords, init=grid.init.model_dump(mode="json"),
                eval={"interp_threshold": float(grid.eval.interp_threshold), "select": grid.eval.select},
                grid_name=grid.name, measure_clocks=bool(grid.engine.measure_clocks))


def user_attrs(grid: Grid, device: str) -> dict[str, Any]:
    """The global attributes of a user-code cell's shard: the collector's (:func:`cube_attrs`), the
    architecture named per pipeline (``user code`` for the user's), the data set ``user code`` when no
    pipeline trains the grid's."""
    attrs = cube_attrs(grid, device)
    attrs[cube.A_ARCH] = ",".join(dict.fromkeys(
        USER_CODE if grid.pipelines[p].is_user_code else grid.model_of(p).arch for p in grid.pipelines))
    attrs[cube.A_NORM] = ",".join(dict.fromkeys(
        USER_CODE if grid.pipelines[p].is_user_code else grid.model_of(p).norm for p in grid.pipelines))
    if not grid.engine_pipelines:
        attrs[cube.A_DATASET] = USER_CODE
        attrs[cube.A_AUGMENT] = USER_CODE
    return attrs


@dataclass
class UserTrainFn:
    """The collector's train function for a grid with user-code pipelines (picklable: worker processes and
    Slurm tasks get it whole).

    ``root`` is the grid folder, ``workdirs`` and ``identities`` each user pipeline's folder and code identity
    (made once, where the run starts, from ``base``: the folder relative paths are taken from,
    :func:`~initmem.collect.custom.identity.code_base`), ``engine`` the train function of the grid's built-in
    pipelines."""

    root: str
    workdirs: dict[str, str]
    identities: dict[str, dict[str, str]]
    engine: Callable[..., Any] | None = None
    base: str | None = None

    @property
    def state_version(self) -> Any:
        """The engine's checkpoint layout (pack_job checks a checkpoint against it); user cells keep none."""
        return getattr(self.engine, "state_version", None)

    def pipeline_coords(self, pipeline: str) -> dict[str, str]:
        """The per-pipeline coordinates of a user-code pipeline: its code's identity."""
        return dict(self.identities[pipeline])

    def __call__(self, grid: Grid, pipeline: str, cells: list[tuple[float, int]], *, device: str,
                 progress: Callable[[int, int], None] | None = None, **engine_kwargs: Any) -> xr.Dataset:
        spec = grid.pipelines[pipeline]
        if not isinstance(spec, UserPipelineSpec):
            if self.engine is None:
                raise RuntimeError(f"no engine to train the built-in pipeline {pipeline}")
            return self.engine(grid, pipeline, cells, device=device, progress=progress, **engine_kwargs)
        if len(cells) != 1:
            raise ValueError(f"a user-code pack holds one cell (got {len(cells)} of {pipeline})")
        sigma, run = cells[0]
        if progress is not None:
            progress(0, 1)
        ds = run_cell(grid, pipeline, float(sigma), int(run), device=device, root=Path(self.root),
                      workdir=Path(self.workdirs[pipeline]), identity=self.identities[pipeline])
        if progress is not None:
            progress(1, 1)
        return ds


def run_cell(grid: Grid, pipeline: str, sigma_w: float, run: int, *, device: str, root: Path, workdir: Path,
             identity: dict[str, str]) -> xr.Dataset:
    """Run one cell's code and return its record as a single-cell cube; raise :class:`CellFailed` (or the code's
    own exception, for an entry point run in this process) when it gives none."""
    spec = grid.pipelines[pipeline]
    assert isinstance(spec, UserPipelineSpec)
    folder = cell_folder(root, (pipeline, sigma_w, run))
    folder.mkdir(parents=True, exist_ok=True)
    cell = make_cell(grid, pipeline, sigma_w, run, device=device, folder=folder)
    cell.scratch.mkdir(exist_ok=True)
    cell_file = folder / CELL_FILE
    write_text(cell_file, cell.to_json())   # atomically: a stop never leaves half a cell file
    for stale in (folder / TRACEBACK_FILE,):
        stale.unlink(missing_ok=True)
    started = time.time()
    t0 = time.monotonic()
    with cell_guard():   # a Ctrl-C or SIGTERM ends the cell as interrupted (no shard), whatever the code makes of it
        if spec.entry is not None and spec.timeout_min is None:
            with on_path(workdir), _cwd(workdir):
                try:
                    import_entry(spec.entry, workdir)(cell)   # its exception is the cell's: recorded failed
                except SystemExit as exc:   # sys.exit() in the code ends the cell, not the collector
                    if exc.code not in (None, 0):
                        raise CellFailed(f"called sys.exit({exc.code!r})", traceback.format_exc()) from None
        else:
            _run_child(spec, cell_file, folder, workdir)
    ds = _read_record(cell, folder, started)
    return _as_shard(ds, grid, cell, device=device, identity=identity, seconds=time.monotonic() - t0)


class _cwd:
    """Run in ``folder`` for the duration (an entry point finds its relative files where a command would)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.before = folder, ""

    def __enter__(self) -> None:
        self.before = os.getcwd()
        os.chdir(self.folder)

    def __exit__(self, *exc: Any) -> None:
        os.chdir(self.before)


def _run_child(spec: UserPipelineSpec, cell_file: Path, folder: Path, workdir: Path) -> None:
    """Run the cell's code in a child process of its own session, killed (with its children) past the timeout."""
    if spec.entry is not None:
        argv = [sys.executable, "-m", "initmem.collect.custom.user_runner", str(cell_file), spec.entry, str(workdir)]
    else:
        argv = command_argv(str(spec.command))
    env = {**os.environ, CELL_ENV: str(cell_file)}
    log = folder / OUTPUT_FILE
    timeout = None if spec.timeout_min is None else 60.0 * float(spec.timeout_min)
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise CellFailed(f"timed out after {spec.timeout_min:g} min (pipelines.{cell_pipeline(cell_file)}"
                             ".timeout_min)", _last_lines(log)) from None
        except BaseException:
            stop_child(proc)   # the collector is stopped: the signal to the code's group, then SIGKILL
            raise
    if code != 0:
        tb_file = folder / TRACEBACK_FILE
        if tb_file.is_file():
            tb = tb_file.read_text(encoding="utf-8", errors="replace")
            raise CellFailed(_last_line(tb) or f"exited with code {code}", tb)
        tail = _last_lines(log)
        why = f"exited with code {code}" if code > 0 else f"was killed by signal {-code}"
        last = _last_line(tail)
        raise CellFailed(f"{why}{': ' + last if last else ''}", tail)


def cell_pipeline(cell_file: Path) -> str:
    return Cell.from_json(cell_file.read_text(encoding="utf-8")).pipeline


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _last_lines(log: Path, n: int = LAST_LINES) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-n:])


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _read_record(cell: Cell, folder: Path, started: float) -> xr.Dataset:
    """The record this attempt wrote (a record older than the attempt is a killed attempt's, not this one's)."""
    tail = _last_lines(folder / OUTPUT_FILE)
    said = f"; its last output: {_last_line(tail)}" if tail else ""
    path = cell.record
    if not path.is_file() or path.stat().st_mtime < started - 1.0:
        raise CellFailed(f"wrote no record (the code must record through cell.recorder(...) to {path}){said}",
                         tail)
    try:
        ds = cube.open_cube(path, check=False).load()
    except Exception as exc:
        raise CellFailed(f"its record {path} cannot be read ({exc.__class__.__name__}: {exc})", tail) from None
    if int(ds.attrs.get(RUN_COMPLETE, 1)) != 1:
        raise CellFailed(f"its record is unfinished (the code ended before rec.finish()){said}", tail)
    return ds


def _as_shard(ds: xr.Dataset, grid: Grid, cell: Cell, *, device: str, identity: dict[str, str],
              seconds: float) -> xr.Dataset:
    """A record as the cell's shard: at the cell's coordinates, diverged where its training loss is not finite,
    the code's identity on the pipeline dim, the collector's attributes."""
    for dim in cube.CELL_DIMS:
        if dim not in ds.dims:
            ds = ds.expand_dims(dim)
        elif ds.sizes[dim] != 1:
            raise CellFailed(f"its record holds {ds.sizes[dim]} values of {dim} (one run per record)")
    ds = ds.assign_coords({cube.PIPELINE: np.array([cell.pipeline], dtype=object),
                           cube.SIGMA: np.asarray([cell.sigma_w], dtype="float64"),
                           cube.SEED: np.asarray([cell.seed], dtype="int64")})
    for name in cube.SEED_COORDS:
        if name in ds.coords:
            ds = ds.drop_vars(name)   # the merge takes a crossed design's seeds from the grid
    if cube.STATUS not in ds.data_vars:
        ds[cube.STATUS] = (cube.CELL_DIMS, np.full((1, 1, 1), cube.OK, dtype="int8"))
    if cube.TRAIN_LOSS in ds.data_vars:
        loss = np.asarray(ds[cube.TRAIN_LOSS].values, dtype="float64")
        if np.isinf(loss).any():   # the recorder marks a NaN loss; an infinite one diverged as well
            ds[cube.STATUS] = (cube.CELL_DIMS, np.full((1, 1, 1), cube.DIVERGED, dtype="int8"))
    if cube.WALL_SECONDS not in ds.data_vars or not np.isfinite(ds[cube.WALL_SECONDS].values).all():
        ds[cube.WALL_SECONDS] = (cube.CELL_DIMS, np.full((1, 1, 1), seconds, dtype="float32"))
    for name, value in identity.items():
        ds = ds.assign_coords({name: (cube.PIPELINE, np.array([value], dtype=object))})
    attrs = {k: v for k, v in ds.attrs.items() if k != RUN_COMPLETE}
    ds.attrs = {**attrs, **user_attrs(grid, device),
                **{k: attrs[k] for k in (cube.A_N_TEST, cube.A_DATASET_FINGERPRINT) if k in attrs}}
    return ds


def default_coords(spec: UserPipelineSpec) -> dict[str, str]:
    """The per-pipeline coordinates of a user-code pipeline none of whose cells has a shard."""
    return {CODE: spec.label(), **{c: "" for c in CODE_COORDS if c != CODE}}


def _child_main(argv: list[str]) -> int:
    """An entry point's child process: call it with the cell; on an exception keep the traceback and exit 1."""
    cell_file, entry, workdir = Path(argv[0]), argv[1], Path(argv[2])
    cell = Cell.from_json(cell_file.read_text(encoding="utf-8"))
    try:
        import_entry(entry, workdir)(cell)
    except BaseException:
        tb = traceback.format_exc()
        (cell_file.parent / TRACEBACK_FILE).write_text(tb, encoding="utf-8")
        print(tb, file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))


"""``initmem collect``: train a grid into shards, resumably, and merge them into ``DIR/cube.nc``.

:func:`collect_cube` is the public face (``initmem.collect_cube``): every option a keyword, gathered into one
:class:`~initmem.collect.execution.options.CollectOptions` record. It is named for what it makes because
``initmem.collect`` is the training subpackage, whose name any import of its modules rebinds. :func:`collect` is
the entry point behind it and behind the command line: the record, plus the stand-ins tests and the sequential
design need (``train_fn``, ``only``).

The flow of one call:

1. prepare the grid folder: a new run, or (``resume``) the same run, refusing a changed grid
   except for pure extensions (new pipelines, sigma_w levels or seeds);
2. scan the shards: finished cells are skipped, corrupt shards are quarantined and rerun,
   failed cells are rerun with ``retry_failed``;
3. plan packs: packs that had started keep their composition (their manifest) and resume
   from their checkpoint; the other unfinished cells are packed by the engine's planner;
4. execute on the local executor (worker processes) or the Slurm executor (submitit array);
5. merge all shards into the cube and print the table of failed and diverged cells.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Unpack

from initmem import cube
from initmem.atomic import write_text
from initmem.collect.execution import checkpoints
from initmem.collect.execution.assemble import corrupt_error, merge_folder, print_summary
from initmem.collect.execution.budgets import training_grid
from initmem.collect.execution.events import EventLog, cell_dict, now_iso
from initmem.collect.execution.grid_folder import (
    RUN_SCHEMA,
    GridFolder,
    check_out_folder,
    folder_lock,
    fresh_folder,
    grid_changes,
    undo_fresh_start,
)
from initmem.collect.execution.local_executor import auto_jobs, train_local, usable_cores, worker_plan
from initmem.collect.execution.options import EXECUTORS, CollectFields, CollectOptions
from initmem.collect.execution.pack_job import PackTask, TrainFn, default_train_fn
from initmem.collect.execution.progress import ProgressView
from initmem.collect.execution.shards import Cell, CorruptShard, all_cells, read_shard, scan_shards, shard_files
from initmem.errors import UserError, option
from initmem.grid import Grid, grid_hash

__all__ = ["EXECUTORS", "CollectOptions", "collect", "collect_cube"]


def _say(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, flush=True)


# Preparing the grid folder ------------------------------------------------------------------

def _refuse_foreign_folder(folder: GridFolder) -> None:
    """A folder that holds files but no grid folder's record is someone else's: refused, never written into
    (only the lock a killed first start may leave behind is taken for an empty folder)."""
    if folder.exists() or not folder.root.is_dir():
        return
    held = sorted(p.name for p in folder.root.iterdir() if p != folder.lock_file)
    if held:
        shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise UserError(f"{folder.root} holds other files ({shown}) and is no grid folder; give an empty or new "
                        f"folder as the output")


def prepare_folder(folder: GridFolder, grid: Any, *, resume: bool, executor: str, quiet: bool,
                fingerprint: str | None = None) -> dict[str, Any]:
    """Create the grid folder or check that ``grid`` may continue it; return what was added.

    ``fingerprint`` names the data the grid's dataset section loads now (``dataset_fingerprint``):
    recorded with a new run, and a resume refuses other data (``dataset.root`` may move)."""
    h = grid_hash(grid)
    events = EventLog(folder.events)
    if folder.exists():
        if not resume:
            raise UserError(f"{folder.root} already holds a collect run; add {option('resume', True)} to continue it "
                            f"or {option('force_new', True)} to start a new grid folder")
        old = folder.load_grid()
        changed, added = grid_changes(old, grid)
        if changed:
            raise UserError(f"cannot resume {folder.root}: the grid file differs from the run's grid in "
                            f"{'; '.join(changed)} (a resume may add pipelines, sigma_w levels or seeds and "
                            f"change engine.pack_size, dataset.root or the slurm block, nothing else; use "
                            f"{option('force_new', True)} for a new grid folder)")
        rec = folder.read_record()
        before = _folder_fingerprint(folder, rec)
        if fingerprint is not None and before is not None and before != fingerprint:
            raise UserError(f"cannot resume {folder.root}: the data set under dataset.root "
                            f"{grid.dataset.root or '(default)'} differs from the run's (dataset fingerprint "
                            f"{fingerprint[:12]}, the run's {before[:12]}); point dataset.root at the run's data "
                            f"or use {option('force_new', True)} for a new grid folder")
        removed = folder.clean_temporaries()
        hashes = list(rec.get("grid_hashes", []))
        if h not in hashes:
            hashes.append(h)
        write_text(folder.grid_file, grid.to_yaml())
        folder.update_record(grid_hashes=hashes, resumed=now_iso(),
                          **({"dataset_fingerprint": fingerprint} if fingerprint is not None else {}))
        extended = {k: v for k, v in added.items() if v}
        events.emit("resume_run", grid_hash=h, extended=extended, removed_temporaries=[p.name for p in removed])
        if extended:
            _say("grid extended by " + "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in extended.items())
                 + " (only the new cells run)", quiet)   # the labels added, e.g. "seeds 3, 4"
        return extended
    folder.root.mkdir(parents=True, exist_ok=True)
    write_text(folder.grid_file, grid.to_yaml())
    record = {"schema": RUN_SCHEMA, "grid_name": grid.name, "grid_hashes": [h], "created": now_iso(),
              "executor": executor, "slurm_jobs": []}
    if fingerprint is not None:
        record["dataset_fingerprint"] = fingerprint
    folder.write_record(record)
    events.emit("run_start", grid=grid.name, grid_hash=h, executor=executor)
    return {}


def _folder_fingerprint(folder: GridFolder, rec: dict[str, Any]) -> str | None:
    """The data fingerprint of a run: from run.json, else (a run made before it was recorded) from the
    first readable shard that trained."""
    if rec.get("dataset_fingerprint"):
        return str(rec["dataset_fingerprint"])
    for path in shard_files(folder.shards):
        try:
            info = read_shard(path)
        except CorruptShard:
            continue
        fp = info.ds.attrs.get(cube.A_DATASET_FINGERPRINT) if info.ds is not None else None
        if fp:
            return str(fp)
    return None


def check_data(grid: Any) -> str:
    """Load the grid's data (as every pack will) and check each pipeline's batch size against the
    training split, so that bad data or a batch size too large is refused before the grid folder is
    written. Returns the data's fingerprint."""
    from initmem.collect.train.data import load_split  # torch: not at CLI start-up

    split = load_split(grid.dataset)
    n_train = int(split.y_train.numel())
    for name, spec in grid.engine_pipelines.items():
        if spec.batch_size > n_train:  # the engine's own check, made before anything is written
            raise UserError(f"pipelines.{name}.batch_size: {spec.batch_size} is larger than the training split "
                            f"({n_train} examples)")
    return split.fingerprint


def finished_cells(folder: GridFolder, grid: Any, *, retry_failed: bool, quiet: bool) -> dict[Cell, int]:
    """Cells with a usable shard of this run (cell -> status); quarantines corrupt shards."""
    events = EventLog(folder.events)
    good, corrupt = scan_shards(folder.shards, jobs=usable_cores())
    for path, why in corrupt:
        folder.corrupt.mkdir(parents=True, exist_ok=True)
        dest = folder.corrupt / f"{path.name}.{now_iso().replace(':', '')}"
        shutil.move(str(path), dest)
        events.emit("corrupt_shard", shard=path.name, reason=why, moved_to=str(dest.relative_to(folder.root)))
        _say(f"warning: corrupt shard {path.name} ({why}): moved to {dest.relative_to(folder.root)}, "
             f"its cell trains again", quiet)
    accepted = folder.accepted_hashes()
    wanted = set(all_cells(grid))
    done: dict[Cell, int] = {}
    for cell, info in good.items():
        if cell not in wanted or info.grid_hash not in accepted:
            continue
        if retry_failed and info.status == cube.FAILED:
            events.emit("retry", cell=cell_dict(*cell), reason="retry_failed", error=info.error)
            continue
        done[cell] = info.status
    return done


def plan_tasks(folder: GridFolder, grid: Any, todo: set[Cell], *, device: str, pack_size: int | None,
               workers: int = 1) -> list[PackTask]:
    """Started packs (manifests) first, in their original composition; then the rest, packed anew, longest
    first, and with an automatic pack size split so that each of ``workers`` CPU workers has a pack."""
    from initmem.collect.execution.pack_plan import pack_cost, plan_packs, spread_over_workers  # torch: not at start-up

    tasks: list[PackTask] = []
    covered: set[Cell] = set()
    wanted = set(all_cells(grid))
    checkpoints.drop_orphan_locks(folder.checkpoints)
    for pid, cells in checkpoints.read_manifests(folder.checkpoints):
        pending = [c for c in cells if c in todo and c not in covered]
        if not pending or not set(cells) <= wanted:
            checkpoints.finish(folder.checkpoints, pid)  # stale: all its shards exist, or its grid is gone
            # logged, so that --status stops counting it as started (a kill between its last shard and
            # its pack_end line, say)
            EventLog(folder.events).emit("pack_dropped", pack=pid, reason="none of its cells is left to train"
                                      if not pending else "its cells are no longer in the grid")
            continue
        pipe = cells[0][0]
        tasks.append(PackTask(pipe, tuple((s, k) for _, s, k in cells), tuple((s, k) for _, s, k in pending)))
        covered.update(pending)
    user = set(grid.user_pipelines)
    rest = {c for c in todo - covered if c[0] not in user}
    # a user-code pipeline's cells run one by one (the user's code trains one model), in grid order
    singles = [PackTask(p, ((s, k),)) for p, s, k in all_cells(grid) if p in user and (p, s, k) in todo - covered]
    n_started = len(tasks)
    if rest:
        fresh = plan_packs(grid, device=device, pack_size=pack_size, only=rest)
        if workers > 1:
            if pack_size is None and grid.engine.pack_size is None:   # the user's pack size is never split
                fresh = spread_over_workers(fresh, workers - n_started)
            # Longest first: workers take packs in this order, and a long pack started last would leave the
            # others idle at the end (started packs keep their place at the front: they resume).
            fresh.sort(key=lambda pc: -pack_cost(grid, pc[0], len(pc[1])))
        tasks += [PackTask(pipe, tuple(cells)) for pipe, cells in fresh]
    return tasks + singles


# The entry point ---------------------------------------------------------------------------

def collect_cube(grid: Grid | str | os.PathLike, out_dir: str | os.PathLike, options: CollectOptions | None = None,
                 **fields: Unpack[CollectFields]) -> Path:
    """Train a grid into a cube, resumably: what ``initmem collect GRID.yaml --out DIR`` does.

    Named for what it makes: ``initmem.collect`` is the training subpackage (importing any of its modules binds
    that name to the package), so the function cannot be called ``collect`` at the top level.

    Parameters
    ----------
    grid : Grid, str or os.PathLike
        A grid (:func:`initmem.load_grid`), a grid YAML file or a preset's name (``"quick"``).
    out_dir : str or os.PathLike
        The grid folder: shards, checkpoints, ``events.jsonl`` and ``cube.nc`` go here.
    options : CollectOptions, optional
        Every option at once (:class:`~initmem.collect.execution.options.CollectOptions`, which lists them with
        their defaults: ``resume``, ``force_new``, ``retry_failed``, ``executor``, ``device``, ``jobs``,
        ``pack_size``, ``quiet``, ``progress``, ``checkpoint_every``, ``checkpoint_minutes``, ``slurm``,
        ``slurm_cluster``, ``wait``); None: the defaults.
    **fields
        Fields of :class:`~initmem.collect.execution.options.CollectOptions` as keywords (``jobs=4``), replacing
        those of ``options``, typed by :class:`~initmem.collect.execution.options.CollectFields`; each is
        validated once, here, as :func:`initmem.analyze` validates its options.

    Returns
    -------
    pathlib.Path
        ``DIR/cube.nc``; with ``force_new`` and an existing run, DIR is the new folder ``out_dir-N``.

    Raises
    ------
    OptionError
        An option is out of range, or ``force_new`` is combined with ``resume`` or ``retry_failed``.
    UserError
        The grid is invalid, the folder holds another run (or a run of another grid or data set), or a shard is
        corrupt after the merge.

    Examples
    --------
    Train the quick preset's grid into a cube, resumably (this trains every cell: minutes on a laptop):

    >>> import initmem
    >>> initmem.collect_cube("quick", "runs/quick", jobs="auto")                      # doctest: +SKIP
    PosixPath('runs/quick/cube.nc')
    >>> initmem.collect_cube("quick", "runs/quick", resume=True)   # only the cells left # doctest: +SKIP
    PosixPath('runs/quick/cube.nc')
    """
    return collect(grid, out_dir, CollectOptions.of(options, **fields))


def collect(grid_path_or_grid: Grid | str | os.PathLike, out_dir: str | os.PathLike,
            options: CollectOptions | None = None, *, train_fn: TrainFn | None = None, only: set[Cell] | None = None,
            **fields: Unpack[CollectFields]) -> Path:
    """Train every unfinished cell of a grid into shards under ``out_dir`` and merge them.

    The entry point of ``initmem collect`` and ``initmem run``; :func:`collect_cube` is its public face.

    Parameters
    ----------
    grid_path_or_grid : Grid, str or os.PathLike
        A grid, a grid file or a preset's name.
    out_dir : str or os.PathLike
        The grid folder.
    options : CollectOptions, optional
        Every option at once; None: the defaults.
    train_fn : callable, optional
        Replaces the training engine (tests use a fast deterministic stand-in).
    only : set of cells, optional
        Train only these (pipeline, sigma_w, seed) cells: the sequential design adds seeds to undecided
        pipelines only. The cube still spans the whole grid, the cells never trained being missing.
    **fields
        Fields of :class:`CollectOptions` as keywords, replacing those of ``options``.

    Returns
    -------
    pathlib.Path
        ``DIR/cube.nc`` (DIR the new folder ``out_dir-N`` with ``force_new`` and an existing run); with the Slurm
        executor and ``wait=False``, right after submission.

    Raises
    ------
    OptionError
        An option is invalid or unknown.
    UserError
        The grid, the data or the grid folder refuses the start, or a shard is corrupt after the merge.
    """
    from initmem.collect.train.devices import resolve_device  # imports torch: not at CLI start-up

    opts = CollectOptions.of(options, **fields)
    grid = training_grid(grid_path_or_grid)
    root = Path(out_dir)
    check_out_folder(root)
    if grid.user_pipelines:
        from initmem.collect.custom.identity import check_user_code

        check_user_code(grid)   # an entry point that does not import, a command that does not exist: refused now
    # Everything that can refuse the start is checked before the grid folder is written: the device,
    # the data and the batch sizes.
    if opts.executor == "slurm":
        plan_device = _slurm_plan_device(grid, opts)
    else:
        plan_device = resolve_device(opts.device)
    fingerprint = check_data(grid) if grid.engine_pipelines else None   # user code loads its own data
    if opts.force_new:
        new_root = fresh_folder(root)
        if new_root != root:
            _say(f"{root} holds a training; starting a new grid folder {new_root}", opts.quiet)
        root = new_root
    folder = GridFolder(root)
    made_root = not root.exists()
    _refuse_foreign_folder(folder)
    train_fn = train_fn or (default_train_fn() if grid.engine_pipelines else None)
    if grid.user_pipelines:
        train_fn = user_train_fn(grid, folder, train_fn)
    h = grid_hash(grid)

    with folder_lock(folder):
        fresh = not folder.exists()
        try:
            lost = _prepare_and_train(folder, grid, h, opts, plan_device=plan_device, train_fn=train_fn, only=only,
                                      fingerprint=fingerprint)
        except Exception:
            if fresh:  # a refused start (Slurm refused the array, ...): leave no half-made run behind
                undo_fresh_start(folder, made_root=made_root)
            raise
        if lost is None:  # submitted to Slurm without waiting
            return folder.cube
        cells = all_cells(grid)
        report = merge_folder(folder.root, grid=grid, jobs=usable_cores())
        EventLog(folder.events).emit("run_end", cells=len(cells), missing=len(report.missing), lost=lost)
        print_summary(report, folder, opts.quiet)
        for line in lost:
            _say(f"warning: {line}; rerun with {option('resume', True)}", opts.quiet)
        if report.corrupt:
            raise corrupt_error(report, folder)
    return folder.cube


def user_train_fn(grid: Any, folder: GridFolder, engine: TrainFn | None) -> TrainFn:
    """The train function of a grid with user-code pipelines: their cells run the user's code
    (collect/custom/user_runner.py), the built-in pipelines go to ``engine``; each code's identity is taken
    once, here, and travels with it to every worker and Slurm task."""
    from initmem.collect.custom.identity import code_base, code_identity, workdir_of
    from initmem.collect.custom.user_runner import UserTrainFn

    base = code_base(grid)   # the grid file's folder: relative workdirs are its
    workdirs = {p: workdir_of(spec, base) for p, spec in grid.user_pipelines.items()}
    return UserTrainFn(root=str(folder.root.resolve()), workdirs={p: str(w) for p, w in workdirs.items()},
                       identities={p: code_identity(spec, workdirs[p]) for p, spec in grid.user_pipelines.items()},
                       engine=engine, base=str(base))


def _note_code_changes(folder: GridFolder, train_fn: Any, quiet: bool) -> None:
    """Record each user-code pipeline's code identity in run.json; on a resume, warn (and log) where a file's
    sha256 differs from the one the run began with: the cube's identity coordinates are its first shard's, so
    cells trained by the changed code would otherwise pass unnoticed."""
    from initmem.collect.custom.identity import CODE_SHA256

    now = {p: dict(ident) for p, ident in train_fn.identities.items()}
    before = folder.read_record().get("code", {})
    for pipe, ident in now.items():
        old = before.get(pipe, {}).get(CODE_SHA256)
        if old and old != ident[CODE_SHA256]:
            EventLog(folder.events).emit("code_changed", pipeline=pipe, before=old, now=ident[CODE_SHA256])
            _say(f"warning: pipelines.{pipe}: its code changed since the run began (sha256 {old[:12]} -> "
                 f"{ident[CODE_SHA256][:12]}); the cells trained from now on run the new code", quiet)
    # the identities the run began with (new pipelines added), and the folder relative paths were taken from
    # (a resume from the grid folder's own copy of the grid takes it: identity.code_base)
    folder.update_record(code={**now, **before}, code_base=train_fn.base)


def _slurm_plan_device(grid: Any, opts: CollectOptions) -> str:
    """The device the packs of a Slurm run are sized for: a GPU when the array tasks get one (and the device
    allows it), else the CPU. Sizing GPU packs needs a GPU here, or a pack size."""
    plan_device = "cuda" if opts.device in ("auto", "cuda") and _slurm_gpus(grid, opts.slurm) > 0 else "cpu"
    if opts.device == "cpu":
        plan_device = "cpu"
    if plan_device == "cuda" and opts.pack_size is None and grid.engine.pack_size is None and grid.engine_pipelines:
        import torch  # only to ask whether this machine has a GPU

        if not torch.cuda.is_available():
            raise UserError(f"{option('executor', 'slurm')} on GPUs needs {option('pack_size')} (or "
                            "engine.pack_size "
                            "in the grid file): this machine has no GPU to size the packs by")
    return plan_device


def _prepare_and_train(folder: GridFolder, grid: Any, h: str, opts: CollectOptions, *, plan_device: str,
                       train_fn: TrainFn, only: set[Cell] | None, fingerprint: str | None) -> list[str] | None:
    """Prepare the grid folder and train what is left; the lines of lost packs, or None when the
    Slurm array was submitted without waiting."""
    prepare_folder(folder, grid, resume=opts.continues, executor=opts.executor, quiet=opts.quiet,
                   fingerprint=fingerprint)
    if grid.user_pipelines:
        _note_code_changes(folder, train_fn, opts.quiet)
    done = finished_cells(folder, grid, retry_failed=opts.retry_failed, quiet=opts.quiet)
    cells = all_cells(grid)
    todo = {c for c in cells if c not in done and (only is None or c in only)}
    events = EventLog(folder.events)
    show = opts.progress and not opts.quiet
    if opts.executor == "slurm":
        from initmem.collect.execution.slurm_executor import submit_and_wait  # submitit: only for this executor
        from initmem.collect.train.data import load_split

        load_split.cache_clear()  # the array tasks load the data; the submitting process needs it no more
        tasks = plan_tasks(folder, grid, todo, device=plan_device, pack_size=opts.pack_size)
        events.emit("plan", executor="slurm", packs=len(tasks), cells_todo=len(todo), cells_done=len(done))
        finished = submit_and_wait(tasks, folder, grid=grid, grid_hash=h, device=opts.device, train_fn=train_fn,
                                   checkpoint_every=opts.checkpoint_every,
                                   checkpoint_seconds=opts.checkpoint_seconds, slurm=dict(opts.slurm or {}),
                                   cluster=opts.slurm_cluster, wait=opts.wait, quiet=opts.quiet, progress=show,
                                   total=len(cells), done=len(done))
        if not finished:
            _say(f"submitted; follow it with {option('status', str(folder.root))}, merge it with "
                 f"{option('merge', str(folder.root))}", opts.quiet)
            return None
        return []
    dev = plan_device
    per_gpu = int(grid.engine.cells_per_gpu)
    workers = len(worker_plan(dev, auto_jobs(grid, dev, len(todo)) if opts.jobs == "auto" else int(opts.jobs),
                              per_gpu))
    tasks = plan_tasks(folder, grid, todo, device=dev, pack_size=opts.pack_size, workers=workers)
    jobs = auto_jobs(grid, dev, len(tasks)) if opts.jobs == "auto" else opts.jobs
    plan = worker_plan(dev, int(jobs), per_gpu)
    if not (len(plan) == 1 and not plan[0]):
        from initmem.collect.train.data import load_split

        load_split.cache_clear()  # worker processes load the data; this one needs it no more
    events.emit("plan", executor="local", device=dev, packs=len(tasks), cells_todo=len(todo),
                cells_done=len(done), jobs=jobs)
    with ProgressView(len(cells), len(done), enabled=show) as view:
        return train_local(tasks, folder, grid=grid, grid_hash=h, device=dev, jobs=int(jobs), train_fn=train_fn,
                         checkpoint_every=opts.checkpoint_every, checkpoint_seconds=opts.checkpoint_seconds,
                         view=view)


def _slurm_gpus(grid: Any, slurm: Mapping[str, Any] | None) -> int:
    """GPUs per array task: the override's, else the grid's ``slurm:`` block's, else one."""
    opts = dict(slurm or {})
    if opts.get("gpus_per_job") is not None:
        return int(opts["gpus_per_job"])
    return int(grid.slurm.gpus_per_job) if grid.slurm is not None else 1

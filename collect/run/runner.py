"""``initmem collect``: train a grid into shards, resumably, and merge them into ``DIR/cube.nc``.

The flow of one call:

1. prepare the run folder: a new run, or (``resume``) the same run, refusing a changed grid
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
from pathlib import Path
from typing import Any

from initmem import cube
from initmem.atomic import write_text
from initmem.collect.run import checkpoints
from initmem.collect.run.assemble import corrupt_error, merge_run, print_summary
from initmem.collect.run.budgets import training_grid
from initmem.collect.run.events import EventLog, cell_dict, now_iso
from initmem.collect.run.local_executor import auto_jobs, run_local, worker_plan
from initmem.collect.run.pack_job import PackTask, TrainFn, default_train_fn
from initmem.collect.run.progress import ProgressView
from initmem.collect.run.run_folder import (
    RUN_SCHEMA,
    RunDir,
    check_out_folder,
    fresh_folder,
    grid_changes,
    run_lock,
    undo_fresh_start,
)
from initmem.collect.run.shards import Cell, CorruptShard, all_cells, read_shard, scan_shards, shard_files
from initmem.errors import OptionError, UserError, option
from initmem.grid import grid_hash

EXECUTORS = ("local", "slurm")


def _say(msg: str, quiet: bool) -> None:
    if not quiet:
        print(msg, flush=True)


# Preparing the run folder ------------------------------------------------------------------

def prepare_run(run: RunDir, grid: Any, *, resume: bool, executor: str, quiet: bool,
                fingerprint: str | None = None) -> dict[str, Any]:
    """Create the run folder or check that ``grid`` may continue it; return what was added.

    ``fingerprint`` names the data the grid's dataset section loads now (``dataset_fingerprint``):
    recorded with a new run, and a resume refuses other data (``dataset.root`` may move)."""
    h = grid_hash(grid)
    events = EventLog(run.events)
    if run.exists():
        if not resume:
            raise UserError(f"{run.root} already holds a collect run; add {option('resume', True)} to continue it "
                            f"or {option('force_new', True)} to start a new run folder")
        old = run.load_grid()
        changed, added = grid_changes(old, grid)
        if changed:
            raise UserError(f"cannot resume {run.root}: the grid file differs from the run's grid in "
                            f"{'; '.join(changed)} (a resume may add pipelines, sigma_w levels or seeds and "
                            f"change engine.pack_size, dataset.root or the slurm block, nothing else; use "
                            f"{option('force_new', True)} for a new run folder)")
        rec = run.read_record()
        before = _run_fingerprint(run, rec)
        if fingerprint is not None and before is not None and before != fingerprint:
            raise UserError(f"cannot resume {run.root}: the data set under dataset.root "
                            f"{grid.dataset.root or '(default)'} differs from the run's (dataset fingerprint "
                            f"{fingerprint[:12]}, the run's {before[:12]}); point dataset.root at the run's data "
                            f"or use {option('force_new', True)} for a new run folder")
        removed = run.clean_temporaries()
        hashes = list(rec.get("grid_hashes", []))
        if h not in hashes:
            hashes.append(h)
        write_text(run.grid_file, grid.to_yaml())
        run.update_record(grid_hashes=hashes, resumed=now_iso(),
                          **({"dataset_fingerprint": fingerprint} if fingerprint is not None else {}))
        extended = {k: v for k, v in added.items() if v}
        events.emit("resume_run", grid_hash=h, extended=extended, removed_temporaries=[p.name for p in removed])
        if extended:
            _say("grid extended by " + "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in extended.items())
                 + " (only the new cells run)", quiet)   # the labels added, e.g. "seeds 3, 4"
        return extended
    run.root.mkdir(parents=True, exist_ok=True)
    write_text(run.grid_file, grid.to_yaml())
    record = {"schema": RUN_SCHEMA, "grid_name": grid.name, "grid_hashes": [h], "created": now_iso(),
              "executor": executor, "slurm_jobs": []}
    if fingerprint is not None:
        record["dataset_fingerprint"] = fingerprint
    run.write_record(record)
    events.emit("run_start", grid=grid.name, grid_hash=h, executor=executor)
    return {}


def _run_fingerprint(run: RunDir, rec: dict[str, Any]) -> str | None:
    """The data fingerprint of a run: from run.json, else (a run made before it was recorded) from the
    first readable shard that trained."""
    if rec.get("dataset_fingerprint"):
        return str(rec["dataset_fingerprint"])
    for path in shard_files(run.shards):
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
    training split, so that bad data or a batch size too large is refused before the run folder is
    written. Returns the data's fingerprint."""
    from initmem.collect.train.data import load_split  # torch: not at CLI start-up

    split = load_split(grid.dataset)
    n_train = int(split.y_train.numel())
    for name, spec in grid.pipelines.items():
        if spec.batch_size > n_train:  # the engine's own check, made before anything is written
            raise UserError(f"pipelines.{name}.batch_size: {spec.batch_size} is larger than the training split "
                            f"({n_train} examples)")
    return split.fingerprint


def finished_cells(run: RunDir, grid: Any, *, retry_failed: bool, quiet: bool) -> dict[Cell, int]:
    """Cells with a usable shard of this run (cell -> status); quarantines corrupt shards."""
    events = EventLog(run.events)
    good, corrupt = scan_shards(run.shards)
    for path, why in corrupt:
        run.corrupt.mkdir(parents=True, exist_ok=True)
        dest = run.corrupt / f"{path.name}.{now_iso().replace(':', '')}"
        shutil.move(str(path), dest)
        events.emit("corrupt_shard", shard=path.name, reason=why, moved_to=str(dest.relative_to(run.root)))
        _say(f"warning: corrupt shard {path.name} ({why}): moved to {dest.relative_to(run.root)}, "
             f"its cell trains again", quiet)
    accepted = run.accepted_hashes()
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


def plan_tasks(run: RunDir, grid: Any, todo: set[Cell], *, device: str, pack_size: int | None) -> list[PackTask]:
    """Started packs (manifests) first, in their original composition; then the rest, packed anew."""
    from initmem.collect.run.pack_plan import plan_packs  # imports torch: not at CLI start-up

    tasks: list[PackTask] = []
    covered: set[Cell] = set()
    wanted = set(all_cells(grid))
    for pid, cells in checkpoints.read_manifests(run.checkpoints):
        pending = [c for c in cells if c in todo and c not in covered]
        if not pending or not set(cells) <= wanted:
            checkpoints.finish(run.checkpoints, pid)  # stale: all its shards exist, or its grid is gone
            # logged, so that --status stops counting it as started (a kill between its last shard and
            # its pack_end line, say)
            EventLog(run.events).emit("pack_dropped", pack=pid, reason="none of its cells is left to train"
                                      if not pending else "its cells are no longer in the grid")
            continue
        pipe = cells[0][0]
        tasks.append(PackTask(pipe, tuple((s, k) for _, s, k in cells), tuple((s, k) for _, s, k in pending)))
        covered.update(pending)
    rest = todo - covered
    if rest:
        for pipe, cells in plan_packs(grid, device=device, pack_size=pack_size):
            sub = tuple((float(s), int(k)) for s, k in cells if (pipe, float(s), int(k)) in rest)
            if sub:
                tasks.append(PackTask(pipe, sub))
    return tasks


# The entry point ---------------------------------------------------------------------------

def collect(grid_path_or_grid: Any, out_dir: str | os.PathLike, *, resume: bool = False, force_new: bool = False,
            retry_failed: bool = False, executor: str = "local", device: str = "auto", jobs: int | str = 1,
            pack_size: int | None = None, quiet: bool = False, progress: bool = True,
            checkpoint_every: int = 1, checkpoint_minutes: float | None = None,
            slurm: dict[str, Any] | None = None, slurm_cluster: str | None = None, wait: bool = True,
            train_fn: TrainFn | None = None, only: set[Cell] | None = None) -> Path:
    """Train every unfinished cell of a grid into shards under ``out_dir`` and merge them.

    Returns the path of ``DIR/cube.nc``; with ``force_new`` and an existing run, DIR is the new
    folder ``out_dir-N``. With the Slurm executor and ``wait=False`` it returns right after
    submission (the last array task merges; or ``initmem collect --merge DIR``). ``only`` restricts the
    training to those cells (the sequential design adds seeds to undecided pipelines only); the cube still
    spans the whole grid, the cells never trained being missing.
    """
    from initmem.collect.train.devices import resolve_device  # imports torch: not at CLI start-up

    if executor not in EXECUTORS:
        raise OptionError("executor", f"{{option}} must be one of {', '.join(EXECUTORS)} (got {executor!r})")
    if jobs != "auto" and (not isinstance(jobs, int) or jobs < 1):
        raise OptionError("jobs", f"{{option}} must be 'auto' or at least 1 (got {jobs!r})")
    if pack_size is not None and pack_size < 1:
        raise OptionError("pack_size", f"{{option}} must be at least 1 (got {pack_size})")
    if checkpoint_every < 1:
        raise OptionError("checkpoint_every", f"{{option}} must be at least 1 epoch (got {checkpoint_every})")
    if checkpoint_minutes is not None and checkpoint_minutes <= 0:
        raise OptionError("checkpoint_minutes", f"{{option}} must be positive (got {checkpoint_minutes})")
    if force_new and (resume or retry_failed):
        other = option("resume", True) if resume else option("retry_failed", True)
        raise OptionError("force_new", f"{{option}} starts a new run folder and {other} continues the run in it: "
                                       "give one of them")
    grid = training_grid(grid_path_or_grid)
    root = Path(out_dir)
    check_out_folder(root)
    resume = resume or retry_failed  # retrying failed cells only makes sense on an existing run
    # Everything that can refuse the start is checked before the run folder is written: the device,
    # the data and the batch sizes.
    if executor == "slurm":
        plan_device = "cuda" if device in ("auto", "cuda") and _slurm_gpus(grid, slurm) > 0 else "cpu"
        if device == "cpu":
            plan_device = "cpu"
        if plan_device == "cuda" and pack_size is None and grid.engine.pack_size is None:
            import torch  # only to ask whether this machine has a GPU

            if not torch.cuda.is_available():
                raise UserError(f"{option('executor', 'slurm')} on GPUs needs {option('pack_size')} (or "
                                "engine.pack_size "
                                "in the grid file): this machine has no GPU to size the packs by")
    else:
        plan_device = resolve_device(device)
    fingerprint = check_data(grid)
    if force_new:
        new_root = fresh_folder(root)
        if new_root != root:
            _say(f"{root} holds a run; starting a new run folder {new_root}", quiet)
        root, resume = new_root, False
    run = RunDir(root)
    made_root = not root.exists()
    train_fn = train_fn or default_train_fn()
    h = grid_hash(grid)
    checkpoint_seconds = checkpoint_minutes * 60 if checkpoint_minutes is not None else None

    with run_lock(run):
        fresh = not run.exists()
        try:
            lost = _prepare_and_train(run, grid, h, resume=resume, retry_failed=retry_failed, executor=executor,
                                      device=device, plan_device=plan_device, jobs=jobs, pack_size=pack_size,
                                      quiet=quiet, progress=progress, checkpoint_every=checkpoint_every,
                                      checkpoint_seconds=checkpoint_seconds, slurm=slurm,
                                      slurm_cluster=slurm_cluster, wait=wait, train_fn=train_fn, only=only,
                                      fingerprint=fingerprint)
        except Exception:
            if fresh:  # a refused start (Slurm refused the array, ...): leave no half-made run behind
                undo_fresh_start(run, made_root=made_root)
            raise
        if lost is None:  # submitted to Slurm without waiting
            return run.cube
        cells = all_cells(grid)
        report = merge_run(run.root, grid=grid)
        EventLog(run.events).emit("run_end", cells=len(cells), missing=len(report.missing), lost=lost)
        print_summary(report, run, quiet)
        for line in lost:
            _say(f"warning: {line}; rerun with {option('resume', True)}", quiet)
        if report.corrupt:
            raise corrupt_error(report, run)
    return run.cube


def _prepare_and_train(run: RunDir, grid: Any, h: str, *, resume: bool, retry_failed: bool, executor: str,
                       device: str, plan_device: str, jobs: int | str, pack_size: int | None, quiet: bool,
                       progress: bool, checkpoint_every: int, checkpoint_seconds: float | None,
                       slurm: dict[str, Any] | None, slurm_cluster: str | None, wait: bool, train_fn: TrainFn,
                       only: set[Cell] | None, fingerprint: str | None) -> list[str] | None:
    """Prepare the run folder and train what is left; the lines of lost packs, or None when the
    Slurm array was submitted without waiting."""
    prepare_run(run, grid, resume=resume, executor=executor, quiet=quiet, fingerprint=fingerprint)
    done = finished_cells(run, grid, retry_failed=retry_failed, quiet=quiet)
    cells = all_cells(grid)
    todo = {c for c in cells if c not in done and (only is None or c in only)}
    events = EventLog(run.events)
    if executor == "slurm":
        from initmem.collect.run.slurm_executor import submit_and_wait  # submitit: only for this executor
        from initmem.collect.train.data import load_split

        load_split.cache_clear()  # the array tasks load the data; the submitting process needs it no more
        tasks = plan_tasks(run, grid, todo, device=plan_device, pack_size=pack_size)
        events.emit("plan", executor="slurm", packs=len(tasks), cells_todo=len(todo), cells_done=len(done))
        finished = submit_and_wait(tasks, run, grid=grid, grid_hash=h, device=device, train_fn=train_fn,
                                   checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds,
                                   slurm=slurm or {}, cluster=slurm_cluster, wait=wait, quiet=quiet,
                                   progress=progress and not quiet, total=len(cells), done=len(done))
        if not finished:
            _say(f"submitted; follow it with {option('status', str(run.root))}, merge it with "
                 f"{option('merge', str(run.root))}", quiet)
            return None
        return []
    dev = plan_device
    tasks = plan_tasks(run, grid, todo, device=dev, pack_size=pack_size)
    if jobs == "auto":
        jobs = auto_jobs(grid, dev, len(tasks))
    plan = worker_plan(dev, int(jobs))
    if not (len(plan) == 1 and not plan[0]):
        from initmem.collect.train.data import load_split

        load_split.cache_clear()  # worker processes load the data; this one needs it no more
    events.emit("plan", executor="local", device=dev, packs=len(tasks), cells_todo=len(todo),
                cells_done=len(done), jobs=jobs)
    with ProgressView(len(cells), len(done), enabled=progress and not quiet) as view:
        return run_local(tasks, run, grid=grid, grid_hash=h, device=dev, jobs=int(jobs), train_fn=train_fn,
                         checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds, view=view)


def _slurm_gpus(grid: Any, slurm: dict[str, Any] | None) -> int:
    opts = dict(slurm or {})
    if opts.get("gpus_per_job") is not None:
        return int(opts["gpus_per_job"])
    return int(grid.slurm.gpus_per_job) if grid.slurm is not None else 1

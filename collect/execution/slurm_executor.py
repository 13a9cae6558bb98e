"""The Slurm executor: one job-array task per pack, submitted through submitit.

Each array task is a :class:`PackJob`, a ``submitit.helpers.Checkpointable``: when Slurm
preempts it or its time runs out, submitit calls :meth:`PackJob.checkpoint`, which requeues
the same job; the requeued task resumes the pack from its last epoch checkpoint in
``DIR/checkpoints/`` (the training state lives there, not in the pickle). A task writes its
shards itself; the task that finds every cell of the grid finished merges the cube, so the
cube appears when the array finishes even if the submitting shell is gone. ``initmem collect
--status DIR`` shows progress, ``initmem collect --merge DIR`` merges on demand.

Resources come from, in order of precedence: command-line options, the grid file's ``slurm:``
block, the defaults of ``SlurmSpec`` (partition, gpus_per_job, time_min, mem_gb,
array_parallelism, cpus_per_task; and what clusters require: account, qos, constraint, gres, setup
lines, further ``#SBATCH`` options as additional_parameters, and max_num_timeout, the requeues of a
task that ran out of time).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import submitit

from initmem.collect.execution.assemble import merge_folder
from initmem.collect.execution.events import EventLog, read_events
from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.local_executor import visible_gpus
from initmem.collect.execution.pack_job import PackContext, PackTask, TrainFn, execute_pack
from initmem.collect.execution.progress import ProgressView
from initmem.collect.execution.shards import all_cells, shard_files, shard_name
from initmem.errors import OptionError, UserError, option
from initmem.grid import SlurmSpec

CLUSTER_ENV = "INITMEM_SUBMITIT_CLUSTER"  # "local" runs the array with submitit's LocalExecutor
SLURM_KEYS = ("partition", "gpus_per_job", "time_min", "mem_gb", "array_parallelism", "cpus_per_task", "account",
              "qos", "constraint", "gres", "setup", "additional_parameters", "max_num_timeout")
# The slurm block's sbatch options passed to submitit as they are (``slurm_<name>``), where set.
SBATCH_PASSED = ("account", "qos", "constraint", "gres", "setup", "additional_parameters")


def slurm_options(grid: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    base = (grid.slurm or SlurmSpec()).model_dump()
    base.update({k: v for k, v in overrides.items() if v is not None and k in SLURM_KEYS})
    return base


class PackJob(submitit.helpers.Checkpointable):
    """One pack as a Slurm array task; requeued from its checkpoint when preempted."""

    def __init__(self, root: str, task: PackTask, grid: Any, grid_hash: str, device: str, train_fn: TrainFn,
                 checkpoint_every: int, checkpoint_seconds: float | None) -> None:
        self.root, self.task, self.grid, self.grid_hash = root, task, grid, grid_hash
        self.device, self.train_fn = device, train_fn
        self.checkpoint_every, self.checkpoint_seconds = checkpoint_every, checkpoint_seconds

    def __call__(self) -> list[tuple[tuple[str, float, int], int]]:
        from initmem.collect.train.devices import resolve_device  # torch: only inside the array task

        folder = GridFolder(Path(self.root))
        events = EventLog(folder.events)
        job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("SUBMITIT_LOCAL_JOB_ID") or ""
        events.emit("job_start", pack=self.task.pack_id, job_id=job_id)
        ctx = PackContext(folder, self.grid, self.grid_hash, resolve_device(self.device), self.train_fn,
                          self.checkpoint_every, self.checkpoint_seconds)
        results = execute_pack(self.task, ctx)
        maybe_merge(folder, self.grid)
        return results

    def checkpoint(self, *args: Any, **kwargs: Any) -> submitit.helpers.DelayedSubmission:
        EventLog(GridFolder(Path(self.root)).events).emit(
            "requeue", pack=self.task.pack_id, reason="preempted or timed out; resumes from its checkpoint")
        return super().checkpoint(*args, **kwargs)


def maybe_merge(folder: GridFolder, grid: Any) -> bool:
    """Merge if every cell of the grid has a shard (the last array task to finish does this)."""
    have = {p.name for p in shard_files(folder.shards)}
    if not all(shard_name(c) in have for c in all_cells(grid)):
        return False
    merge_folder(folder.root, grid=grid)
    return True


def make_executor(folder: GridFolder, grid: Any, opts: dict[str, Any], cluster: str | None) -> Any:
    cluster = cluster or os.environ.get(CLUSTER_ENV) or None
    if cluster is None:
        if shutil.which("sbatch") is None:
            raise OptionError("executor", "{option} slurm needs Slurm (sbatch not found on PATH); use {option} local")
        cluster = "slurm"
    timeouts = int(opts.get("max_num_timeout", 3))   # requeues of a task that ran out of time (submitit's)
    ex = submitit.AutoExecutor(folder=folder.slurm / "%j", cluster=cluster, slurm_max_num_timeout=timeouts,
                               local_max_num_timeout=timeouts)
    gpus = int(opts["gpus_per_job"])
    if cluster == "local":
        gpus = min(gpus, len(visible_gpus()))
    params: dict[str, Any] = {
        "name": f"initmem-{grid.name}", "timeout_min": int(opts["time_min"]), "mem_gb": int(opts["mem_gb"]),
        "gpus_per_node": gpus, "cpus_per_task": int(opts["cpus_per_task"]), "tasks_per_node": 1, "nodes": 1,
        "slurm_array_parallelism": int(opts["array_parallelism"]),
    }
    if opts.get("partition"):
        params["slurm_partition"] = opts["partition"]
    for key in SBATCH_PASSED:   # the cluster's own requirements: account, QOS, node features, setup lines, ...
        if opts.get(key):
            params[f"slurm_{key}"] = list(opts[key]) if key == "setup" else \
                dict(opts[key]) if key == "additional_parameters" else opts[key]
    ex.update_parameters(**params)
    return ex


def submit_and_wait(tasks: list[PackTask], folder: GridFolder, *, grid: Any, grid_hash: str, device: str,
                    train_fn: TrainFn, checkpoint_every: int, checkpoint_seconds: float | None,
                    slurm: dict[str, Any], cluster: str | None, wait: bool, quiet: bool, progress: bool,
                    total: int, done: int) -> bool:
    """Submit one array task per pack; with ``wait``, follow them until all end (True)."""
    events = EventLog(folder.events)
    opts = slurm_options(grid, slurm)
    if not tasks:
        return True
    ex = make_executor(folder, grid, opts, cluster)
    if logging.getLogger().level > logging.DEBUG:
        logging.getLogger("submitit").setLevel(logging.ERROR)  # no sacct warnings without accounting
    jobs_in = [PackJob(str(folder.root), t, grid, grid_hash, device, train_fn, checkpoint_every, checkpoint_seconds)
               for t in tasks]
    jobs = _submit(ex, jobs_in)
    with contextlib.suppress(OSError):
        (folder.slurm / "%j").rmdir()  # submitit makes the folder pattern itself; it stays empty
    records = [{"job_id": str(j.job_id), "pack": t.pack_id, "cells": len(t.wanted)} for j, t in zip(jobs, tasks,
                                                                                                   strict=True)]
    rec = folder.read_record()
    folder.update_record(slurm_jobs=list(rec.get("slurm_jobs", [])) + records, slurm_options=opts,
                      slurm_cluster=ex.cluster)
    events.emit("submit", cluster=ex.cluster, jobs=records, options=opts)
    if not quiet:
        print(f"submitted {len(jobs)} pack(s) as a {ex.cluster} job array "
              f"({records[0]['job_id'].split('_')[0]}); job folders under {folder.slurm}", flush=True)
    if not wait:
        return False
    tracker = _Tracker(ex.cluster)
    with ProgressView(total, done, enabled=progress) as view:
        while not tracker.all_done(jobs):
            _refresh(view, folder)
            time.sleep(1.0)
        _refresh(view, folder)
    for j, t in zip(jobs, tasks, strict=True):
        try:
            if not j.paths.result_pickle.exists() and ex.cluster == "slurm":
                raise RuntimeError("the job left the Slurm queue without a result (cancelled or its node failed)")
            j.result()
        except Exception as exc:
            events.emit("job_lost", job_id=str(j.job_id), pack=t.pack_id, error=f"{exc.__class__.__name__}: {exc}")
            if not quiet:
                        print(f"warning: job {j.job_id} (pack {t.pack_id}) ended without finishing: "
                              f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else exc.__class__.__name__}; "
                              f"its cells stay unfinished, rerun with {option('resume', True)}", flush=True)
    return True


def _submit(ex: Any, jobs_in: list[PackJob]) -> list[Any]:
    """Submit the array; a refusal by sbatch (bad partition, GRES, account, ...) is bad input: one
    line naming sbatch's own complaint, nothing submitted. submitit prints sbatch's stderr itself, so
    it is caught here and shown only when the submission went through."""
    from submitit.core.utils import FailedSubmissionError, UncompletedJobError

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), ex.batch():
            jobs = [ex.submit(j) for j in jobs_in]
    except (UncompletedJobError, FailedSubmissionError, subprocess.CalledProcessError, OSError) as exc:
        text = f"{exc}\n{err.getvalue()}"
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        why = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else exc.__class__.__name__)
        raise UserError(f"Slurm refused the job array, nothing was submitted: {why}") from None
    if err.getvalue().strip():
        sys.stderr.write(err.getvalue())
    return jobs


def squeue_states() -> dict[str, str] | None:
    """Job (array task) id -> Slurm state for every job in the queue; None if squeue fails.

    Used instead of submitit's sacct polling, which needs Slurm accounting (slurmdbd): a job
    that is neither in the queue nor has a result pickle has ended without a result.
    """
    try:
        out = subprocess.run(["squeue", "-h", "-r", "-o", "%i %T"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    states = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


class _Tracker:
    """Whether submitted jobs have ended: a result pickle, else (Slurm) absent from squeue twice."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.absent: dict[str, int] = {}
        self.last = 0.0

    def all_done(self, jobs: list[Any]) -> bool:
        if self.cluster != "slurm":
            return all(j.done() for j in jobs)
        pending = [j for j in jobs if not j.paths.result_pickle.exists()]
        if not pending:
            return True
        now = time.monotonic()
        if now - self.last >= 10:
            self.last = now
            states = squeue_states()
            if states is not None:
                for j in pending:
                    jid = str(j.job_id)
                    self.absent[jid] = 0 if jid in states else self.absent.get(jid, 0) + 1
        return all(self.absent.get(str(j.job_id), 0) >= 2 for j in pending)


def _refresh(view: ProgressView, folder: GridFolder) -> None:
    if not view.enabled:
        return
    view.set_done(len(shard_files(folder.shards)))
    for pid, info in pack_progress(folder).items():
        if info.get("ended"):
            view.pack_done(pid)
        elif info.get("total"):
            view.pack(pid, info["pipeline"], info["done"], info["total"])


def pack_progress(folder: GridFolder) -> dict[str, dict[str, Any]]:
    """Per pack, from the event log: pipeline, epochs done / total, the epoch of its last checkpoint
    (where a resume continues), started, ended, requeues (and whether the last word was a requeue)."""
    out: dict[str, dict[str, Any]] = {}
    for ev in read_events(folder.events):
        pid = ev.get("pack")
        if not pid:
            continue
        info = out.setdefault(pid, {"pipeline": ev.get("pipeline", pid.rsplit("-", 1)[0]), "done": 0, "total": 0,
                                    "checkpoint": 0, "ended": False, "failed": False, "requeues": 0,
                                    "requeued": False})
        kind = ev.get("event")
        if kind == "pack_start":
            info["ended"] = info["requeued"] = False
            info["done"] = info["checkpoint"] = int(ev.get("resumed_from_epoch") or 0)
        elif kind == "epoch":
            info["done"], info["total"] = int(ev["epochs_done"]), int(ev["total"])
        elif kind == "checkpoint":
            info["done"] = max(info["done"], int(ev["epochs_done"]))
            info["checkpoint"] = max(info["checkpoint"], int(ev["epochs_done"]))
        elif kind in ("pack_end", "pack_failed", "pack_dropped"):
            info["ended"] = True
            info["failed"] = kind == "pack_failed"
        elif kind == "requeue":
            info["requeues"] += 1
            info["requeued"] = True
    return out

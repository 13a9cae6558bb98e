"""The local executor: packs run in worker processes, one per visible GPU or ``--jobs N`` on CPU.

Each GPU worker sees only its own GPU (``CUDA_VISIBLE_DEVICES`` set per worker before it
starts). With a single worker and nothing to hide, packs run in the calling process instead
(same code path, no pickling, and a kill of the command stops the training with it).

Workers write shards, checkpoints and events themselves, so nothing is lost if the parent
dies; the parent only draws progress from their messages. A worker checks that its parent is
alive at every epoch and exits if it is gone, so a killed command leaves no orphan trainers.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import signal
import traceback
from pathlib import Path
from typing import Any

from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.pack_job import PackContext, PackTask, TrainFn, execute_pack
from initmem.collect.execution.progress import ProgressView
from initmem.collect.execution.shards import Cell


def visible_gpus() -> list[str]:
    """The GPU ids this process may use, as CUDA_VISIBLE_DEVICES entries."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    import torch  # only when CUDA_VISIBLE_DEVICES is unset: the executors stay torch-free

    return [str(i) for i in range(torch.cuda.device_count())]


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS has no affinity masks
        return os.cpu_count() or 1


def auto_jobs(grid: Any, device: str, n_packs: int) -> int:
    """``--jobs auto``: CPU workers that fill the cores without oversubscribing them.

    A grid that pins ``engine.cpu_threads`` gets one worker per that many cores (the quick preset
    pins 1 thread, so a 2-core machine trains two packs at once); a grid that leaves torch its
    default threading gets one worker using every core. Never more workers than packs. On a GPU
    the worker plan is one per visible GPU regardless, so this is 1.
    """
    if device.split(":", 1)[0] != "cpu":  # as worker_plan: this module stays free of torch imports
        return 1
    threads = grid.engine.cpu_threads
    if not threads:
        return 1
    return max(1, min(n_packs, usable_cores() // threads))


def worker_plan(device: str, jobs: int, per_gpu: int = 1) -> list[dict[str, str]]:
    """One environment overlay per worker: ``per_gpu`` per visible GPU (``engine.cells_per_gpu``: several
    small cells share a GPU), else ``jobs`` CPU workers."""
    kind = device.split(":", 1)[0]
    if kind == "cuda" and ":" not in device:
        gpus = visible_gpus()
        if len(gpus) > 1 or per_gpu > 1:
            return [{"CUDA_VISIBLE_DEVICES": g} for g in gpus for _ in range(per_gpu)] or [{}]
        return [{}]
    if kind != "cpu":  # one named GPU ('cuda:1') or Apple's mps: one worker
        return [{}]
    return [{} for _ in range(max(1, jobs))]


def train_local(tasks: list[PackTask], folder: GridFolder, *, grid: Any, grid_hash: str, device: str, jobs: int,
              train_fn: TrainFn, checkpoint_every: int, checkpoint_seconds: float | None,
              view: ProgressView) -> list[str]:
    """Run every task; return one line per pack that was lost (its worker died)."""
    plan = worker_plan(device, jobs, int(grid.engine.cells_per_gpu))
    if len(plan) == 1 and not plan[0]:
        ctx = PackContext(folder, grid, grid_hash, device, train_fn, checkpoint_every, checkpoint_seconds,
                          on_progress=view.pack, on_cell=lambda _c, _s: view.cell_done())
        for task in tasks:
            execute_pack(task, ctx)
            view.pack_done(task.pack_id)
        return []
    return _train_workers(tasks, folder, plan, grid=grid, grid_hash=grid_hash, device=device, train_fn=train_fn,
                        checkpoint_every=checkpoint_every, checkpoint_seconds=checkpoint_seconds, view=view)


def _train_workers(tasks: list[PackTask], folder: GridFolder, plan: list[dict[str, str]], *, grid: Any, grid_hash: str,
                 device: str, train_fn: TrainFn, checkpoint_every: int, checkpoint_seconds: float | None,
                 view: ProgressView) -> list[str]:
    mpctx = mp.get_context("spawn")
    task_q: Any = mpctx.Queue()
    msg_q: Any = mpctx.Queue()
    for t in tasks:
        task_q.put(t)
    for _ in plan:
        task_q.put(None)
    threads = max(1, usable_cores() // len(plan))
    procs = []
    for i, overlay in enumerate(plan):
        saved = {k: os.environ.get(k) for k in overlay}
        os.environ.update(overlay)  # a spawned child inherits the environment at start
        try:
            p = mpctx.Process(target=_worker, name=f"initmem-worker-{i}", daemon=True,
                              args=(i, str(folder.root), grid, grid_hash, device, train_fn, checkpoint_every,
                                    checkpoint_seconds, threads, os.getpid(), task_q, msg_q))
            p.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        procs.append(p)
    running: dict[int, PackTask] = {}
    lost: list[str] = []
    with _stopping(grid, procs, (task_q, msg_q)):
        _wait_for_workers(procs, msg_q, running, lost, view)
    for i, p in enumerate(procs):
        p.join()
        if p.exitcode != 0 and i in running:
            lost.append(f"pack {running[i].pack_id}: worker {i} died with exit code {p.exitcode}")
    return lost


def _stopping(grid: Any, procs: list[Any], queues: tuple[Any, ...]) -> contextlib.AbstractContextManager[None]:
    """A grid of user code: its workers lead process groups of their own, and a Ctrl-C or SIGTERM stops them
    (collect/custom/stopping.py: forwarded to each group, SIGKILL after a grace period); else nothing."""
    if not grid.user_pipelines:
        return contextlib.nullcontext()
    from initmem.collect.custom.stopping import stopping_workers

    return stopping_workers(procs, queues)


def _wait_for_workers(procs: list[Any], msg_q: Any, running: dict[int, PackTask], lost: list[str],
                      view: ProgressView) -> None:
    """Show the workers' messages until every worker has ended."""
    drained = False
    while True:
        try:
            msg = msg_q.get(timeout=0.5)
        except queue.Empty:
            msg = None
        if msg is not None:
            drained = False
            kind = msg[0]
            if kind == "start":
                running[msg[1]] = msg[2]
            elif kind == "progress":
                view.pack(*msg[1:])
            elif kind == "cell":
                view.cell_done()
            elif kind == "done":
                running.pop(msg[1], None)
                view.pack_done(msg[2].pack_id)
            elif kind == "error":
                running.pop(msg[1], None)
                lost.append(f"pack {msg[2].pack_id}: internal error in worker: {msg[3]}")
            continue
        if all(not p.is_alive() for p in procs):
            # A worker flushes its queue before it exits, so once all are gone one more empty
            # read means nothing is left; without it, messages sent just before the last exit
            # (a "done", an "error") would be lost depending on timing.
            if drained:
                break
            drained = True


def _worker(index: int, root: str, grid: Any, grid_hash: str, device: str, train_fn: TrainFn,
            checkpoint_every: int, checkpoint_seconds: float | None, threads: int, parent: int,
            task_q: Any, msg_q: Any) -> None:
    args = (index, root, grid, grid_hash, device, train_fn, checkpoint_every, checkpoint_seconds, threads, parent,
            task_q, msg_q)
    if not grid.user_pipelines:
        _work(*args)
        return
    from initmem.collect.custom.stopping import INTERRUPTED_EXIT, lead_own_group

    lead_own_group()   # a group of its own, which the parent stops on a Ctrl-C (collect/custom/stopping.py)
    try:
        _work(*args)
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # done: a stop now would only interrupt the exit itself
    except KeyboardInterrupt:   # stopped by the parent, which says so once: no traceback from each worker
        os._exit(INTERRUPTED_EXIT)


def _work(index: int, root: str, grid: Any, grid_hash: str, device: str, train_fn: TrainFn,
          checkpoint_every: int, checkpoint_seconds: float | None, threads: int, parent: int,
          task_q: Any, msg_q: Any) -> None:
    """A worker's life: take packs from ``task_q`` until its ``None``, train each, tell the parent on ``msg_q``."""
    import torch  # in the spawned worker only

    torch.set_num_threads(threads)

    def on_progress(pid: str, label: str, done: int, total: int) -> None:
        if os.getppid() != parent:  # the command was killed: stop, the checkpoint is on disk
            os._exit(3)
        msg_q.put(("progress", pid, label, done, total))

    def on_cell(cell: Cell, status: int) -> None:
        msg_q.put(("cell", cell, status))

    ctx = PackContext(GridFolder(Path(root)), grid, grid_hash, device, train_fn,
                      checkpoint_every, checkpoint_seconds, on_progress=on_progress, on_cell=on_cell)
    while True:
        task = task_q.get()
        if task is None:
            break
        msg_q.put(("start", index, task))
        try:
            execute_pack(task, ctx)
        except Exception as exc:
            traceback.print_exc()
            msg_q.put(("error", index, task, f"{exc.__class__.__name__}: {exc}"))
            continue
        msg_q.put(("done", index, task))

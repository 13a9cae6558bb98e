"""Stopping a grid of user code on one Ctrl-C (SIGINT) or a SIGTERM, promptly, leaving its cells resumable.

The user's code may not stop when asked: PyTorch Lightning catches the first ``KeyboardInterrupt``, ignores every
later Ctrl-C while it shuts down and then calls ``sys.exit(1)``; a loop of one's own may catch it and go on. So a
stop request never depends on the code's good will (docs/own-model.md, "Stopping a grid"):

* where a cell's code runs (:func:`cell_guard`, around each cell in the collector or a worker process), the
  request is remembered before the code sees it, so that whatever the code then does (returns, raises, exits)
  the cell ends as interrupted: no shard, not ``failed``, and ``--resume`` trains it again. A cell run in a child
  process (a command, or an entry point with ``timeout_min``) gets the signal forwarded to its process group and,
  past :data:`CHILD_GRACE_SECONDS`, SIGKILL. Where nothing else would end it (the collector itself runs the code),
  code still running :data:`GRACE_SECONDS` after the request ends the process: exit code 130, the same one line as
  the built-in engine's interrupt;
* the collector's local worker processes (:func:`stopping_workers`) lead process groups of their own, so that a
  terminal's Ctrl-C reaches the collector alone: it forwards the signal to each worker's group, waits
  :data:`GRACE_SECONDS` for them to end and SIGKILLs the groups that remain (the user's data-loader processes
  with them), then ends as the built-in engine does on an interrupt.

A second Ctrl-C while waiting kills at once. Every file the collector and the recorder write is written under a
temporary name and renamed, so a kill leaves nothing half-written (the temporaries are removed on ``--resume``).
SIGTERM is taken only where nobody else handles it (a Slurm task's is submitit's).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

GRACE_SECONDS = 5.0        # a stopped worker, or code the collector runs itself, has this long to end
CHILD_GRACE_SECONDS = 2.0  # a cell's child process, less: its worker ends within the worker's grace
INTERRUPTED_EXIT = 130     # the command line's exit code on an interrupt (cli/main.py), 128 + SIGINT
INTERRUPTED_LINE = "initmem: error: aborted"  # what the command line says on a Ctrl-C (click: Abort)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Request:
    """The stop request this process received (the first signal; None: none)."""

    signum: int | None = None


def requested() -> int | None:
    """The signal that asked this process to stop (SIGINT or SIGTERM), or None."""
    return _Request.signum


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _takeable(signum: int, own: Any) -> bool:
    """Whether to take ``signum`` here: SIGINT always; SIGTERM unless someone else handles it (submitit)."""
    if signum == signal.SIGINT:
        return True
    current = signal.getsignal(signum)
    return current in (signal.SIG_DFL, None) or current is own


@contextlib.contextmanager
def _handlers(handler: Any) -> Iterator[None]:
    """``handler`` for the stop signals it may take, the previous handlers back afterwards."""
    previous = {}
    for signum in STOP_SIGNALS:
        if _takeable(signum, handler):
            previous[signum] = signal.getsignal(signum)
            signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


@contextlib.contextmanager
def cell_guard() -> Iterator[None]:
    """Run one cell's code so that a stop request ends the cell as interrupted, whatever the code does with it.

    On SIGINT (or SIGTERM, where nobody else handles it) the request is remembered and ``KeyboardInterrupt`` is
    raised; when the block ends, by any way, after a request, ``KeyboardInterrupt`` leaves it (the cell gets no
    shard and is trained again on ``--resume``). In the collector's own process (no worker), code still running
    :data:`GRACE_SECONDS` later ends the process with exit code 130 and one line. Outside the main thread the
    block runs unguarded (signals reach only the main thread)."""
    if not _main_thread():
        yield
        return
    state = {"inside": True}
    watch = mp.parent_process() is None   # the collector itself: nobody else would end stubborn code

    def on_stop(signum: int, _frame: Any) -> None:
        first = _Request.signum is None
        _Request.signum = _Request.signum or signum
        if first and watch:
            threading.Thread(target=_end_if_still_inside, args=(state,), name="initmem-stop", daemon=True).start()
        raise KeyboardInterrupt

    _Request.signum = None   # a request before this cell has ended an earlier one (or was caught by the caller)
    try:
        with _handlers(on_stop):
            yield
    except BaseException:
        state["inside"] = False
        if _Request.signum is not None:
            raise KeyboardInterrupt from None   # whatever the code made of the request: the cell is interrupted
        raise
    state["inside"] = False
    if _Request.signum is not None:
        raise KeyboardInterrupt


def _end_if_still_inside(state: dict[str, bool]) -> None:
    """The watchdog of :func:`cell_guard` in the collector's own process."""
    time.sleep(GRACE_SECONDS)
    if state["inside"]:
        print(INTERRUPTED_LINE, file=sys.stderr, flush=True)
        os._exit(INTERRUPTED_EXIT)


def stop_child(proc: subprocess.Popen[bytes], grace: float = CHILD_GRACE_SECONDS) -> None:
    """Stop a cell's child process (the leader of a session of its own) and everything in its group: the stop
    signal this process received (SIGINT if none), then SIGKILL past ``grace`` seconds or on a second Ctrl-C."""
    signum = requested() or signal.SIGINT
    try:
        _signal_group(proc.pid, signum)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    except KeyboardInterrupt:
        pass
    finally:
        _signal_group(proc.pid, signal.SIGKILL)   # the group's other processes too (the code's data loaders)
        proc.wait()


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def lead_own_group() -> None:
    """Make this worker process the leader of a process group of its own (called first thing in the worker):
    a terminal's Ctrl-C then reaches the collector alone, which stops the workers (:func:`stopping_workers`)."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)


def _signal_worker(proc: Any, signum: int, grouped: set[int]) -> None:
    """``signum`` to a worker's process group. A worker that has not made its group yet is still starting (it
    makes it first thing) and has no cell in flight: it is killed, quietly. ``grouped`` keeps the workers seen
    leading their group: once such a worker is gone its group is signalled still, for what it left (a group's
    id is not reused while the group has members); a worker gone before it was seen so is left alone (its
    process id may be another process's by now)."""
    pid = proc.pid
    if pid is None or (pid not in grouped and not proc.is_alive()):
        return
    try:
        if pid in grouped or os.getpgid(pid) == pid:
            grouped.add(pid)
            os.killpg(pid, signum)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@contextlib.contextmanager
def stopping_workers(procs: Sequence[Any], queues: Sequence[Any] = ()) -> Iterator[None]:
    """Stop the local worker processes ``procs`` (``multiprocessing.Process``, each leading its own process group)
    on SIGINT or SIGTERM: forward the signal to each worker's group, wait :data:`GRACE_SECONDS` for them to end,
    SIGKILL the groups that remain; then the ``KeyboardInterrupt`` goes on (the command line's exit code 130).

    ``queues`` are the ``multiprocessing`` queues this process put into: their feeder threads are told not to
    wait for readers that are gone. A second Ctrl-C while waiting kills at once."""
    if not _main_thread():
        yield
        return
    sent: dict[str, int | None] = {"signum": None}
    grouped: set[int] = set()

    def forward(signum: int) -> None:
        for p in procs:
            _signal_worker(p, signum, grouped)
        sent["signum"] = signum

    def on_stop(signum: int, _frame: Any) -> None:
        _Request.signum = _Request.signum or signum
        forward(signum if sent["signum"] is None else signal.SIGKILL)
        raise KeyboardInterrupt

    try:
        with _handlers(on_stop):
            try:
                yield
            except KeyboardInterrupt:
                if sent["signum"] is None:   # raised here by another way (a test's fault hook): pass it on
                    forward(signal.SIGINT)
                _reap(procs, forward)
                raise
    finally:
        if sent["signum"] is not None:
            for q in queues:
                with contextlib.suppress(Exception):
                    q.cancel_join_thread()


def _reap(procs: Sequence[Any], forward: Any) -> None:
    """Wait up to :data:`GRACE_SECONDS` for the stopped workers, then SIGKILL the groups that remain."""
    deadline = time.monotonic() + GRACE_SECONDS
    try:
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
    except KeyboardInterrupt:   # a second Ctrl-C: kill now
        pass
    forward(signal.SIGKILL)   # the workers left, and what the ones that ended left in their groups
    for p in procs:
        with contextlib.suppress(Exception):
            p.join()

"""Fault-injection points for the crash tests (inert unless ``INITMEM_TEST_HOOK`` is set).

A crash test must land its kill at an exact place (mid shard write, mid checkpoint write, mid
merge), not at a random time. The collector calls :func:`hook` at those places; the variable

    INITMEM_TEST_HOOK="POINT:N[:ACTION],..."

makes the N-th arrival (counted per process) at POINT perform ACTION: ``kill`` (SIGKILL this
process, the default), ``interrupt`` (SIGINT, as Ctrl-C), ``preempt`` (send this process
submitit's preemption signal, SIGUSR2 by default) or ``raise`` (RuntimeError). With
``INITMEM_TEST_HOOK_ONCE=FILE`` a hook fires only if FILE does not exist yet and creates it, so a
requeued or resumed process does not fire again.

Points: ``epoch`` (engine progress callback), ``checkpoint_write`` (checkpoint complete under its
temporary name), ``checkpoint_saved`` (after its rename), ``shard_write`` (shard complete under
its temporary name), ``shard_written`` (after its rename), ``merge`` (merged cube complete under
its temporary name), ``evaluate`` (a user's loop recorded an evaluation: ``initmem.Recorder.evaluate``,
in the process that runs the user's code).
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV = "INITMEM_TEST_HOOK"
ONCE_ENV = "INITMEM_TEST_HOOK_ONCE"
POINTS = ("epoch", "checkpoint_write", "checkpoint_saved", "shard_write", "shard_written", "merge", "evaluate")

_counts: Counter[str] = Counter()


def hook(point: str) -> None:
    """Perform the configured action if this is the configured arrival at ``point``."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    _counts[point] += 1
    for item in spec.split(","):
        parts = item.strip().split(":")
        if parts[0] != point:
            continue
        nth = int(parts[1]) if len(parts) > 1 and parts[1] else 1
        action = parts[2] if len(parts) > 2 else "kill"
        if _counts[point] != nth:
            continue
        once = os.environ.get(ONCE_ENV)
        if once:
            try:
                fd = os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            os.write(fd, f"{point}:{nth}:{action}\n".encode())
            os.close(fd)
        _fire(action, point)


def _fire(action: str, point: str) -> None:
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "interrupt":
        # Python's own Ctrl-C handler: a process started with SIGINT ignored (as under some test runners'
        # workers) would otherwise not see the signal at all; a Python handler stays (initmem's, around user code)
        if not callable(signal.getsignal(signal.SIGINT)):
            signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), signal.SIGINT)
    elif action == "preempt":
        sig = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "USR2")
        os.kill(os.getpid(), getattr(signal, f"SIG{sig}"))
    elif action == "raise":
        raise RuntimeError(f"test hook raised at {point}")
    else:
        raise ValueError(f"unknown test hook action {action!r}")

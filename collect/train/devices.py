"""Which torch device a collection runs on, and the per-device engine settings.

``auto`` prefers cuda, then mps, then cpu. Asking for a device that is absent is bad input
(``OptionError``, naming the option ``device``), not an internal fault.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.utils.deterministic

from initmem.errors import OptionError

DEVICES = ("auto", "cpu", "cuda", "mps")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(name: str = "auto") -> str:
    """'auto' | 'cpu' | 'cuda' | 'mps' (or 'cuda:N') -> a device string torch accepts."""
    name = str(name).strip().lower()
    base = name.split(":", 1)[0]
    if base not in DEVICES:
        raise OptionError("device", f"unknown {{option}} {name!r}: must be one of {', '.join(DEVICES)}")
    if base == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if _mps_available():
            return "mps"
        return "cpu"
    if base == "cuda" and not torch.cuda.is_available():
        raise OptionError("device", "{option} cuda was asked for but torch sees no CUDA GPU; use {option} cpu or auto")
    if base == "mps" and not _mps_available():
        raise OptionError("device", "{option} mps was asked for but this torch build has no usable MPS; use {option} "
                                    "cpu")
    return name


def device_kind(device: str) -> str:
    return str(device).split(":", 1)[0]


@contextlib.contextmanager
def deterministic(device: str, threads: int | None = None) -> Iterator[None]:
    """On CPU, switch torch to deterministic algorithms (and ``threads`` intra-op threads, if
    given) for the block, and restore both after. Same grid, same thread count: same numbers."""
    if device_kind(device) != "cpu":
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    threads_before = torch.get_num_threads()
    fill_before = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True)
    # Filling every new tensor with NaN is a debugging aid that costs a full write pass per
    # allocation; the engine never reads uninitialised memory, so it stays off.
    torch.utils.deterministic.fill_uninitialized_memory = False
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill_before
        if threads:
            torch.set_num_threads(threads_before)


def free_memory_bytes(device: str) -> int:
    """Free memory on the device (host RAM for cpu/mps)."""
    if device_kind(device) == "cuda":
        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 * 1024**3

"""Which torch device a collection runs on, and the per-device engine settings.

``auto`` prefers cuda, then mps, then cpu. Asking for a device that is absent is bad input
(``OptionError``, naming the option ``device``), not an internal fault.
"""

from __future__ import annotations

import contextlib
import ctypes
import platform
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


# glibc mallopt parameters (malloc.h) and the values the CPU engine sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024   # glibc's ceiling on 64-bit: blocks up to it come from the heap
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024  # give freed heap back to the system only above 1 GiB
# Whether train_pack keeps freed memory for reuse on CPU (benchmarks/train_throughput.py turns it off
# to measure the difference; it never changes a number the engine computes).
TUNE_CPU_ALLOCATOR = True
_allocator_tuned = False


def keep_freed_memory() -> bool:
    """Make glibc's malloc reuse freed activation buffers instead of returning them to the system.

    By default glibc serves a block above its mmap threshold (128 KiB at start, raised towards
    32 MiB as it sees such blocks freed) from a fresh ``mmap`` and unmaps it on free, and it
    gives the heap top back to the system once twice that much of it is free. A 20-member pack's
    activations, 1.6 MB a layer in training and 10 MB in an evaluation batch, keep crossing
    both limits, so the next step touches new pages, and every page costs a page fault and a
    kernel zero-fill: a quick-preset pack took 1,700-6,100 faults per training step and spent 7-20% of
    its CPU time in the kernel (benchmarks/train_throughput.py ``--compare allocator``). Raising
    both thresholds keeps the buffers in the heap, where the next step finds them already mapped.

    Only where the memory comes from is changed: torch allocates every tensor 64-byte aligned
    either way, and the kernels, their order of operations and so every number are the same
    (tests/test_engine.py trains a grid both ways and compares the cubes bitwise). The price is
    that a CPU worker keeps its peak memory until it exits. Process-wide and set once; a no-op
    off glibc (macOS, musl) and when :data:`TUNE_CPU_ALLOCATOR` is False. Returns whether the
    thresholds are set in this process.
    """
    global _allocator_tuned
    if _allocator_tuned or not TUNE_CPU_ALLOCATOR:
        return _allocator_tuned
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # mallopt returns 1 on success; setting either threshold also ends glibc's own adjustment of both.
    _allocator_tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    return _allocator_tuned


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

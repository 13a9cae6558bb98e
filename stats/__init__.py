"""Statistics without the Bayesian model (no torch): frequentist cross-checks, memory curves, forgetting
times and the clock-collapse test (docs/frequentist.md, docs/clocks-and-collapse.md).

Public face: :func:`crosscheck`, :func:`memory_curves` and :func:`collapse_test`."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "crosscheck": ("initmem.stats.frequentist", "crosscheck"),
    "memory_curves": ("initmem.stats.curves", "memory_curves"),
    "collapse_test": ("initmem.stats.collapse", "collapse_test"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)

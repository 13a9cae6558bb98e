"""Statistics without the Bayesian model (no torch): frequentist cross-checks, memory curves, forgetting
times and the clock-collapse test (docs/frequentist.md, docs/clocks-and-collapse.md).

Public face: :func:`crosscheck`, :func:`memory_curves` and :func:`collapse_test`."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_API: dict[str, tuple[str, str]] = {
    "crosscheck": ("initmem.stats.frequentist", "crosscheck"),
    "memory_curves": ("initmem.stats.curves", "memory_curves"),
    "collapse_test": ("initmem.stats.collapse", "collapse_test"),
}


def __getattr__(name: str) -> Any:
    """The public names, imported when first used (importing the package imports nothing heavy)."""
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _API[name]
    value = getattr(import_module(module), attr)
    globals()[name] = value
    return value


__all__ = list(_API)

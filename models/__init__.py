"""The hierarchical Bayesian memory model (PyMC + nutpie; docs/memory-model.md) and seed planning.

Public face: :func:`prepare_data` (a cube's metric as the model's data), :class:`MemoryModel` (fit,
diagnostics, verdicts) and :func:`plan` (seeds needed for a decisive verdict)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_API: dict[str, tuple[str, str]] = {
    "prepare_data": ("initmem.models.data", "prepare_data"),
    "MemoryModel": ("initmem.models.memory", "MemoryModel"),
    "plan": ("initmem.models.plan", "plan"),
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

"""The hierarchical Bayesian memory model (PyMC + nutpie; docs/memory-model.md) and seed planning.

Public face: :func:`prepare_data` (a cube's metric as the model's data), :class:`MemoryModel` (fit,
diagnostics, verdicts) and :func:`plan` (seeds needed for a decisive verdict)."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "prepare_data": ("initmem.models.data", "prepare_data"),
    "MemoryModel": ("initmem.models.memory", "MemoryModel"),
    "plan": ("initmem.models.plan", "plan"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)

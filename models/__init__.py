"""The hierarchical Bayesian memory model (PyMC + nutpie; docs/memory-model.md) and seed planning.

Public face: :func:`prepare_data` (a cube's metric as the model's data), :class:`MemoryModel` (fit,
diagnostics, verdicts) and :func:`plan` (seeds needed for a decisive verdict)."""

from __future__ import annotations

import warnings

from initmem.lazy import lazy_getattr

# ArviZ 0.x announces its coming refactor with a FutureWarning on import, once a day, to whatever command first
# fits a model: news about ArviZ's API, not about the user's analysis (initmem calls ArviZ from one module,
# arviz_io.py, and pins the version it is tested with). Set before anything in this package imports PyMC.
warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)

_API: dict[str, tuple[str, str]] = {
    "prepare_data": ("initmem.models.data", "prepare_data"),
    "MemoryModel": ("initmem.models.memory", "MemoryModel"),
    "plan": ("initmem.models.plan", "plan"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)

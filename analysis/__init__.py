"""Where the parts meet: ``analyze`` (a cube into an analysis folder: the memory model, the frequentist
cross-checks, the curves and the collapse test) and ``run`` (collect, analyze and report in one go).

The one layer that may call models, stats and reports together (docs/architecture.md). The public faces are
:func:`analyze_cube` (``initmem.analyze``, every option typed) and :func:`initmem.analysis.run_all.run`
(``initmem.run``, over :func:`run_all`). ``run`` is not bound here: ``initmem.analysis.run`` is the module of
``analyze_cube``.
"""

from __future__ import annotations

from initmem.analysis.run import analyze_cube
from initmem.analysis.run_all import RunResult, resolve_grid, run_all

__all__ = ["RunResult", "analyze_cube", "resolve_grid", "run_all"]

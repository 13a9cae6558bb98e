"""Where the parts meet: ``analyze`` (a cube into an analysis folder: the memory model, the frequentist
cross-checks, the curves and the collapse test) and ``run`` (collect, analyze and report in one go).

The one layer that may call models, stats and reports together (docs/architecture.md). The public faces are
:func:`analyze_cube` (``initmem.analyze``, every option typed) and :func:`initmem.analysis.run.run`
(``initmem.run``, over :func:`run_all`). The modules carry the names of what they do: ``analysis.analyze`` holds
``analyze_cube`` and ``analysis.run`` holds ``initmem run``. ``run`` is not bound here, so that
``initmem.analysis.run`` stays the module.
"""

from __future__ import annotations

from initmem.analysis.analyze import analyze_cube
from initmem.analysis.run import RunResult, resolve_grid, run_all

__all__ = ["RunResult", "analyze_cube", "resolve_grid", "run_all"]

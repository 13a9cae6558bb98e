"""The report's view of an analysis folder: the loader the figures use (:mod:`initmem.plot.load`).

One loader for the figures, the report and ``initmem export``, so they read the same folder the
same way; this module keeps the report's import path (docs/extending.md).
"""

from __future__ import annotations

from initmem.plot.load import Analysis, as_analysis, find_cube, finite, load_analysis, ok_mask

__all__ = ["Analysis", "as_analysis", "find_cube", "finite", "load_analysis", "ok_mask"]

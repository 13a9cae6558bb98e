"""The HTML report of an analysis folder (docs/report.md): it presents, never trains or samples.

Public face: :func:`build_report` (write DIR/report.html), :func:`render_html`, :func:`load_analysis`,
the report-section table :data:`SECTIONS` (reports/sections.py; docs/extending.md) and
:func:`export_analysis` (``initmem export``: the report's figures, tables and methods as the parts of a
paper; docs/export.md). The figures themselves are the :mod:`initmem.plot` functions."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "build_report": ("initmem.reports.html", "build_report"),
    "render_html": ("initmem.reports.html", "render_html"),
    "load_analysis": ("initmem.plot.load", "load_analysis"),
    "SECTIONS": ("initmem.reports.sections", "SECTIONS"),
    "export_analysis": ("initmem.reports.export", "export_analysis"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)

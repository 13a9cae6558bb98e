"""The HTML report of an analysis folder (docs/report.md): it presents, never trains or samples.

Public face: :func:`build_report` (write DIR/report.html), :func:`render_html`, :func:`load_analysis`
and the report-section table :data:`SECTIONS` (reports/sections.py; docs/extending.md)."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "build_report": ("initmem.reports.html", "build_report"),
    "render_html": ("initmem.reports.html", "render_html"),
    "load_analysis": ("initmem.reports.load", "load_analysis"),
    "SECTIONS": ("initmem.reports.sections", "SECTIONS"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)

"""The HTML report of an analysis folder (docs/report.md): it presents, never trains or samples.

Public face: :func:`build_report` (write DIR/report.html), :func:`render_html`, :func:`load_analysis`
and the report-section table :data:`SECTIONS` (reports/sections.py; docs/extending.md)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_API: dict[str, tuple[str, str]] = {
    "build_report": ("initmem.reports.html", "build_report"),
    "render_html": ("initmem.reports.html", "render_html"),
    "load_analysis": ("initmem.reports.load", "load_analysis"),
    "SECTIONS": ("initmem.reports.sections", "SECTIONS"),
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

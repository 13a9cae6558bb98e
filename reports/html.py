"""``initmem report``: one self-contained HTML file from an analysis folder.

The page loads nothing from the network: figures are inline SVG, CSS and the small table-sorting
script are inlined, and a Content-Security-Policy forbids every outside load (the script is
allowed by its hash, so no injected script could run even if escaping failed). Every user string
goes through jinja2's autoescaping; figure text is escaped by matplotlib and checked in
:mod:`initmem.reports.svg`.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
import shlex
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined, select_autoescape

from initmem import cube as C
from initmem import results as R
from initmem.atomic import write_text
from initmem.reports import figures as F
from initmem.reports import figures_clocks as FK
from initmem.reports import sections as S
from initmem.reports import text as X
from initmem.reports.load import Analysis, load_analysis
from initmem.reports.methods import methods_paragraphs

REPORT_PACKAGES = ("numpy", "xarray", "matplotlib", "jinja2", "pydantic")


# Sections: the report-section table (reports/sections.py) says which exist, in which order, with
# which figures, tables, show rule and template partial.
SECTIONS = tuple((sec.id, sec.title) for sec in S.SECTIONS)


def _versions() -> dict[str, str]:
    out = {}
    for name in REPORT_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover
            pass
    return out


def _provenance(a: Analysis, command: str | None) -> dict[str, Any]:
    attrs: list[tuple[str, str]] = []
    grid_text = None
    fingerprint = None
    if a.cube is not None:
        for k, v in a.cube.attrs.items():
            if k == C.A_GRID:
                grid_text = v if isinstance(v, str) and v.strip() else None
                continue
            text = v if isinstance(v, str) else json.dumps(v, default=str)
            if len(text) > 600:
                text = text[:600] + f"… ({len(text)} characters)"
            attrs.append((str(k), text))
        fingerprint = a.cube.attrs.get(C.A_DATASET_FINGERPRINT)
    return {
        "analysis_dir": str(a.dir),
        "cube_path": str(a.cube_path) if a.cube_path else a.summary.cube,
        "grid_text": grid_text,
        "attrs": attrs,
        "fingerprint": fingerprint,
        "analyze_command": _command(a.summary.command),
        "report_command": command,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _command(v: Any) -> str | None:
    if isinstance(v, list):
        return " ".join(shlex.quote(str(x)) for x in v)
    return str(v) if v else None


def _fallback_name(a: Analysis) -> str:
    """A title without a grid file: the cube's name, or its folder's when the cube is just 'cube.nc'."""
    cube_path = a.cube_path or (Path(a.summary.cube) if a.summary.cube else None)
    if cube_path is None:
        return a.dir.name
    if cube_path.stem == "cube" and cube_path.resolve().parent.name:
        return cube_path.resolve().parent.name
    return cube_path.stem


def build_context(a: Analysis, command: str | None = None) -> dict[str, Any]:
    figures: dict[str, list[F.Figure]] = {}
    skipped: dict[str, list[tuple[str, str]]] = {}  # section -> [(figure, why)]
    for sec in S.SECTIONS:
        figures[sec.id] = []
        for fn in sec.figures:
            try:
                figures[sec.id].append(fn(a))
            except F.Skip as exc:
                skipped.setdefault(sec.id, []).append((fn.__name__.replace("_", " "), str(exc)))
    shown = {sec.id: sec.show(a, figures[sec.id]) for sec in S.SECTIONS}
    section_skips = [(sec.title, "; ".join(sorted({why for _, why in skipped.get(sec.id, [])})) or sec.skip_reason)
                     for sec in S.SECTIONS if not shown[sec.id]]
    figure_skips = [(f"{sec.title}: {what}", why) for sec in S.SECTIONS if shown[sec.id]
                    for what, why in skipped.get(sec.id, [])]
    section_tables = {name: build(a) for sec in S.SECTIONS for name, build in sec.tables}
    grid = a.grid()
    name = grid.name if grid is not None else _fallback_name(a)
    return {
        "title": f"initmem report: {name}",
        "name": name,
        "a": a,
        "summary": a.summary,
        "diag": a.summary.diagnostics,
        "unit": a.unit,
        "delta_shown": a.delta * a.scale,
        "digits": a.digits,
        "headline": X.headline(a),
        "spread_sentence": X.spread_sentence(a),
        "collapse_sentence": X.collapse_sentence(a),
        "forgetting_sentence": FK.forgetting_sentence(a),
        "interpolation_sentence": X.interpolation_sentence(a),
        "min_p_note": X.min_p_note(a),
        "collapse": a.collapse,
        "collapse_notes": list(a.collapse.notes) if a.collapse else [],
        "failures": X.failures(a),
        "divergence_warnings": X.divergence_warnings(a),
        "warnings": X.warnings(a),
        "notes": a.notes,
        "analysis_skipped": [f"{k}: {why}" for k, why in a.summary.skipped.items()],
        "figures": figures,
        **section_tables,
        "sections": [(sec.id, sec.title, shown[sec.id]) for sec in S.SECTIONS],
        "section_number": S.numbers(),
        # Every section is drawn from its partial, in table order; a skipped one only if its entry keeps
        # it (its heading and the note saying why).
        "page_sections": [sec for sec in S.SECTIONS if shown[sec.id] or sec.kept_when_skipped],
        "section_skips": section_skips,
        "figure_skips": figure_skips,
        "methods": methods_paragraphs(a, _versions()),
        "provenance": _provenance(a, command),
        "rhat_max": R.RHAT_MAX, "ess_min": R.ESS_MIN, "verdict_names": R.VERDICTS,
        "has_cube": a.cube is not None,
    }


def _environment() -> Environment:
    env = Environment(
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "html.j2"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        loader=FunctionLoader(_asset),  # the section partials, templates/sections/*.html.j2
    )
    env.filters.update(fmt=X.fmt, fmt_p=X.fmt_p, sort_key=X.sort_key)
    return env


def _asset(name: str) -> str:
    return resources.files("initmem.reports").joinpath("templates", *name.split("/")).read_text(encoding="utf-8")


def render_html(a: Analysis, command: str | None = None) -> str:
    """The report as one HTML string."""
    env = _environment()
    template = env.from_string(_asset("report.html.j2"))
    js = _asset("report.js")
    css = _asset("report.css")
    script_hash = base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode("ascii")
    return template.render(**build_context(a, command), css=css, js=js, script_hash=script_hash)


def default_command() -> str:
    argv = [os.path.basename(sys.argv[0]) or "initmem", *sys.argv[1:]]
    return " ".join(shlex.quote(x) for x in argv)


def build_report(analysis_dir: str | os.PathLike, out_file: str | os.PathLike | None = None, *,
                 command: str | None = None) -> Path:
    """Write the HTML report of ``analysis_dir`` to ``out_file`` (default ``DIR/report.html``)."""
    a = load_analysis(analysis_dir)
    out = Path(out_file) if out_file is not None else Path(analysis_dir) / R.REPORT_HTML
    write_text(out, render_html(a, command if command is not None else default_command()))
    # The temporary file was private (0600); a report is meant to be shared, so honour the umask.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out, 0o666 & ~umask)
    return out

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

from initmem import cube, results
from initmem.atomic import blocking_file, write_text
from initmem.errors import UserError
from initmem.names import BORDERLINE, FORGETS, REMEMBERS, UNDECIDED
from initmem.plot.core import Skip
from initmem.plot.load import Analysis, load_analysis, seed_design, verdict_levels
from initmem.reports import sections
from initmem.reports import text as sentences
from initmem.reports.figures import report_figure
from initmem.reports.methods import likelihood_label, methods_paragraphs
from initmem.reports.svg import Figure
from initmem.reports.tables import SURVIVORSHIP_MARK
from initmem.results.records import DRAW_VERDICTS

REPORT_PACKAGES = ("numpy", "xarray", "matplotlib", "jinja2", "pydantic")


# Sections: the report-section table (reports/sections.py) says which exist, in which order, with
# which figures, tables, show rule and template partial.
SECTIONS = tuple((sec.id, sec.title) for sec in sections.SECTIONS)


def report_versions() -> dict[str, str]:
    """Versions of the packages that drew the report (the methods' software sentence names them)."""
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
            if k == cube.A_GRID:
                grid_text = v if isinstance(v, str) and v.strip() else None
                continue
            shown = v if isinstance(v, str) else json.dumps(v, default=str)
            if len(shown) > 600:
                shown = shown[:600] + f"… ({len(shown)} characters)"
            attrs.append((str(k), shown))
        fingerprint = a.cube.attrs.get(cube.A_DATASET_FINGERPRINT)
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
    """Everything the template draws: sentences, tables, figures (the initmem.plot functions the
    section table names, embedded as SVG), skipped parts with their reasons, methods, provenance."""
    figures: dict[str, list[Figure]] = {}
    skipped: dict[str, list[tuple[str, str]]] = {}  # section -> [(figure, why)]
    lacks: dict[str, dict[str, str]] = {}           # section -> {figure: what the input lacks for it}
    applicable = sections.applicable(a)  # a section that does not apply (crossed seeds) is not on the page at all
    for sec in applicable:
        figures[sec.id] = []
        for name in sec.figures:
            try:
                figures[sec.id].append(report_figure(name, a))
            except Skip as exc:
                lacking = sections.figure_not_in_input(a, name)
                if lacking:
                    lacks.setdefault(sec.id, {})[name] = lacking
                else:
                    skipped.setdefault(sec.id, []).append((name.replace("_", " "), str(exc)))
    shown = {sec.id: sec.shown(a, figures[sec.id]) for sec in applicable}
    # Absent by design (the input never held the data): listed once at the top, "not in this input", and not
    # drawn, numbered or noted as a problem.
    absent = {sec.id: sec.not_in_input(a, lacks.get(sec.id, {})) for sec in applicable if not shown[sec.id]}
    not_in_input = [(sec.title, absent[sec.id]) for sec in applicable if absent.get(sec.id)]
    not_in_input += [(f"{sec.title}: {name.replace('_', ' ')}", what) for sec in applicable if shown[sec.id]
                     for name, what in lacks.get(sec.id, {}).items()]
    secs = tuple(sec for sec in applicable if not absent.get(sec.id))
    section_skips = [(sec.title, "; ".join(sorted({why for _, why in skipped.get(sec.id, [])})) or sec.skip_reason)
                     for sec in secs if not shown[sec.id]]
    figure_skips = [(f"{sec.title}: {what}", why) for sec in secs if shown[sec.id]
                    for what, why in skipped.get(sec.id, [])]
    section_tables = {name: build(a) for sec in sections.SECTIONS for name, build in sec.tables}
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
        "levels": verdict_levels(a),
        "delta_unit": "point" if a.is_accuracy and a.delta * a.scale == 1 else a.unit,
        "independent_seeds": seed_design(a) == cube.SEED_INDEPENDENT,
        "digits": a.digits,
        "headline": sentences.headline(a),
        "headline_note": sentences.headline_note(a),
        "delta_words": sentences.delta_words(a),
        "not_in_input": sentences.not_in_input_sentence(not_in_input),
        "collapse_sentence": sentences.collapse_sentence(a),
        "forgetting_sentence": sentences.forgetting_sentence(a),
        "interpolation_sentence": sentences.interpolation_sentence(a),
        "crossed_sentence": sentences.crossed_sentence(a),
        "crossed": a.summary.crossed,
        "crossed_margin": (a.summary.crossed.margin * a.scale) if a.summary.crossed is not None
        and a.summary.crossed.margin is not None else None,
        "min_p_note": sentences.min_p_note(a),
        "collapse": a.collapse,
        "collapse_verdict_words": sentences.collapse_verdict_words(a.collapse.verdict if a.collapse else None),
        "collapse_notes": list(a.collapse.notes) if a.collapse else [],
        "failures": sentences.failures(a),
        "divergence_warnings": sentences.divergence_warnings(a),
        "warnings": sentences.data_warnings(a),
        "notes": a.notes,
        "analysis_skipped": [f"{k}: {why}" for k, why in a.summary.skipped.items()],
        "figures": figures,
        **section_tables,
        "sections": [(sec.id, sec.title, shown[sec.id]) for sec in secs],
        "section_number": sections.numbers(secs),
        # Every section is drawn from its partial, in table order; a skipped one only if its entry keeps
        # it (its heading and the note saying why).
        "page_sections": [sec for sec in secs if shown[sec.id] or sec.kept_when_skipped],
        "section_skips": section_skips,
        "figure_skips": figure_skips,
        "methods": methods_paragraphs(a, report_versions()),
        "likelihood_label": likelihood_label(a),
        "provenance": _provenance(a, command),
        "rhat_max": results.RHAT_MAX, "ess_min": results.ESS_MIN, "verdict_names": results.VERDICTS,
        # The verdict words the templates' prose names (initmem/names.py, the draw's in results/records.py): the
        # templates spell none of them.
        "words": {**{w: w for w in (REMEMBERS, FORGETS, UNDECIDED, BORDERLINE)},
                  "keeps_draw": DRAW_VERDICTS[0], "forgets_draw": DRAW_VERDICTS[1]},
        "has_cube": a.cube is not None,
        "survivorship_mark": SURVIVORSHIP_MARK,
    }


def _environment() -> Environment:
    env = Environment(
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "html.j2"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        loader=FunctionLoader(_asset),  # the section partials, templates/sections/*.html.j2
    )
    env.filters.update(fmt=sentences.fmt, fmt_p=sentences.fmt_p, sort_key=sentences.sort_key,
                       fmt_median=sentences.fmt_median, fmt_sig=sentences.fmt_sig)
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
    """Write the self-contained HTML report of an analysis folder.

    Parameters
    ----------
    analysis_dir : str or os.PathLike
        A folder written by ``initmem analyze`` or ``initmem run``.
    out_file : str or os.PathLike, optional
        Where to write the report; None: ``analysis_dir/report.html``.
    command : str, optional
        The command line that made the analysis, shown in the report's reproduction block.

    Returns
    -------
    pathlib.Path
        The report's path.

    Raises
    ------
    UserError
        ``analysis_dir`` is not an analysis folder, ``out_file`` is a folder or a file that is not HTML, or a file
        stands where its folder would be.

    Examples
    --------
    The analysis folder of [`initmem.analyze`][initmem.analyze]'s example:

    >>> import initmem
    >>> initmem.report("analysis")
    PosixPath('analysis/report.html')
    """
    a = load_analysis(analysis_dir)
    out = Path(out_file) if out_file is not None else Path(analysis_dir) / results.REPORT_HTML
    if out.is_dir():
        raise UserError(f"{out} is a folder; give the report's file name (for example {out / results.REPORT_HTML})")
    if out.exists() and out.suffix.lower() not in (".html", ".htm"):
        raise UserError(f"{out} exists and is not an HTML file; refusing to overwrite it with the report")
    blocker = blocking_file(out.parent)   # refused before the figures are drawn, not after
    if blocker is not None:
        raise UserError(f"{out} cannot be written: {blocker} is a file, not a folder")
    write_text(out, render_html(a, command if command is not None else default_command()))
    return out

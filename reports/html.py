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
import math
import os
import shlex
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, StrictUndefined, select_autoescape

from initmem import cube as C
from initmem.atomic import write_text
from initmem.reports import figures as F
from initmem.reports.load import Analysis, finite, load_analysis, ok_mask
from initmem.reports.methods import methods_paragraphs

RHAT_MAX, ESS_MIN = 1.01, 400.0
PPC_LOW, PPC_HIGH = 0.025, 0.975
REPORT_PACKAGES = ("numpy", "xarray", "matplotlib", "jinja2")


# Formatting filters ---------------------------------------------------------------------

def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def fmt(v: Any, digits: int = 2) -> str:
    f = _num(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:.{digits}f}"


def fmt_p(v: Any) -> str:
    f = _num(v)
    if not math.isfinite(f):
        return "—"
    if f < 0.001:
        return "< 0.001"
    return f"{f:.3f}" if f < 0.1 else f"{f:.2f}"


def sort_key(v: Any) -> str:
    """The value a sortable cell sorts by (empty for missing, so they go last)."""
    f = _num(v)
    return repr(f) if math.isfinite(f) else ""


def _q(d: Any, key: str = "median") -> float:
    return _num((d or {}).get(key)) if isinstance(d, dict) else math.nan


# Tables -----------------------------------------------------------------------------------

def n_excluded(v: Any) -> int | None:
    """Excluded cells: an int, or a dict of counts by reason (diverged, failed, missing)."""
    if isinstance(v, dict):
        return int(sum(int(x) for x in v.values() if isinstance(x, int | float)))
    if isinstance(v, int | float) and math.isfinite(float(v)):
        return int(v)
    return None


def excluded_text(v: Any) -> str:
    if isinstance(v, dict):
        parts = [f"{int(n)} {k}" for k, n in v.items() if isinstance(n, int | float) and n]
        return ", ".join(parts) if parts else "0"
    n = n_excluded(v)
    return "—" if n is None else str(n)


def _cell_stats(a: Analysis, var: str, pipe: str) -> np.ndarray:
    if not a.cube_has(var):
        return np.array([])
    da = a.cube[var].sel({C.PIPELINE: pipe}).where(ok_mask(a.cube).sel({C.PIPELINE: pipe}))
    return finite(da.values)


def summary_rows(a: Analysis) -> list[dict[str, Any]]:
    scale = 100.0 if a.is_accuracy else 1.0
    rows = []
    for p in a.pipelines:
        info = a.summary["pipelines"][p]
        sp, ms, sd = info.get("spread"), info.get("memory_share"), info.get("seed_sd")
        ti = _cell_stats(a, "tau_interp", p)
        tb = _cell_stats(a, "tau_best", p)
        n_runs = _cell_stats(a, "tau_best", p).size if a.cube_has("tau_best") else 0
        sel = _cell_stats(a, "selected_test_acc", p) * 100
        fin = _cell_stats(a, "final_test_acc", p) * 100
        rows.append({
            "name": p,
            "verdict": str(info.get("verdict", "?")),
            "spread": _q(sp) * scale, "spread_lo": _q(sp, "q05") * scale, "spread_hi": _q(sp, "q95") * scale,
            "p_gt": _num(info.get("p_spread_gt_delta")),
            "share": _q(ms), "share_lo": _q(ms, "q05"), "share_hi": _q(ms, "q95"),
            "seed_sd": _q(sd), "seed_sd_lo": _q(sd, "q05"), "seed_sd_hi": _q(sd, "q95"),
            "tau_interp": float(np.median(ti)) if ti.size else math.nan,
            "n_interp": int(ti.size), "n_runs": int(n_runs),
            "tau_best": float(np.median(tb)) if tb.size else math.nan,
            "sel": float(sel.mean()) if sel.size else math.nan,
            "sel_sd": float(sel.std(ddof=1)) if sel.size > 1 else math.nan,
            "fin": float(fin.mean()) if fin.size else math.nan,
            "fin_sd": float(fin.std(ddof=1)) if fin.size > 1 else math.nan,
            "n_sigma": info.get("n_sigma"), "n_seed": info.get("n_seed"),
            "n_excluded": n_excluded(info.get("n_excluded")),
            "agreement": info.get("agreement"),
        })
    return rows


def frequentist_rows(a: Analysis) -> list[dict[str, Any]]:
    rows = []
    for p in a.pipelines:
        info = a.summary["pipelines"][p]
        fq = info.get("frequentist") or {}
        reml, rm, fr, tost = (fq.get(k) or {} for k in ("reml", "rm_anova", "friedman", "tost"))
        rows.append({
            "name": p, "verdict": str(info.get("verdict", "?")), "freq_verdict": fq.get("verdict"),
            "reml_sigma": _num(reml.get("sigma_sd")), "reml_seed": _num(reml.get("seed_sd")),
            "reml_resid": _num(reml.get("residual_sd")),
            "F": _num(rm.get("F")), "rm_p": _num(rm.get("p")), "rm_p_holm": _num(rm.get("p_holm")),
            "ng2": _num(rm.get("ng2")),
            "Q": _num(fr.get("Q")), "fr_p": _num(fr.get("p")), "fr_p_holm": _num(fr.get("p_holm")),
            "tost_p": _num(tost.get("p")), "tost_p_holm": _num(tost.get("p_holm")),
            "equivalent": tost.get("equivalent"),
            "agreement": info.get("agreement"),
            "disagreements": [str(x) for x in (info.get("disagreements") or [])],
            "notes": [str(x) for x in (info.get("notes") or [])],
            "effect": info.get("effect_sizes") or {},
        })
    return rows


def diagnostics_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per-pipeline sampler diagnostics and posterior predictive checks (statistics in report units)."""
    k = 100.0 if a.is_accuracy else 1.0
    rows = []
    for p in a.pipelines:
        info = a.summary["pipelines"][p]
        d = info.get("diagnostics") or {}
        ppc = info.get("ppc") or {}
        rows.append({
            "name": p,
            "rhat": _num(d.get("max_rhat")), "ess": _num(d.get("min_ess_bulk")), "div": _num(d.get("divergences")),
            "ppc_spread_obs": k * _q(ppc.get("spread"), "observed"), "ppc_spread_p": _q(ppc.get("spread"), "p_value"),
            "ppc_spread_lo": k * _q(ppc.get("spread"), "q05"), "ppc_spread_hi": k * _q(ppc.get("spread"), "q95"),
            "ppc_sd_obs": k * _q(ppc.get("seed_sd"), "observed"), "ppc_sd_p": _q(ppc.get("seed_sd"), "p_value"),
            "ppc_sd_lo": k * _q(ppc.get("seed_sd"), "q05"), "ppc_sd_hi": k * _q(ppc.get("seed_sd"), "q95"),
            "n_excluded": n_excluded(info.get("n_excluded")),
            "excluded_text": excluded_text(info.get("n_excluded")),
        })
    return rows


def collapse_rows(a: Analysis) -> list[dict[str, Any]]:
    c = a.collapse or {}
    vs = c.get("vs_epoch") or {}
    ident = c.get("identifiable") or {}
    rows = []
    for axis, d in (c.get("axes") or {}).items():
        v = vs.get(axis) or {}
        rows.append({
            "axis": axis, "best": axis == c.get("best"),
            "loco_error": _num(d.get("loco_error")), "floor_ratio": _num(d.get("floor_ratio")),
            "overlap": _num(d.get("overlap")),
            "D": _num(v.get("D")), "q05": _num(v.get("q05")), "q95": _num(v.get("q95")), "p": _num(v.get("p_value")),
            "identifiable": ident.get(axis, None if axis == "epoch" else True),
            "scored": len(d["scored_pipelines"]) if isinstance(d.get("scored_pipelines"), list)
            else d.get("scored_pipelines"),
            "note": str(d.get("note") or ""),
        })
    return rows


# Sentences --------------------------------------------------------------------------------

def collapse_sentence(a: Analysis) -> str | None:
    """The collapse verdict in one sentence (None when there is no collapse test)."""
    c = a.collapse
    if not c:
        return None
    best = c.get("best")
    d = (c.get("vs_epoch") or {}).get(best) or {}
    stats = ""
    if d:
        stats = (f" (D = {fmt(d.get('D'))}, 90% interval {fmt(d.get('q05'))} to {fmt(d.get('q95'))}, "
                 f"p = {fmt_p(d.get('p_value'))})")
    floor = _num(((c.get("axes") or {}).get(best) or {}).get("floor_ratio"))
    floor_txt = ""
    verdict = c.get("verdict")
    if math.isfinite(floor):
        times = f"{floor:,.0f}" if floor >= 100 else f"{floor:.1f}"
        floor_txt = f"; its held-out error is {times} times the seed-noise floor"
        if floor > 2:  # what "beyond the floor" means depends on whether the clock won
            floor_txt += (", so it is less bad than epochs rather than a collapse within noise"
                          if verdict == "clock_better" else ", so no axis collapses the curves within noise")
    if verdict == "clock_better":
        s = f"{best} collapses the memory curves better than epochs{stats}{floor_txt}."
    elif verdict == "epoch_better":
        s = f"Epochs collapse the memory curves better than every clock; the best clock, {best}, loses{stats}."
    elif verdict == "not_identifiable":
        s = "This grid cannot tell the clocks apart from epochs (their axes are equal up to a constant)."
    else:
        s = (f"No clock collapses the memory curves detectably better than epochs; the best axis is {best}"
             f"{stats}{floor_txt}.")
    n, pmin = c.get("n_pipelines"), _num(c.get("min_p_value"))
    if isinstance(n, int) and math.isfinite(pmin) and pmin >= 0.05:
        s += (f" With {n} pipelines the smallest attainable p-value is {pmin:.3g}, so no verdict can be "
              "significant at 0.05.")
    return s


def headline(a: Analysis) -> str:
    """One sentence per verdict group, e.g. 'sgd_low_lr remembers its initialization; adam forgets it.'"""
    groups: dict[str, list[str]] = {}
    for p in a.pipelines:
        groups.setdefault(str(a.summary["pipelines"][p].get("verdict", "?")), []).append(p)
    text = {"remembers": "remember{s} the initialization", "forgets": "forget{s} it",
            "inconclusive": "{are} inconclusive"}
    parts = []
    for v in ("remembers", "forgets", "inconclusive"):
        names = groups.get(v)
        if names:
            one = len(names) == 1
            parts.append(", ".join(names) + " " + text[v].format(s="s" if one else "", are="is" if one else "are"))
    shown = a.delta * (100 if a.is_accuracy else 1)
    unit = ("point" if shown == 1 else "points") if a.is_accuracy else "units"
    return "; ".join(parts) + f" (δ = {shown:g} {unit})."


def spread_sentence(a: Analysis) -> str | None:
    """Which pipeline's metric moves most and least with sigma_w (the verdict alone hides magnitudes)."""
    k, unit = (100.0, "points") if a.is_accuracy else (1.0, "units")
    rows = [(p, a.summary["pipelines"][p].get("spread") or {}) for p in a.pipelines]
    rows = [(p, d) for p, d in rows if math.isfinite(_q(d))]
    if len(rows) < 2:
        return None
    rows.sort(key=lambda r: _q(r[1]))
    (lo_p, lo), (hi_p, hi) = rows[0], rows[-1]

    dg = a.digits

    def one(p: str, d: dict) -> str:
        return f"{p} ({_q(d) * k:.{dg}f} {unit}, 90% interval {_q(d, 'q05') * k:.{dg}f} to {_q(d, 'q95') * k:.{dg}f})"

    return f"The spread over σ_w is largest for {one(hi_p, hi)} and smallest for {one(lo_p, lo)}."


def failures(a: Analysis) -> list[str]:
    """Everything that makes a number in the report less trustworthy; shown in red at the top."""
    out: list[str] = []
    d = a.summary.get("diagnostics") or {}
    flags = d.get("flags")
    if isinstance(flags, list):
        # The analysis checked R-hat, ESS and divergences itself (per pipeline): show its flags.
        out += [f"Sampler: {f}" for f in flags]
        out += _ppc_failures(a)
        return out
    rhat, ess, div = _num(d.get("max_rhat")), _num(d.get("min_ess_bulk")), _num(d.get("divergences"))
    if math.isfinite(rhat) and rhat > RHAT_MAX:
        out.append(f"Sampler: max R-hat is {rhat:.3f} (> {RHAT_MAX}); chains disagree.")
    if math.isfinite(ess) and ess < ESS_MIN:
        out.append(f"Sampler: min bulk ESS is {ess:.0f} (< {ESS_MIN:.0f}); intervals are noisy.")
    if math.isfinite(div) and div > 0:
        out.append(f"Sampler: {int(div)} divergent transition(s); the posterior may be biased.")
    for r in diagnostics_rows(a):
        if math.isfinite(r["rhat"]) and r["rhat"] > RHAT_MAX:
            out.append(f"{r['name']}: R-hat {r['rhat']:.4f} > {RHAT_MAX}.")
        if math.isfinite(r["ess"]) and r["ess"] < ESS_MIN:
            out.append(f"{r['name']}: bulk ESS {r['ess']:.0f} < {ESS_MIN:.0f}.")
        if math.isfinite(r["div"]) and r["div"] > 0:
            out.append(f"{r['name']}: {int(r['div'])} divergent transition(s).")
    return out + _ppc_failures(a)


def _ppc_failures(a: Analysis) -> list[str]:
    out = []
    for r in diagnostics_rows(a):
        for key, label in (("ppc_spread_p", "spread"), ("ppc_sd_p", "seed SD")):
            p = r[key]
            if math.isfinite(p) and not PPC_LOW <= p <= PPC_HIGH:
                out.append(f"{r['name']}: posterior predictive check of the {label} fails (p = {p:.3f}); "
                           "the model does not reproduce the data here.")
    return out


def warnings(a: Analysis) -> list[str]:
    """Data problems that are not fit failures: failed or diverged runs, excluded cells."""
    out: list[str] = []
    if a.cube is not None:
        for p, counts in C.status_counts(a.cube).items():
            bad = {k: v for k, v in counts.items() if k in ("diverged", "failed", "missing") and v}
            if bad:
                out.append(f"{p}: " + ", ".join(f"{v} run(s) {k}" for k, v in bad.items()) + ".")
    for p in a.pipelines:
        v = a.summary["pipelines"][p].get("n_excluded")
        if (n_excluded(v) or 0) > 0:
            out.append(f"{p}: cells excluded from the analysis ({excluded_text(v)}).")
    d = a.summary.get("diagnostics") or {}
    if d.get("retried"):
        out.append(f"The sampler's first fit failed its checks and was rerun (target_accept "
                   f"{d.get('target_accept', '?')}, tune {d.get('tune', '?')}); the diagnostics below are "
                   "those of the rerun.")
    return out


# Sections ---------------------------------------------------------------------------------

SECTIONS = (
    ("summary", "Summary"),
    ("metric", "Metric against σ_w"),
    ("variance", "Variance decomposition"),
    ("training", "Training curves"),
    ("radial", "Radial memory"),
    ("clocks", "Forgetting clocks"),
    ("frequentist", "Frequentist cross-checks"),
    ("diagnostics", "Diagnostics"),
    ("methods", "Methods"),
    ("provenance", "Provenance"),
)

FIGURES = {
    "metric": (F.metric_vs_sigma,),
    "variance": (F.variance_shares, F.spread_forest),
    "training": (F.training_curves, F.tau_scatter),
    "radial": (F.kernel_norms, F.rho_curves),
    "clocks": (F.clock_panels,),
    "diagnostics": (F.ppc_intervals,),
}


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
            if k == "grid":
                grid_text = v if isinstance(v, str) and v.strip() else None
                continue
            text = v if isinstance(v, str) else json.dumps(v, default=str)
            if len(text) > 600:
                text = text[:600] + f"… ({len(text)} characters)"
            attrs.append((str(k), text))
        fingerprint = a.cube.attrs.get("dataset_fingerprint")
    return {
        "analysis_dir": str(a.dir),
        "cube_path": str(a.cube_path) if a.cube_path else a.summary.get("cube"),
        "grid_text": grid_text,
        "attrs": attrs,
        "fingerprint": fingerprint,
        "analyze_command": _command(a.summary.get("command")),
        "report_command": command,
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _skipped(v: Any) -> list[str]:
    """What the analysis skipped: a dict {what: why} or a list of strings / dicts."""
    if isinstance(v, dict):
        return [f"{k}: {why}" for k, why in v.items()]
    if isinstance(v, list):
        return [", ".join(f"{k}: {x}" for k, x in i.items()) if isinstance(i, dict) else str(i) for i in v]
    return [str(v)] if v else []


def _command(v: Any) -> str | None:
    if isinstance(v, list):
        return " ".join(shlex.quote(str(x)) for x in v)
    return str(v) if v else None


def _fallback_name(a: Analysis) -> str:
    """A title without a grid file: the cube's name, or its folder's when the cube is just 'cube.nc'."""
    cube_path = a.cube_path or (Path(a.summary["cube"]) if a.summary.get("cube") else None)
    if cube_path is None:
        return a.dir.name
    if cube_path.stem == "cube" and cube_path.resolve().parent.name:
        return cube_path.resolve().parent.name
    return cube_path.stem


def build_context(a: Analysis, command: str | None = None) -> dict[str, Any]:
    figures: dict[str, list[F.Figure]] = {}
    skipped: dict[str, list[tuple[str, str]]] = {}  # section -> [(figure, why)]
    for section, fns in FIGURES.items():
        figures[section] = []
        for fn in fns:
            try:
                figures[section].append(fn(a))
            except F.Skip as exc:
                skipped.setdefault(section, []).append((fn.__name__.replace("_", " "), str(exc)))
    titles = dict(SECTIONS)
    shown = {s: True for s, _ in SECTIONS}
    for s in FIGURES:
        # A section without any figure is skipped, except the clocks section when the collapse test ran
        # and the diagnostics, which always have their tables.
        if not figures[s] and not (s == "clocks" and a.collapse) and s != "diagnostics":
            shown[s] = False
    section_skips = [(titles[s], "; ".join(sorted({why for _, why in skipped[s]})))
                     for s in FIGURES if not shown[s]]
    figure_skips = [(f"{titles[s]}: {what}", why) for s in FIGURES if shown[s] for what, why in skipped.get(s, [])]
    grid = a.grid() or {}
    name = grid.get("name") or _fallback_name(a)
    d = {k: None for k in ("sampler", "max_rhat", "min_ess_bulk", "divergences", "seconds", "compile_seconds",
                           "sampling_seconds", "retried")}
    d.update(a.summary.get("diagnostics") or {})
    return {
        "title": f"initmem report: {name}",
        "name": name,
        "a": a,
        "summary": a.summary,
        "diag": d,
        "unit": "points" if a.is_accuracy else "units",
        "delta_shown": a.delta * (100 if a.is_accuracy else 1),
        "digits": a.digits,
        "headline": headline(a),
        "spread_sentence": spread_sentence(a),
        "collapse_sentence": collapse_sentence(a),
        "collapse": a.collapse,
        "summary_rows": summary_rows(a),
        "frequentist_rows": frequentist_rows(a),
        "diagnostics_rows": diagnostics_rows(a),
        "collapse_rows": collapse_rows(a),
        "collapse_notes": [str(n) for n in ((a.collapse or {}).get("notes") or [])],
        "failures": failures(a),
        "warnings": warnings(a),
        "notes": a.notes,
        "analysis_skipped": _skipped(a.summary.get("skipped")),
        "figures": figures,
        "sections": [(s, t, shown[s]) for s, t in SECTIONS],
        "section_skips": section_skips,
        "figure_skips": figure_skips,
        "methods": methods_paragraphs(a, _versions()),
        "provenance": _provenance(a, command),
        "rhat_max": RHAT_MAX, "ess_min": ESS_MIN,
        "has_cube": a.cube is not None,
    }


def _environment() -> Environment:
    env = Environment(
        autoescape=select_autoescape(enabled_extensions=("html", "j2", "html.j2"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, fmt_p=fmt_p, sort_key=sort_key)
    return env


def _asset(name: str) -> str:
    return resources.files("initmem.reports").joinpath("templates", name).read_text(encoding="utf-8")


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
    out = Path(out_file) if out_file is not None else Path(analysis_dir) / "report.html"
    write_text(out, render_html(a, command if command is not None else default_command()))
    # The temporary file was private (0600); a report is meant to be shared, so honour the umask.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out, 0o666 & ~umask)
    return out

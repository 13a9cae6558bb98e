"""The report's tables for a paper: LaTeX (booktabs), CSV and Markdown from one table each.

Why one :class:`Table` per result and three writers: the numbers must be the same in the three
files, so each table is built once from the report's own rows (reports/tables.py) and the analysis
records, and only the rendering differs. An interval is one cell (``4.2 [3.1, 5.0]``) in LaTeX and
Markdown and three columns (value, q05, q95) in CSV, so a spreadsheet gets numbers. A table whose
result the analysis folder does not hold is not written: :func:`paper_tables` returns the reason.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from initmem import cube
from initmem import names as N
from initmem.models.family import RowEvidence, expected_false_verdicts, holm_verdicts, summary_rows
from initmem.models.rules import READOUT
from initmem.plot.load import Analysis, num, q
from initmem.reports import tables
from initmem.reports.text import collapse_verdict_words
from initmem.stats.radial import FORGETS as RADIAL_FORGETS
from initmem.stats.radial import KEEPS as RADIAL_KEEPS


@dataclass(frozen=True)
class Interval:
    """A median (or estimate) with its 90% interval."""

    value: float
    lo: float
    hi: float


Cell = str | int | float | Interval | bool | None


@dataclass(frozen=True)
class Column:
    """One column: its CSV name, its header (plain text; ``latex`` overrides it in LaTeX) and decimals.
    ``style`` "p" writes p-values ('<0.001', two significant digits below 0.01); "sig" writes
    ``digits`` significant digits (times that span orders of magnitude)."""

    name: str
    header: str
    digits: int = 2
    latex: str | None = None
    style: str = "fixed"


@dataclass
class Table:
    """One table: file key, caption, columns and rows of cells (one list per row, column order)."""

    key: str
    caption: str
    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)


# Rendering -------------------------------------------------------------------------------------

def _sig_decimals(v: float, digits: int) -> int:
    return max(0, digits - 1 - math.floor(math.log10(abs(v)))) if v != 0 else 0


def _number(v: float, digits: int, style: str = "fixed") -> str:
    if not math.isfinite(v):
        return "—"
    if style == "p":
        if v < 0.001:
            return "<0.001"
        return f"{v:.2g}" if v < 0.01 else f"{v:.3f}"
    if style == "sig":
        return f"{v:.{_sig_decimals(v, digits)}f}"
    return f"{v:.{digits}f}"


def lower_bound_text(v: float, digits: int = 3) -> str:
    """A censored time's lower bound to ``digits`` significant digits, rounded down (103.5 is '> 103', not
    '> 104': a lower bound rounded up claims more than was seen)."""
    if not math.isfinite(v):
        return "censored"
    if 0 < v < 1e-3:    # a tiny clock budget (a small eta^2 / b) in scientific notation, not a run of zeros
        exp = math.floor(math.log10(v))
        mantissa = math.floor(v / 10.0**exp * 10 ** (digits - 1) * (1 + 1e-12)) / 10 ** (digits - 1)
        return f"> {mantissa:.{digits - 1}f}e{exp:+03d}"
    d = _sig_decimals(v, digits)
    return f"> {math.floor(v * 10**d) / 10**d:.{d}f}"


def cell_text(v: Cell, digits: int, style: str = "fixed") -> str:
    """A cell as text (intervals as 'value [lo, hi]', missing numbers as a dash)."""
    if style != "fixed" and isinstance(v, (float, Interval)):
        if isinstance(v, float):
            return _number(v, digits, style)
        if not math.isfinite(v.value):
            return "—"
        if not (math.isfinite(v.lo) and math.isfinite(v.hi)):
            return _number(v.value, digits, style)
        return f"{_number(v.value, digits, style)} [{_number(v.lo, digits, style)}, {_number(v.hi, digits, style)}]"
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, Interval):
        if not math.isfinite(v.value):
            return "—"
        if not (math.isfinite(v.lo) and math.isfinite(v.hi)):
            return _number(v.value, digits)
        return f"{_number(v.value, digits)} [{_number(v.lo, digits)}, {_number(v.hi, digits)}]"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _number(v, digits)
    return str(v)


# LaTeX's special characters, and the Greek letters and symbols the report writes in plain text.
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}
_LATEX_UNICODE = {"σ": r"$\sigma$", "δ": r"$\delta$", "τ": r"$\tau$", "ρ": r"$\rho$", "η": r"$\eta$",
                  "λ": r"$\lambda$", "±": r"$\pm$", "≥": r"$\geq$", "≤": r"$\leq$", "×": r"$\times$",
                  "—": "---", "–": "--", "‖": r"$\|$", "…": r"\ldots{}", "“": "``", "”": "''", "’": "'"}


def latex_escape(text: str) -> str:
    """``text`` as LaTeX source that prints it literally (user strings such as pipeline names)."""
    return "".join(_LATEX_SPECIAL.get(ch) or _LATEX_UNICODE.get(ch) or ch for ch in str(text))


def to_latex(t: Table) -> str:
    """A booktabs ``table`` environment (needs ``\\usepackage{booktabs}``), label ``tab:KEY``."""
    spec = "l" + "r" * (len(t.columns) - 1)
    head = " & ".join(c.latex or latex_escape(c.header) for c in t.columns) + r" \\"
    # "{}" first: a row that began with "[" would be read as the optional argument of the previous "\\"
    body = ["{}" + " & ".join(latex_escape(cell_text(v, c.digits, c.style))
                              for v, c in zip(row, t.columns, strict=True)) + r" \\" for row in t.rows]
    return "\n".join([
        "% initmem export: needs \\usepackage{booktabs}",
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        rf"\caption{{{latex_escape(t.caption)}}}",
        rf"\label{{tab:{t.key}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        head,
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
        "",
    ])


def _md_cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", r"\|").strip()


def to_markdown(t: Table) -> str:
    """A pipe table (GitHub / pandoc) with the caption above it."""
    lines = [f"Table: {_md_cell(t.caption)}", "",
             "| " + " | ".join(_md_cell(c.header) for c in t.columns) + " |",
             "| " + " | ".join("---" if i == 0 else "---:" for i in range(len(t.columns))) + " |"]
    lines += ["| " + " | ".join(_md_cell(cell_text(v, c.digits, c.style)) for v, c in zip(row, t.columns, strict=True))
              + " |" for row in t.rows]
    return "\n".join(lines) + "\n"


def to_csv(t: Table) -> str:
    """Numbers as numbers: an interval column becomes NAME, NAME_q05, NAME_q95; missing is empty."""
    has_interval = [any(isinstance(r[i], Interval) for r in t.rows) for i in range(len(t.columns))]
    header: list[str] = []
    for c, iv in zip(t.columns, has_interval, strict=True):
        header += [c.name, f"{c.name}_q05", f"{c.name}_q95"] if iv else [c.name]

    def plain(v: Cell) -> Any:
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            return ""
        return v

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in t.rows:
        out: list[Any] = []
        for v, iv in zip(row, has_interval, strict=True):
            if iv:
                out += ([plain(v.value), plain(v.lo), plain(v.hi)] if isinstance(v, Interval) else [plain(v), "", ""])
            else:
                out.append(plain(v))
        w.writerow(out)
    return buf.getvalue()


# The tables ------------------------------------------------------------------------------------

def _iv(d: Any, k: float = 1.0) -> Interval:
    return Interval(q(d) * k, q(d, "q05") * k, q(d, "q95") * k)


def _reading(a: Analysis) -> str:
    """The caption's reading of the verdict words, the error ratio and the survivorship mark (the same in every
    table that shows the verdict)."""
    ratio = (" The error ratio is the error rate (1 - accuracy) at one extreme sigma_w level over that at the other, "
             "larger over smaller, from the per-level estimates the spread is read from: 'forgets' reads 'memory below "
             "delta', and near the ceiling a spread below delta can still be a large relative change in the error "
             "rate." if a.is_accuracy else " 'forgets' reads 'memory below delta'.")
    return ratio + (f" A verdict marked '{tables.SURVIVORSHIP_MARK}' changes when the runs the interpolation gate left "
                    "out are put back at their final value, the spread moving towards or across delta; it is not "
                    "counted as decided.")


def _family_rows(a: Analysis) -> dict[str, RowEvidence]:
    """The rows of the family (models/family.py), a verdict the survivorship check overturns entered as undecided:
    it is not counted as decided, so Holm keeps nothing of it and the expected false verdicts leave it out."""
    rows = summary_rows(a.summary)
    return {p: replace(r, verdict=N.UNDECIDED) if a.pipe(p).survivorship_overturned else r for p, r in rows.items()}


def verdict_table(a: Analysis) -> Table:
    """Per pipeline: the verdict, the spread with its interval, both probabilities and the paired check."""
    unit = a.unit
    paired = {r["name"]: r for r in tables.assumption_rows(a)}
    t = Table("verdicts", f"Verdict per pipeline: the spread over sigma_w of the expected {a.metric} ({unit}, "
              f"posterior median and 90% interval) against delta = {a.delta * a.scale:g} "
              f"{'point' if a.is_accuracy and a.delta * a.scale == 1 else unit}, the posterior "
              "probabilities that it exceeds or stays below delta, and the paired check of 'remembers' (the ordered "
              "test of the seeds' paired differences: the extreme sigma_w pair first, then the peak contrast of the "
              "grid's middle level, then the other pairs), the "
              "p-value of the intersection-union test of 'forgets' (every pair of levels within +-delta), and the "
              "route that decided the verdict (the model, the ordered paired test, the intersection-union test)."
              + _reading(a),
              [Column("pipeline", "Pipeline"), Column("verdict", "Verdict"),
               Column("spread", f"Spread ({unit})", a.digits),
               Column("error_ratio", "Error ratio (extreme σ_w)", 2),
               Column("p_gt_delta", "P(spread > δ)", 3), Column("p_lt_delta", "P(spread < δ)", 3),
               Column("paired_p", "Paired p", 3, style="p"), Column("paired_supports", "Paired check"),
               Column("iut_p", "IUT p", 3, style="p"), Column("decided_by", "Decided by"),
               Column("memory_share", "Memory share", 2)])
    for p in a.pipelines:
        info = a.pipe(p)
        r = paired.get(p, {})
        ok = r.get("paired_ok")
        eq = info.equivalence_check
        rule = info.rule if info.rule and info.rule != "none" else None
        t.rows.append([p, tables.marked_verdict(info), _iv(info.spread, a.scale), tables.error_ratio(a, info),
                       num(info.p_spread_gt_delta),
                       num(info.p_spread_lt_delta), num(r.get("paired_p")),
                       None if ok is None else ("supports" if ok else "does not support"),
                       num(eq.p_value) if eq is not None else None, rule, _iv(info.memory_share)])
    return t


RADIAL_AGREES = {(N.REMEMBERS, RADIAL_KEEPS), (N.FORGETS, RADIAL_FORGETS)}


def _agreement(verdict: str, radial: str | None) -> str | None:
    """Whether the accuracy verdict and the radial verdict say the same; None where either is undecided."""
    if verdict not in (N.REMEMBERS, N.FORGETS) or radial not in (RADIAL_KEEPS, RADIAL_FORGETS):
        return None
    return "agree" if (verdict, radial) in RADIAL_AGREES else "disagree"


def _forgetting_time(a: Analysis, pipe: str, axis: str | None) -> Interval | str | None:
    """The pipeline's forgetting time on ``axis`` (median and 90% interval), "not within the run" when censored."""
    t = a.pipe(pipe).forgetting_time.get(axis) if axis else None
    if t is None:
        return None
    if t.censored or t.median is None:
        return "not within the run"
    return Interval(float(t.median), float(num(t.q05)), float(num(t.q95)))


def atlas_table(a: Analysis) -> Table:
    """One row per pipeline (a recipe of the memory atlas, docs/atlas.md): the accuracy verdict with its spread,
    the radial verdict, whether the two agree, the forgetting time on the best clock, the seeds spent, and the
    verdict under Holm's step-down across the rows (models/family.py)."""
    rows = _family_rows(a)
    holm = holm_verdicts(rows)
    n_decided = sum(r.verdict in (N.REMEMBERS, N.FORGETS) for r in rows.values())
    c = a.collapse
    axis = c.best if c is not None and c.best and c.best != cube.EPOCH else (cube.EPOCH if c is not None else None)
    seq = a.summary.sequential
    alpha = next(iter(rows.values())).spending.alpha if rows else 0.05
    t = Table("atlas", f"Initialization memory per recipe: the accuracy verdict (spread over sigma_w of the expected "
              f"{a.metric}, {a.unit}, posterior median and 90% interval, against delta = {a.delta * a.scale:g} "
              f"{'point' if a.is_accuracy and a.delta * a.scale == 1 else a.unit}); the radial verdict (the slope of "
              "the final kernel norms on sigma_w, docs/radial-verdict.md) and whether the two agree; the forgetting "
              f"time on {'the clock that lines the recipes up best, ' + axis if axis else 'no clock (no curves)'} "
              "(— where that clock does not move for the recipe); the seeds per cell spent; and the verdict under "
              "Holm's step-down across the rows. Each row's "
              f"verdict keeps its own false-verdict rate at alpha = {alpha:g}; over the {n_decided} decided rows "
              f"the expected number of false verdicts is at most {expected_false_verdicts(rows):.2f}, and the "
              "Holm column keeps the chance of any false verdict in the table near alpha (models/family.py)."
              + _reading(a),
              [Column("recipe", "Recipe"), Column("verdict", "Verdict"),
               Column("spread", f"Spread ({a.unit})", a.digits),
               Column("error_ratio", "Error ratio (extreme σ_w)", 2), Column("radial", "Radial verdict"),
               Column("agreement", "Agreement"),
               Column("forgetting_time", f"Forgetting time ({axis or 'none'})", 3, style="sig"),
               Column("seeds", "Seeds"), Column("holm", "Verdict under Holm")])
    for p in a.pipelines:
        info = a.pipe(p)
        radial = info.radial.verdict if info.radial is not None else None
        seeds = seq.seeds_used.get(p, info.n_seed) if seq is not None else info.n_seed
        shown = str(rows[p].verdict) if p in rows else str(info.verdict)
        t.rows.append([p, tables.marked_verdict(info), _iv(info.spread, a.scale), tables.error_ratio(a, info), radial,
                       _agreement(shown, radial),
                       _forgetting_time(a, p, axis), int(seeds), holm[p]])
    return t


def variance_table(a: Analysis) -> Table:
    """Per pipeline: the variance shares (sigma_w level, seed, residual) and the REML SDs."""
    if not any(a.pipe(p).shares is not None for p in a.pipelines):
        raise LookupError("summary.json holds no variance shares")
    freq = {r["name"]: r for r in tables.frequentist_rows(a)}
    t = Table("variance", "Variance decomposition per pipeline: posterior median shares (90% interval) of the "
              "sigma_w-level effects (initialization memory), the seed effects and the residual, and the REML "
              f"standard deviations of the same components ({a.unit}).",
              [Column("pipeline", "Pipeline"), Column("share_sigma_w", "σ_w share"), Column("share_seed", "Seed share"),
               Column("share_residual", "Residual share"), Column("reml_sd_sigma_w", f"REML σ_w SD ({a.unit})"),
               Column("reml_sd_seed", f"REML seed SD ({a.unit})"),
               Column("reml_sd_residual", f"REML residual SD ({a.unit})")])
    for p in a.pipelines:
        sh = a.pipe(p).shares
        f = freq.get(p, {})
        t.rows.append([p, _iv(sh.sigma) if sh else None, _iv(sh.seed) if sh else None,
                       _iv(sh.residual) if sh else None, num(f.get("reml_sigma")), num(f.get("reml_seed")),
                       num(f.get("reml_resid"))])
    return t


def interpolation_table(a: Analysis) -> Table:
    rows = tables.interpolation_rows(a)
    if not rows:
        raise LookupError("the analysis records no interpolation counts (the table did not record tau_interp, "
                          "or summary.json has no interpolation entries)")
    t = Table("interpolation", "Interpolation per pipeline: runs whose training accuracy reached the interpolation "
              "threshold, per sigma_w level, and the levels without any such run.",
              [Column("pipeline", "Pipeline"), Column("gate", "Gate"), Column("n_interpolated", "Interpolated"),
               Column("n_cells", "Runs"), Column("by_sigma_w", "Per σ_w (level: runs)"),
               Column("left_out", "Levels without interpolation")])
    for r in rows:
        t.rows.append([r["name"], r["gate"], int(r["n_interpolated"]), int(r["n_cells"]),
                       "; ".join(f"{k}: {n}" for k, n in r["by_sigma_w"]), ", ".join(r["left_out"]) or "none"])
    return t


def collapse_table(a: Analysis) -> Table:
    rows = tables.collapse_rows(a)
    if not rows:
        raise LookupError("the analysis folder holds no collapse.json (the cube has no training curves)")
    c = a.collapse
    adj = {"holm": "Holm", "max_statistic": "Westfall-Young max-statistic"}.get(c.adjustment or "", "no")
    best_axis = ("none (no clock was compared with epochs)" if not c.best else
                 "epochs (no clock gained on epochs)" if c.best == cube.EPOCH else c.best)
    t = Table("collapse", f"Collapse test on the {c.memory} memory curves (leave one pipeline out, "
              f"{c.n_pipelines} pipelines): the gain D over epochs with its 90% cluster-bootstrap interval, the "
              f"sign-flip permutation p-value and the p-value adjusted across the clocks tried ({adj} adjustment), "
              f"the held-out error and its ratio to the seed-noise floor (about 1: collapsed within noise). "
              f"Verdict: {collapse_verdict_words(c.verdict)}; best axis: {best_axis}.",
              [Column("axis", "Axis"), Column("D", "D vs epoch", 3), Column("p", "p", 3, style="p"),
               Column("p_adjusted", "p adj.", 3, style="p"),
               Column("heldout_error", "Held-out error", 3), Column("floor_ratio", "Floor ratio", 2),
               Column("identifiable", "Identifiable"), Column("best", "Best")])
    for r in rows:
        ref = r["axis"] == cube.EPOCH
        t.rows.append([r["axis"], None if ref else Interval(r["D"], r["q05"], r["q95"]), None if ref else r["p"],
                       None if ref else r["p_adj"], r["loco_error"], r["floor_ratio"],
                       None if ref or r["identifiable"] is None else bool(r["identifiable"]), bool(r["best"])])
    return t


def forgetting_times_table(a: Analysis) -> Table:
    c = a.collapse
    if c is None or not c.forgetting_times:
        raise LookupError("collapse.json holds no forgetting times")
    axes = list(c.forgetting_times)
    pipes = list(dict.fromkeys(p for e in c.forgetting_times.values() for p in e.per_pipeline))
    t = Table("forgetting_times", "Forgetting times per pipeline and time axis: median and 90% interval of when the "
              "memory curve has fallen far enough, in each axis's units; '>' marks a censored time (not reached "
              "within the budget: a lower bound). The last row is each axis's spread, the SD across pipelines of "
              "the log forgetting time (small: the axis lines the pipelines up).",
              [Column("pipeline", "Pipeline"), *[Column(ax, ax, 3, style="sig") for ax in axes]])
    for p in pipes:
        row: list[Cell] = [p]
        for ax in axes:
            ft = c.forgetting_times[ax].per_pipeline.get(p)
            if ft is None:
                row.append(None)
            elif ft.censored:
                bound = next((v for v in (q(ft), (ft.model_extra or {}).get("budget")) if v is not None
                              and math.isfinite(num(v))), None)
                row.append(lower_bound_text(num(bound)) if bound is not None else "censored")
            else:
                row.append(_iv(ft))
        t.rows.append(row)
    t.rows.append(["spread (SD of log time)", *[num(c.forgetting_times[ax].spread) for ax in axes]])
    return t


def exponents_table(a: Analysis) -> Table:
    c = a.collapse
    ex = (c.exponents or {}) if c is not None else {}
    if "exponents" not in ex:
        raise LookupError(ex.get("skipped") or "collapse.json holds no clock exponents (the exponent model did not "
                                               "run)")
    t = Table("exponents", "Fitted exponents of the steps to forget (Bayesian censored regression on per-seed "
              "forgetting times): posterior median and 90% interval of each exponent, and for each named clock the "
              f"probability that its exponents hold within the tolerance ({len(ex.get('pipelines', []))} pipelines).",
              [Column("term", "Term"), Column("estimate", "Exponent / probability", 2)])
    for name, v in ex["exponents"].items():
        t.rows.append([name, Interval(num(v.get("median")), num(v.get("q05")), num(v.get("q95")))])
    for name, v in (ex.get("clocks") or {}).items():
        tol = v.get("tolerance")
        t.rows.append([f"P({name} within ±{num(tol):g})" if tol is not None else f"P({name})",
                       num(v.get("probability"))])
    return t


def crossed_table(a: Analysis) -> Table:
    """Per pipeline of a crossed seed design: the draw verdict beside the scale verdict, SD_init, SD_data and SD_resid
    with their 90% confidence intervals, the init share, and the Bayesian posterior of SD_init and P(SD_init >
    margin)."""
    rows = tables.crossed_rows(a)
    if not rows:
        raise LookupError("the cube has no crossed seed design (seeds: {init: [...], data: [...]})")
    block = a.summary.crossed
    unit, d = a.unit, a.digits + 1
    # The draw verdict's rule is its row of the rule table (models/rules.py, READOUTS), as the Methods text states it.
    rule = (READOUT["draw"].rule(block.alpha, f"{block.margin * a.scale:g} {unit}") + "; "
            if block.margin is not None else "No margin on SD_init was set, so there is no draw verdict; ")
    t = Table("crossed", f"The memory of the initial draw ({block.n_init} init x {block.n_data} data seeds, crossed): "
              f"per pipeline, the SD of the init seed's effect on the final {a.metric} (SD_init), of the data "
              f"order's (SD_data) and of the rest (SD_resid), within sigma_w levels and pooled over them, in {unit} "
              "with 90% confidence intervals; the init share SD_init^2 / (SD_init^2 + SD_data^2 + SD_resid^2); the "
              "Bayesian crossed model's posterior median and 90% interval of SD_init and its P(SD_init > margin). "
              + rule + "the scale verdict is the memory of sigma_w.",
              [Column("pipeline", "Pipeline"), Column("draw_verdict", "Draw verdict"),
               Column("scale_verdict", "Scale verdict"), Column("sd_init", f"SD_init ({unit})", d),
               Column("sd_data", f"SD_data ({unit})", d), Column("sd_resid", f"SD_resid ({unit})", d),
               Column("init_share", "Init share", 2), Column("bayes_sd_init", f"Bayes SD_init ({unit})", d),
               Column("p_sd_init_gt_margin", "P(SD_init > margin)", 3)])
    for r in rows:
        t.rows.append([r["name"], r["draw_verdict"], r["scale_verdict"],
                       *[Interval(r[f], r[f"{f}_lo"], r[f"{f}_hi"]) for f in ("sd_init", "sd_data", "sd_resid",
                                                                               "init_share")],
                       Interval(r["b_sd_init"], r["b_sd_init_lo"], r["b_sd_init_hi"]), r["p_gt_margin"]])
    return t


TABLES: tuple[Callable[[Analysis], Table], ...] = (verdict_table, atlas_table, variance_table, interpolation_table,
                                                  collapse_table, forgetting_times_table, exponents_table,
                                                  crossed_table)


def paper_tables(a: Analysis) -> tuple[list[Table], dict[str, str]]:
    """The tables this analysis can fill, and for the others (by key) why they are not written."""
    out, skipped = [], {}
    for build in TABLES:
        try:
            out.append(build(a))
        except LookupError as exc:
            skipped[build.__name__.removesuffix("_table")] = str(exc)
    return out, skipped


__all__ = ["Column", "Interval", "TABLES", "Table", "cell_text", "latex_escape", "lower_bound_text", "paper_tables",
           "to_csv", "to_latex", "to_markdown"]

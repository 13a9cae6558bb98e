"""The report's sentences: headline, collapse verdict, forgetting times, and the problems shown at the top.

Each sentence is assembled from the analysis folder's records (docs/analysis-folder.md) so that
it changes when the analysis changes; the template escapes every string it is given.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube as C
from initmem import names as N
from initmem.errors import option
from initmem.names import ALPHA
from initmem.plot.clocks import exponent_text
from initmem.plot.load import Analysis, failed_checks, num, q, seed_design
from initmem.reports.tables import diagnostics_rows, excluded_text
from initmem.results.records import sampler_flags

EPOCH_AXIS = C.EPOCH


# Formatting filters ---------------------------------------------------------------------

def fmt(v: Any, digits: int = 2) -> str:
    f = num(v)
    return f"{f:.{digits}f}" if math.isfinite(f) else "—"


def fmt_p(v: Any) -> str:
    f = num(v)
    if not math.isfinite(f):
        return "—"
    if f < 0.001:
        return "< 0.001"
    return f"{f:.3f}" if f < 0.1 else f"{f:.2f}"


def fmt_sig(v: Any, digits: int = 3, zeros: bool = False) -> str:
    """A number at ``digits`` significant digits (thresholds and Monte Carlo errors: 0.963, 0.00123), so a
    threshold such as 1 - 0.03659 reads 0.963, not 0.96341; ``zeros`` keeps trailing zeros (1.00, 0.250), so a
    column of probabilities reads at one precision."""
    f = num(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:#.{digits}g}".rstrip(".") if zeros else f"{f:.{digits}g}"


def fmt_median(v: Any) -> str:
    """A median of whole numbers (epochs): whole, or with its .5 (28.5 is not 28)."""
    f = num(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:.0f}" if f == round(f) else f"{f:.1f}"


def sort_key(v: Any) -> str:
    """The value a sortable cell sorts by (empty for missing, so they go last)."""
    f = num(v)
    return repr(f) if math.isfinite(f) else ""


# Sentences --------------------------------------------------------------------------------

def collapse_sentence(a: Analysis) -> str | None:
    """The collapse test in words (None when there is none): whether any clock beat epochs, whether the
    curves collapse within noise on the best axis, and what that leaves a reader to try.

    Every number is the test's own (collapse.json): D with its interval and p-values, and the
    held-out error relative to the seed-noise floor (about 1: collapsed within noise)."""
    c = a.collapse
    if c is None:
        return None
    best = c.best
    d = c.vs_epoch.get(best) if best else None
    stats = ""
    if d is not None:
        adj = (f", adjusted p = {fmt_p(d.p_adjusted)} ({adjustment_words(c.adjustment)} over the clocks tried)"
               if d.p_adjusted is not None else "")
        stats = (f" (D = {fmt(d.D)}, 90% interval {fmt(d.q05)} to {fmt(d.q95)}, "
                 f"p = {fmt_p(d.p_value)}{adj})")
    verdict = c.verdict
    if verdict == "clock_better":
        s = f"{best} collapses the memory curves better than epochs{stats}"
    elif verdict == "epoch_better":
        clocks = {k: num(v.D) for k, v in c.vs_epoch.items() if k not in (C.EPOCH, C.STEP) and math.isfinite(num(v.D))}
        top = max(clocks, key=clocks.get) if clocks else None
        d = c.vs_epoch.get(top) if top else None
        stats = (f" (D = {fmt(d.D)}, 90% interval {fmt(d.q05)} to {fmt(d.q95)}, p = {fmt_p(d.p_value)})"
                 if d is not None else "")
        s = ("Epochs collapse the memory curves better than every clock"
             + (f"; the best clock, {top}, loses{stats}" if top else ""))
    elif verdict == "not_identifiable":
        s = "This grid cannot tell the clocks apart from epochs (their axes are equal up to a constant)"
    elif not best:
        s = "No clock collapses the memory curves detectably better than epochs: no clock was compared with epochs"
    elif best == EPOCH_AXIS:
        s = "No clock collapses the memory curves detectably better than epochs; no clock gained on epochs"
    else:
        s = f"No clock collapses the memory curves detectably better than epochs; the best axis is {best}{stats}"
    s += _floor_clause(a) + "."
    advice = _next_step(a)
    note = min_p_note(a)
    return " ".join(x for x in (s, advice, note) if x)


ADJUSTMENT_WORDS = {"holm": "Holm's correction", "max_statistic": "Westfall-Young max-statistic correction"}
COLLAPSE_VERDICT_WORDS = {"clock_better": "a clock collapses the curves better than epochs",
                          "epoch_better": "epochs collapse the curves better than every clock",
                          "no_difference": "no difference", "not_identifiable": "clocks not identifiable"}


def adjustment_words(adjustment: str | None) -> str:
    """The multiplicity adjustment in words ('unadjusted' when none)."""
    return ADJUSTMENT_WORDS.get(adjustment, adjustment) if adjustment else "unadjusted"


def collapse_verdict_words(verdict: str | None) -> str:
    """A collapse verdict (clock_better, no_difference, ...) in words."""
    return COLLAPSE_VERDICT_WORDS.get(verdict, verdict) if verdict else "no verdict"


def best_words(best: str | None) -> str:
    """The best axis, or what its absence means: no clock was compared with epochs."""
    return best if best else "none (no clock was compared with epochs)"


def floor_informative(a: Analysis) -> bool:
    """Whether the held-out error's ratio to the seed-noise floor says how well the curves collapse.
    Not on radial curves with seeds paired across sigma_w: there the floor is tiny and every axis sits
    hundreds of times above it (docs/clocks-and-collapse.md, "The score")."""
    c = a.collapse
    return not (c is not None and str(c.memory).startswith("radial") and seed_design(a) != C.SEED_INDEPENDENT)


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.1f}"


def _floor_clause(a: Analysis) -> str:
    """Whether the best axis collapses the curves within noise, in the test's numbers."""
    c = a.collapse
    score = c.axes.get(c.best) if c.best else None
    floor = num(score.floor_ratio) if score is not None else math.nan
    if not math.isfinite(floor):
        return ""
    times = _times(floor)
    ep = c.axes.get(EPOCH_AXIS)
    fr_e = num(ep.floor_ratio) if ep is not None else math.nan
    if floor <= FLOOR_COLLAPSED:
        return (f"; its held-out error is {times} times the seed-noise floor, so on {c.best} the curves collapse "
                "within noise")
    if not floor_informative(a):
        return (f"; its held-out error is {times} times the seed-noise floor, but with seeds paired across σ_w that "
                "floor is tiny on radial curves and every axis sits far above it, so the ratio does not say whether "
                "the curves collapse")
    share = (f"{floor / fr_e:.0%} of epochs' error, " if c.verdict == "clock_better" and math.isfinite(fr_e)
             and fr_e > 0 and floor <= 0.5 * fr_e else "")
    where = f"on {c.best}" if c.verdict == "clock_better" or not _all_clocks_above_floor(a) else "on any clock tried"
    return (f"; its held-out error is still {share}{times} times the seed-noise floor, so the curves do not "
            f"collapse within noise {where}")


def _all_clocks_above_floor(a: Analysis) -> bool:
    """Every clock scored (epochs and steps aside) sits above the collapsed-within-noise bar."""
    ratios = [num(s.floor_ratio) for ax, s in a.collapse.axes.items() if ax not in (C.EPOCH, C.STEP)]
    ratios = [r for r in ratios if math.isfinite(r)]
    return bool(ratios) and all(r > FLOOR_COLLAPSED for r in ratios)


FLOOR_COLLAPSED = 2.0  # held-out error within twice the seed-noise floor: collapsed within noise


def _next_step(a: Analysis) -> str | None:
    """What a reader can try when the curves do not collapse within noise, from what this analysis ran:
    the other memory curve, pipelines that separate the clocks, the forgetting times."""
    c = a.collapse
    score = c.axes.get(c.best) if c.best else None
    floor = num(score.floor_ratio) if score is not None else math.nan
    if c.verdict != "not_identifiable" and (not math.isfinite(floor) or floor <= FLOOR_COLLAPSED
                                            or not floor_informative(a)):
        return None
    if c.verdict == "clock_better":
        conclude = (f"Read it as: {c.best} orders forgetting better than epochs, but part of forgetting follows "
                    "something it does not count")
    elif c.verdict == "not_identifiable":
        conclude = "Read it as: this grid cannot say which clock is the time axis of forgetting"
    elif _all_clocks_above_floor(a):
        conclude = "Read it as: none of the clocks tried collapses the curves within noise on this grid"
    else:
        conclude = f"Read it as: {best_words(c.best)} does not collapse the curves within noise on this grid"
    tries = []
    other = "functional" if c.memory.startswith("radial") else "radial"
    tries.append(f"the {other} memory curve ({option('memory', other)})")
    if c.verdict == "not_identifiable" or not any(c.identifiable.get(x) for x in c.identifiable if x != EPOCH_AXIS):
        tries.append("pipelines that vary the learning rate, weight decay and batch size, so the clocks separate")
    if c.forgetting_times:
        tries.append("the forgetting times below, which a clock can line up without collapsing whole curves")
    return conclude + "; to look further, try " + _or(tries) + "."


def _or(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def forgetting_sentence(a: Analysis) -> str | None:
    """The forgetting-time result in words: spread on epochs vs the lined-up clock, the exponents, the sides."""
    c = a.collapse
    if c is None or not c.forgetting_times:
        return None
    ft = c.forgetting_times
    out = []
    ep = q(ft[C.EPOCH], "spread") if C.EPOCH in ft else math.nan
    cand = {k: q(v, "spread") for k, v in ft.items() if k not in (C.EPOCH, C.STEP)
            and np.isfinite(q(v, "spread")) and v.n_pipelines - v.n_censored >= 3}
    if np.isfinite(ep) and cand:
        lined = min(cand, key=cand.get)
        out.append(f"The pipelines' forgetting times spread {math.exp(ep):.1f}-fold (SD of log {ep:.2f}) in epochs "
                   f"but {math.exp(cand[lined]):.1f}-fold ({cand[lined]:.2f}) on {lined} "
                   f"({ft[lined].n_pipelines} pipelines, {ft[lined].n_censored} censored).")
    ex = c.exponents or {}
    if "exponents" in ex:
        probs = ", ".join(f"{k} {v['probability']:.2f}" for k, v in ex.get("clocks", {}).items())
        tol = next((v["tolerance"] for v in ex.get("clocks", {}).values()), None)
        out.append(f"Steps to forget scale as {exponent_text(ex)} (90% intervals, {len(ex.get('pipelines', []))} "
                   f"pipelines); the probability that a named clock's exponents hold within ±{tol:g}: {probs}.")
    for side, e in (c.sides or {}).items():
        if "skipped" in e:
            continue
        where = "above" if side.endswith("above") else "below"
        lined = e.get("lined_up_by")
        ref = (c.model_extra or {}).get("ref_sigma_w") or 1.0
        side_best = e.get("best")
        best_text = ("no clock was compared with epochs" if not side_best else
                     "no clock gained on epochs" if side_best == EPOCH_AXIS else f"best {side_best}")
        out.append(f"{where.capitalize()} σ_w = {ref:g}: {collapse_verdict_words(e.get('verdict'))} ({best_text})"
                   + (f", times lined up by {lined}." if lined else
                      ", too few pipelines forgot within their budget to line up."))
    return " ".join(out).strip() or None




def min_p_note(a: Analysis) -> str | None:
    """With few pipelines the permutation test cannot reach 0.05: say so instead of 'no difference'."""
    c = a.collapse
    if c is None:
        return None
    pmin = num(c.min_p_possible)
    if not math.isfinite(pmin) or pmin <= ALPHA:
        return None
    n = c.n_pipelines
    return (f"With {n} pipelines no verdict can be significant: the smallest attainable p-value is {pmin:.3g} "
            f"(above {ALPHA:g}).")


# Verdict groups in the order a reader looks for them; each word from initmem/names.py.
VERDICT_PHRASES = {N.REMEMBERS: "remember{s} the initialization", N.FORGETS: "forget{s} it (memory below δ)",
                   N.UNDECIDED: "{are} undecided"}


def interpolation_recorded(a: Analysis) -> bool | None:
    """Does the data say which runs interpolated? False for a cube without ``tau_interp`` (an
    imported table that did not record it), None when the cube is not available."""
    if a.cube is None:
        return None
    return a.cube_has(C.TAU_INTERP)


NOT_RECORDED = "interpolation was not recorded in this table (no tau_interp), so the verdicts use every finished run"


def delta_words(a: Analysis) -> str:
    """delta in the unit the report speaks in: '1 point', '0.5 points', '0.02 units'."""
    shown = a.delta * a.scale
    unit = ("point" if shown == 1 else "points") if a.is_accuracy else "units"
    return f"{shown:g} {unit}"


def headline(a: Analysis) -> str:
    """The report's first sentence: which pipelines remember, forget or leave undecided, against what.

    One clause per verdict group (remembers, forgets, undecided, in that order; largest spread first
    within a group), an undecided pipeline flagged borderline named so, a verdict the survivorship check overturns
    among the undecided with its word, then what the verdict measures:
    'sgd remembers the initialization; adam forgets it (memory below δ) (spread of the expected
    selected_test_acc over σ_w, against δ = 1 point).' The numbers are in the table under it, so the
    sentence holds none but delta: a reader sees the answer first and its size one line lower.
    """
    groups: dict[str, list[str]] = {}
    for p in sorted(a.pipelines, key=lambda p: -_finite_or(q(a.pipe(p).spread), -math.inf)):
        info = a.pipe(p)
        flag = f" ({N.BORDERLINE})" if info.borderline and info.verdict == N.UNDECIDED else ""
        if info.survivorship_overturned:   # not counted as decided (results/records.py)
            groups.setdefault(N.UNDECIDED, []).append(f"{p} ({info.verdict!s} overturned by survivorship)")
            continue
        groups.setdefault(str(info.verdict), []).append(p + flag)
    phrases = {**VERDICT_PHRASES, **{v: "{are} " + v for v in groups if v not in VERDICT_PHRASES}}
    parts = []
    for v, text in phrases.items():
        names = groups.get(v)
        if names:
            one = len(names) == 1
            parts.append(_and(names) + " " + text.format(s="s" if one else "", are="is" if one else "are"))
    if not parts:
        return f"No pipeline has a verdict (spread of the expected {a.metric} over σ_w, against δ = {delta_words(a)})."
    return "; ".join(parts) + f" (spread of the expected {a.metric} over σ_w, against δ = {delta_words(a)})."


def headline_note(a: Analysis) -> str | None:
    """Which runs the headline's verdicts rest on, in one line under its table: how many interpolated and
    whether only those count, or that the table did not record interpolation (None: nothing recorded)."""
    if interpolation_recorded(a) is False:
        return NOT_RECORDED[0].upper() + NOT_RECORDED[1:] + "."
    interp = [a.pipe(p).interpolation for p in a.pipelines]
    if not interp or any(i is None for i in interp):
        return None
    n_int, n_all = sum(i.n_interpolated for i in interp), sum(i.n_cells for i in interp)
    return (f"{n_int} of {n_all} runs interpolated; the verdicts use "
            + ("only those, each at its best checkpoint at or after interpolation." if interp[0].gate == "interpolated"
               else "every run (gate all), interpolated or not."))


def not_in_input_sentence(absent: list[tuple[str, str]]) -> str | None:
    """The sections and figures absent by design, once: 'Training curves, Radial memory and Forgetting clocks
    (the cube has no per-epoch curves); Pipeline settings (the cube has no per-pipeline training settings)'.
    ``absent`` holds (title, what the input lacks) in page order; titles that lack the same thing share a clause.
    None when nothing is absent."""
    by_reason: dict[str, list[str]] = {}
    for title, what in absent:
        by_reason.setdefault(what, []).append(title)
    if not by_reason:
        return None
    return "; ".join(f"{_and(titles)} (the cube has no {what})" for what, titles in by_reason.items())


def _finite_or(x: float, default: float) -> float:
    return x if math.isfinite(x) else default


def crossed_sentence(a: Analysis) -> str | None:
    """The draw verdicts of a crossed design in one sentence (which pipelines keep, forget or leave undecided their
    initial draw, at which margin); None for an analysis without a crossed block."""
    block = getattr(a.summary, "crossed", None)
    if block is None or not block.pipelines:
        return None
    if block.margin is None:
        return (f"Crossed seeds ({block.n_init} init x {block.n_data} data seeds): no draw verdict, since no margin "
                f"on SD_init was set ({option('draw_margin')}, in the metric's units).")
    by: dict[str, list[str]] = {}
    for p, e in block.pipelines.items():
        by.setdefault(str(e.draw_verdict), []).append(p)
    words = {"keeps its draw": ("keeps its draw", "keep their draw"),
             "forgets its draw": ("forgets its draw", "forget their draw"),
             "undecided": ("is undecided", "are undecided")}
    parts = []
    for verdict, (one, many) in words.items():
        names = by.get(verdict, [])
        if names:
            parts.append(f"{_and(names)} {one if len(names) == 1 else many}")
    margin = block.margin * a.scale
    unit = a.unit if not (a.is_accuracy and margin == 1) else "point"
    return (f"Crossed seeds ({block.n_init} init x {block.n_data} data seeds): " + "; ".join(parts)
            + f" (margin {margin:g} {unit} on SD_init, alpha = {block.alpha:g}).")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def interpolation_sentence(a: Analysis) -> str | None:
    """Which runs the verdicts rest on: the gate, and the levels left out for lack of interpolation."""
    gate = a.summary.gate or next((a.pipe(p).interpolation.gate for p in a.pipelines
                                   if a.pipe(p).interpolation is not None), None)
    if gate is None:
        return None
    if interpolation_recorded(a) is False:
        return NOT_RECORDED[0].upper() + NOT_RECORDED[1:] + " (gate: all)."
    if gate == "interpolated":
        s = ("The verdicts use only runs that reached the interpolation threshold (gate: interpolated); "
             "a run that never fit its training set says nothing about what training forgets.")
    else:
        s = "The verdicts use every finished run, interpolating or not (gate: all)."
    left = [f"{p} ({', '.join(f'{x:.3g}' for x in a.pipe(p).interpolation.levels_without_interpolation)})"
            for p in a.pipelines
            if a.pipe(p).interpolation is not None and a.pipe(p).interpolation.levels_without_interpolation]
    if left:
        verb = "were left out" if gate == "interpolated" else "are included although no run interpolated there"
        s += " σ_w levels without any interpolating run " + verb + ": " + "; ".join(left) + "."
    return s


# Problems -----------------------------------------------------------------------------------

def failures(a: Analysis) -> list[str]:
    """Everything that makes a number in the report less trustworthy; shown in red at the top."""
    out: list[str] = []
    d = a.summary.diagnostics
    if d.flags is not None:
        # The analysis checked R-hat, ESS and divergences itself (per pipeline): show its flags.
        out += [f"Sampler: {f}" for f in d.flags]
    else:
        overall = sampler_flags("all pipelines", num(d.max_rhat), num(d.min_ess_bulk), num(d.divergences))
        out += [f"Sampler: {f}" for f in overall]
        for r in diagnostics_rows(a):
            out += sampler_flags(r["name"], r["rhat"], r["ess"], r["div"])
    return out + _ppc_failures(a) + divergence_warnings(a)


def divergence_warnings(a: Analysis) -> list[str]:
    """Runs lost in a way that depends on sigma_w (divergence; never interpolating) bias the verdict, or the verdict
    hinges on leaving them out: the analysis's own warnings."""
    out = []
    for p in a.pipelines:
        dv, mi = a.pipe(p).divergence, a.pipe(p).missingness
        if dv is not None and dv.warning:
            out.append(f"{p}: {dv.warning}")
        if mi is not None and mi.warning and not _adds_noise_only(mi):
            out.append(f"{p}: {mi.warning}")
    return out


def _adds_noise_only(mi: Any) -> bool:
    """A survivorship warning whose one ground is a put-back refit that moves the spread further from delta (the
    lost runs do not depend on sigma_w detectably): the runs add noise, not doubt about the verdict's direction.
    A note on the report, not a problem with the fit."""
    return not mi.depends_on_sigma_w and mi.put_back_direction == "further"


def _ppc_failures(a: Analysis) -> list[str]:
    """The model checks each pipeline failed (``tables.failed_checks``)."""
    from initmem.models.checks import LABELS

    out = []
    for p in a.pipelines:
        info = a.pipe(p)
        for name in failed_checks(info):
            st = info.ppc.get(name)
            pv = q(st, "p_value") if st is not None else float("nan")
            out.append(f"{p}: posterior predictive check of the {LABELS.get(name, name)} fails (p = {pv:.3f}); "
                       "the model does not reproduce the data here.")
    return out


def _cells_asked_for(a: Analysis) -> Any:
    """The cube's cells that the design trained or meant to: under a sequential design a pipeline decided at a look
    keeps the look's seeds (the first ``seeds_used`` of the cube's), and its cells at later seeds were never asked
    for, so they are not missing runs."""
    seq = a.summary.sequential
    if seq is None or not seq.seeds_used:
        return a.cube
    seeds = a.cube[C.SEED].values
    asked = np.zeros((a.cube.sizes[C.PIPELINE], seeds.size), dtype=bool)
    for i, p in enumerate(a.cube[C.PIPELINE].values.tolist()):
        asked[i, : seq.seeds_used.get(str(p), seeds.size)] = True
    mask = xr.DataArray(asked, dims=(C.PIPELINE, C.SEED))
    return a.cube.assign({C.STATUS: a.cube[C.STATUS].where(mask, C.OK)})


def data_warnings(a: Analysis) -> list[str]:
    """Data problems that are not fit failures: failed or diverged runs, excluded cells, and the survivorship
    warnings whose put-back runs only add noise (:func:`_adds_noise_only`)."""
    out: list[str] = []
    if a.cube is not None:
        bad_status = [C.STATUS_NAMES[s] for s in (C.DIVERGED, C.FAILED, C.MISSING)]
        for p, counts in C.status_counts(_cells_asked_for(a)).items():
            bad = {k: v for k, v in counts.items() if k in bad_status and v}
            if bad:
                out.append(f"{p}: " + ", ".join(f"{v} run(s) {k}" for k, v in bad.items()) + ".")
    for p in a.pipelines:
        info = a.pipe(p)
        if info.missingness is not None and info.missingness.warning and _adds_noise_only(info.missingness):
            out.append(f"{p}: {info.missingness.warning}")
        if (info.n_excluded_total or 0) > 0:
            out.append(f"{p}: cells excluded from the analysis ({excluded_text(info.n_excluded)}).")
    d = a.summary.diagnostics
    if d.retried:
        out.append(f"The sampler's first fit failed its checks and was rerun (target_accept "
                   f"{fmt(d.target_accept)}, tune {d.tune if d.tune is not None else '?'}); the diagnostics below "
                   "are those of the rerun.")
    return out


__all__ = ["collapse_sentence", "crossed_sentence", "data_warnings", "delta_words", "divergence_warnings", "failures",
           "fmt", "fmt_p", "fmt_sig", "forgetting_sentence", "headline", "headline_note", "interpolation_recorded",
           "interpolation_sentence", "min_p_note", "not_in_input_sentence", "sort_key"]

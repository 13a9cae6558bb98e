"""The verdict's routes as one table of records: each route's test, its share of alpha, its thresholds and its name.

Why: a verdict (docs/memory-model.md, "Verdict") is reached by one of a few routes -- the ordered paired test's
extreme pair, its peak contrast or its fallback for "remembers" (with the model agreeing), the model's own
"forgets", the intersection-union test, or both of them -- and, near the ceiling, "forgets" needs both routes and
the skew gate. Each route was once spread over the tests (models/paired.py), the decision (models/summaries.py), the
rule's prose (analysis/analyze.py), the figures' thresholds (plot/load.py) and the report's Methods. Here each route is
one :class:`Route` record in :data:`ROUTES`; :func:`route_of` loops over the table to name the route that decided a
verdict (summary.json's ``rule``), :func:`thresholds` gives the numbers an analysis decided at as one typed record
(summary.json's ``thresholds``), and :func:`rule_text` writes the rule's sentence from the records.

A new route is one more record (docs/extending.md, "A new verdict rule"): its name, the verdict it gives, the test it
rests on, its share of alpha, the threshold it reads and the predicate that says when it decided.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from initmem import names as N
from initmem.models.paired import (
    CEILING,
    EXTREME_WEIGHT,
    FORGETS_IUT_SHARE,
    FORGETS_MODEL_SHARE,
    PEAK_WEIGHT,
    SKEW_GATE,
    STEP_EXTREME,
    STEP_FALLBACK,
    STEP_PEAK,
    forgets_levels,
)
from initmem.models.sequential import Spending, as_spending, parse_design, spending_label
from initmem.names import ALPHA
from initmem.results.margins import RADIAL_MARGIN
from initmem.results.records import DRAW_VERDICTS, RADIAL_VERDICTS, VerdictThresholds

AGREE = 0.5        # "remembers" needs the model to agree with the ordered test: P(spread > delta) >= 1/2
N_DRAWS = 4000     # posterior draws of a default analysis (4 chains x 1000): the planner's and verdict's default
RESOLVE = 4.0      # a model threshold sits at least this many MCSE floors inside 1 (model_thresholds)
MIN_LEVELS_MODEL_FORGETS = 3  # below: "forgets" only by the intersection-union test (models/summaries.py, verdict)


def binomial_mcse(p: float | np.ndarray, draws: float) -> float | np.ndarray:
    """The binomial Monte Carlo standard error of a probability ``p`` from ``draws`` independent draws, with p
    floored within [1/(draws + 1), draws/(draws + 1)] so that a probability every draw agrees on still has one."""
    q = np.clip(p, 1.0 / (draws + 1.0), draws / (draws + 1.0))
    return np.sqrt(q * (1.0 - q) / draws)


def mcse_floor(draws: int) -> float:
    """The Monte Carlo standard error of a posterior probability every one of ``draws`` draws agrees on
    (models/summaries.py ``probability_with_mcse``'s floor): the finest resolution of a probability near 0 or 1."""
    return float(binomial_mcse(0.0, draws))


def model_thresholds(alpha: float | Spending = ALPHA, draws: int | None = N_DRAWS) -> tuple[float, float | None]:
    """The model's thresholds at an analysis spending ``alpha`` with ``draws`` posterior draws (None: a default
    analysis's N_DRAWS): (on P(spread > delta) for "remembers", on P(spread < delta) for "forgets", None where
    that route is closed).

    Why: a look of a sequential design may spend 1e-4 or less, and a probability from 4,000 draws cannot be
    shown to exceed 1 - 1e-4: its MCSE floor is 2.5e-4, so even P = 1.000 would sit within 2 MCSE of the
    threshold (undecided, borderline), and no look could decide. Each threshold therefore stays at least RESOLVE MCSE
    floors (:func:`mcse_floor`) inside 1, and alpha is kept as follows.

    - the model's own "remembers" (models/summaries.py ``model_verdict``) is capped at 1 - max(alpha_k, RESOLVE x
      floor); the rule's "remembers" asks the model only for its agreement (:data:`AGREE`) and rests on the ordered
      paired test, a valid test at the analysis's level (its shares spent from their own allotments,
      models/paired.py).
    - "forgets" is the UNION of the model's route and the intersection-union test, so the model's route must
      hold its own share (1 - alpha_k x FORGETS_MODEL_SHARE) and cannot be relaxed. Where that share is below
      RESOLVE x floor the draws cannot resolve it and the route is closed (None): the intersection-union test
      alone decides "forgets" at that analysis. A closed route only removes rejections, so the union keeps its
      level.

    At alpha = 0.05 and 4,000 draws neither rule binds (the floor x RESOLVE is 0.001)."""
    spend = as_spending(alpha)
    room = RESOLVE * mcse_floor(draws or N_DRAWS)
    a_forgets = spend.level(FORGETS_MODEL_SHARE)
    return 1.0 - max(spend.level(1.0), room), (1.0 - a_forgets if a_forgets >= room else None)


def thresholds(alpha: float | Spending = ALPHA, draws: int | None = N_DRAWS) -> VerdictThresholds:
    """Every number an analysis at ``alpha`` (or a sequential look's :class:`Spending`) with ``draws`` posterior
    draws decides at, as the typed record summary.json stores (``thresholds``): the figures and the report read
    these fields, never the rule's prose.

    Examples
    --------
    >>> t = thresholds(0.05, 4000)
    >>> (t.alpha, t.remembers, t.forgets, round(t.iut_alpha, 6), t.ceiling)
    (0.05, 0.5, 0.975, 0.04, 0.99)
    """
    spend = as_spending(alpha)
    model_remembers, forgets = model_thresholds(spend, draws)
    return VerdictThresholds(alpha=spend.level(1.0), remembers=AGREE, model_remembers=model_remembers,
                             forgets=forgets, iut_alpha=forgets_levels(spend)[0], ceiling=CEILING,
                             skew_gate=SKEW_GATE, min_levels_model_forgets=MIN_LEVELS_MODEL_FORGETS)


@dataclass(frozen=True)
class Decided:
    """What a route's predicate reads: the final label, the model's own label (``names.UNDECIDED`` where its route
    to "forgets" was closed by too few levels), the ordered test's step that carried "remembers", whether the
    intersection-union test showed every pair inside +-delta, and whether the fit's sampler diagnostics passed."""

    label: str
    model_label: str
    step: str | None
    iut_supports: bool
    model_ok: bool = True


AGREEING = ", the model agreeing"
WITHOUT_MODEL = " alone (the fit's sampler diagnostics failed)"   # a rule the model took no part in


@dataclass(frozen=True)
class Route:
    """One route to a verdict: a row of :data:`ROUTES`.

    Attributes
    ----------
    key : str
        A short identifier (stable, for code and docs).
    name : str
        The route's name as summary.json's ``rule`` states it with a healthy fit.
    verdict : str
        The verdict the route gives ("remembers", "forgets"; "undecided" for the route of no decision).
    test : str
        The test the route rests on (models/paired.py or the memory model).
    share : float or None
        Its share of alpha (None: it spends none, or it shares another route's).
    threshold : callable
        The threshold it reads from the analysis's :class:`~initmem.results.records.VerdictThresholds` (None where
        it has none: a share of alpha is its level).
    decides : callable
        Whether this route decided, from the :class:`Decided` facts. The table is read in order and the first
        route that decides names the verdict's rule.
    alone : str or None
        The name when the fit's sampler diagnostics failed and the design-based test decided alone (None: the
        route needs the model and is closed then).
    """

    key: str
    name: str
    verdict: str
    test: str
    share: float | None
    threshold: Callable[[VerdictThresholds], float | None]
    decides: Callable[[Decided], bool]
    alone: str | None = None

    def rule(self, model_ok: bool = True) -> str:
        """The route's name in summary.json's ``rule``: marked as deciding alone where the model took no part."""
        return self.name if model_ok or self.alone is None else self.alone


def _ordered(step: str) -> str:
    return f"ordered paired test ({step})"


def _remembers(step: str | None) -> Callable[[Decided], bool]:
    if step is None:      # the fallback: any step other than the two named ones
        return lambda f: f.label == N.REMEMBERS and f.step not in (STEP_EXTREME, STEP_PEAK)
    return lambda f: f.label == N.REMEMBERS and f.step == step


ROUTES: tuple[Route, ...] = (
    Route("extreme", _ordered(STEP_EXTREME) + AGREEING, N.REMEMBERS, "ordered paired test, step 1: the extreme "
          "sigma_w pair", EXTREME_WEIGHT, lambda t: t.remembers, _remembers(STEP_EXTREME),
          _ordered(STEP_EXTREME) + WITHOUT_MODEL),
    Route("peak", _ordered(STEP_PEAK) + AGREEING, N.REMEMBERS, "ordered paired test, step 2: the peak contrast of "
          "the grid's middle level", PEAK_WEIGHT, lambda t: t.remembers, _remembers(STEP_PEAK),
          _ordered(STEP_PEAK) + WITHOUT_MODEL),
    Route("fallback", _ordered(STEP_FALLBACK) + AGREEING, N.REMEMBERS, "ordered paired test, step 3: Bonferroni "
          "over the other pairs", 1.0 - EXTREME_WEIGHT - PEAK_WEIGHT, lambda t: t.remembers, _remembers(None),
          _ordered(STEP_FALLBACK) + WITHOUT_MODEL),
    Route("both", "model + intersection-union test", N.FORGETS, "the memory model and the intersection-union test",
          None, lambda t: t.forgets,
          lambda f: f.label == N.FORGETS and f.model_ok and f.iut_supports and f.model_label == N.FORGETS),
    Route("iut", "intersection-union test", N.FORGETS, "intersection-union test (TOST of every pair of levels)",
          FORGETS_IUT_SHARE, lambda t: t.iut_alpha,
          lambda f: f.label == N.FORGETS and (f.iut_supports or not f.model_ok),
          "intersection-union test" + WITHOUT_MODEL),
    Route("model", "model", N.FORGETS, "the memory model's P(spread < delta)", FORGETS_MODEL_SHARE,
          lambda t: t.forgets, lambda f: f.label == N.FORGETS),
    Route("none", "none", N.UNDECIDED, "no route decided", None, lambda _t: None, lambda _f: True),
)
ROUTE = {r.key: r for r in ROUTES}


@dataclass(frozen=True)
class Gate:
    """A condition that closes routes rather than deciding: near the ceiling "forgets" needs both of its routes
    (and the skew gate's log-ratio test), on a crossed design and with a failed fit the model's route is closed,
    and with too few levels the model's "forgets" is the prior's. Rows of :data:`GATES`, for the documentation and
    the report; the decision itself applies them in models/summaries.py ``verdict_flagged``."""

    key: str
    closes: str
    threshold: Callable[[VerdictThresholds], float | None]
    sentence: str


GATES: tuple[Gate, ...] = (
    Gate("ceiling", "either route to 'forgets' alone", lambda t: t.ceiling,
         "an accuracy's expected value reaches the ceiling at some level: 'forgets' needs both routes"),
    Gate("skew", "the intersection-union test near the ceiling without the log-ratio test", lambda t: t.skew_gate,
         "the seeds' log-error SD reaches the skew gate: 'forgets' also needs the log-ratio test of every pair"),
    Gate("levels", "the model's route to 'forgets'", lambda t: t.min_levels_model_forgets,
         "fewer sigma_w levels than this: the model's P(spread < delta) is the prior's"),
    Gate("crossed", "the model's route to 'forgets' alone", lambda _t: None,
         "a crossed init x data seed design: the model reads every run as a seed of its own"),
    Gate("failed fit", "every route of the model", lambda _t: None,
         "the fit's sampler diagnostics failed: the design-based tests decide alone"),
)

@dataclass(frozen=True)
class Readout:
    """A verdict beside the scale verdict, decided by a test of its own against a margin: a row of
    :data:`READOUTS` (the radial verdict, stats/radial.py; the draw verdict of a crossed design, stats/crossed.py).

    Attributes
    ----------
    key : str
        A short identifier ("radial", "draw").
    quantity : str
        What the test reads, in a few words.
    verdicts : tuple of str
        The word where the test shows the quantity above the margin, and where it shows it inside.
    test : str
        The test each of the two words rests on.
    share : float
        Its share of alpha: each readout is a family of its own, spending the whole of its level.
    alpha : float or None
        The level it is decided at where fixed (None: the analysis's alpha).
    margin : float or None
        Its margin where fixed (None: the analysis's, ``Margins.draw_margin``).
    sentence : callable
        The rule as the report's Methods states it, from the level and the margin as shown (:meth:`rule`).
    """

    key: str
    quantity: str
    verdicts: tuple[str, str]
    test: str
    share: float
    alpha: float | None
    margin: float | None
    sentence: Callable[[Readout, float, str], str]

    def rule(self, alpha: float | None = None, margin: str | None = None) -> str:
        """The rule's sentence at ``alpha`` (None: the readout's own level) with ``margin`` as the reader sees it
        (None: the readout's own, as a number)."""
        level = self.alpha if alpha is None else alpha
        assert level is not None, f"the {self.key} verdict is decided at the analysis's alpha: pass it"
        return self.sentence(self, level, f"{self.margin:g}" if margin is None else margin)


def _radial_sentence(r: Readout, alpha: float, margin: str) -> str:
    keeps, forgets = r.verdicts
    return (f"Radial memory was decided from {r.quantity} (1 at initialization): '{keeps}' when a one-sided t test "
            f"shows it above {margin}, '{forgets}' when two one-sided t tests show it inside +-{margin} "
            f"(alpha = {alpha:g}).")


def _draw_sentence(r: Readout, alpha: float, margin: str) -> str:
    return (f"A pipeline was said to keep its draw when the one-sided {100 * (1 - alpha):g}% lower confidence bound "
            f"of {r.quantity} exceeded {margin}, and to forget it when the upper bound fell below the margin")


READOUTS: tuple[Readout, ...] = (
    Readout("radial", "the slope of the log final kernel norm on log sigma_w, averaged over seeds",
            (RADIAL_VERDICTS[0], RADIAL_VERDICTS[1]),
            "one-sided t test of the mean seed slope above the margin; two one-sided t tests (TOST) inside it",
            1.0, ALPHA, RADIAL_MARGIN, _radial_sentence),
    Readout("draw", "SD_init", (DRAW_VERDICTS[0], DRAW_VERDICTS[1]),
            "the one-sided lower confidence bound of SD_init above the margin; its upper bound below it (modified "
            "large-sample bounds, stats/crossed.py)", 1.0, None, None, _draw_sentence),
)
READOUT = {r.key: r for r in READOUTS}

# summary.json's ``rule`` values in the order the documentation lists them (the table is read in ROUTES' order)
RULES: tuple[str, ...] = tuple(ROUTE[k].name for k in ("extreme", "peak", "fallback", "model", "iut", "both", "none"))


def route_of(facts: Decided, routes: tuple[Route, ...] = ROUTES) -> Route:
    """The first route of ``routes`` (:data:`ROUTES`) whose predicate holds: the route that decided the verdict.

    Examples
    --------
    >>> route_of(Decided(N.FORGETS, N.FORGETS, None, iut_supports=True)).key
    'both'
    >>> route_of(Decided(N.REMEMBERS, N.REMEMBERS, "peak contrast", iut_supports=False)).rule()
    'ordered paired test (peak contrast), the model agreeing'
    """
    return next(r for r in routes if r.decides(facts))


def rule_text(alpha: float | Spending, draws: int | None = None) -> str:
    """The decision rule as summary.json states it (docs/memory-model.md, "Verdict"), at this analysis's alpha: a
    fixed design's, or a sequential look's :class:`Spending`, whose shares are each spent from their own
    allotment, with the numbers of :func:`thresholds`. ``draws``: the posterior draws, which set the finest threshold
    the model can resolve. Prose for a reader; programs read summary.json's ``thresholds``."""
    return stated_rule(alpha, draws)[1]


def stated_rule(alpha: float | Spending, draws: int | None = None) -> tuple[VerdictThresholds, str]:
    """The rule an analysis decides by, typed and in words, from one computation of its numbers: (:func:`thresholds`,
    the record summary.json stores as ``thresholds``; :func:`rule_text`, its ``verdict_rule``)."""
    spend = as_spending(alpha)
    t = thresholds(spend, draws)
    p = f"{t.remembers:g}"
    if spend.looks:
        where = (f"look {spend.look + 1} of looks {', '.join(map(str, spend.looks))} seeds under "
                 f"{spending_label(parse_design(spend.design)[1])} spending of alpha = {spend.alpha:g}, each share of "
                 f"alpha spent from its own allotment (the ordered test's steps, the intersection-union test "
                 f"{ROUTE['iut'].share:g}, the model's 'forgets' {ROUTE['model'].share:g}; models/sequential.py)")
    else:
        where = f"alpha = {spend.alpha:.4g}"
    if t.forgets is None:
        model_forgets = ("the model's route is closed at this analysis (its share of alpha is finer than the "
                         "posterior draws resolve)")
        q = None
    else:
        q = f"{t.forgets:.4g}"
        model_forgets = (f"P(spread < delta) >= {q} (the model's share, with at least {t.min_levels_model_forgets} "
                         "sigma_w levels)")
    return t, (f"at {where}: remembers if the seeds' paired differences carry it (the ordered test of "
            f"models/paired.py, the extreme sigma_w pair first, then the peak contrast of the grid's middle level, "
            f"then the other pairs, at alpha = {t.alpha:.4g}) and the model agrees, P(spread > delta) >= {p}; "
            f"forgets if {model_forgets} or every pair of levels is "
            f"shown inside +-delta by the seeds' paired differences (intersection-union test at its share, "
            f"{t.iut_alpha:.4g}; the two routes share alpha), both routes where an accuracy's expected value reaches "
            f"{t.ceiling:g} at some level (near the ceiling), and there also the log-ratio test of every pair "
            f"where the seeds' log-error SD reaches {t.skew_gate:g} (the skew gate); where a fit's sampler diagnostics "
            f"failed, the two design-based tests alone; else undecided, flagged borderline "
            f"when a verdict probability lies within 2 Monte Carlo standard errors of its threshold "
            f"({p if q is None else f'{p} or {q}'}; not counted as decided); "
            "spread = max - min over the sigma_w grid of the expected metric with seed and residual "
            "effects averaged out, in outcome units")


_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def stored_thresholds(stored: VerdictThresholds | None, alpha: float | None, spending: Spending | None,
                      rule: str | None, draws: int | None = None) -> VerdictThresholds:
    """The thresholds an analysis decided at, as summary.json holds them: its ``thresholds`` where it has them;
    for a summary.json written before that field, rebuilt from what it did store (a sequential look's
    ``spending``, then ``alpha``, then, for the oldest files, the numbers its rule's prose states), so an old
    analysis still loads with the thresholds it decided at.

    Parameters
    ----------
    stored : VerdictThresholds or None
        summary.json's ``thresholds`` (None: a file written before it).
    alpha : float or None
        summary.json's ``alpha``.
    spending : Spending or None
        The sequential look's spending (None: a fixed design, or not stored).
    rule : str or None
        summary.json's ``verdict_rule``.
    draws : int, optional
        The posterior draws stored beside the spending (None: a default analysis's).
    """
    if stored is not None:
        return stored
    text = rule or ""

    def find(pattern: str) -> float:
        m = re.search(pattern + _NUMBER, text)
        return float(m.group(1)) if m else math.nan

    def given(x: float, default: float | None) -> float | None:
        return x if math.isfinite(x) else default

    stated = find(r"P\(spread > delta\) >= ")    # 1/2 since "remembers" rests on the ordered test; 1 - alpha before
    if spending is not None and spending.looks:
        base = thresholds(spending, draws)
        return _restated(base, base.alpha, given(stated, base.model_remembers), base.forgets, base.iut_alpha)
    if alpha is not None:
        iut, model_forgets = forgets_levels(alpha)
        return _restated(thresholds(alpha), alpha, given(stated, 1 - alpha), model_forgets, iut)
    level = given(find(r"at alpha = "), ALPHA)
    assert level is not None
    iut_default, forgets_default = forgets_levels(level)
    return _restated(thresholds(level), level, given(stated, 1 - level),
                     given(find(r"P\(spread < delta\) >= "), forgets_default),
                     given(find(r"0\.8 alpha = "), iut_default))


def _restated(base: VerdictThresholds, alpha: float, agree: float | None, model_forgets: float | None,
              iut_alpha: float | None) -> VerdictThresholds:
    """``base`` with the four numbers an older summary.json states (:func:`stored_thresholds`)."""
    return VerdictThresholds(alpha=alpha, remembers=base.remembers if agree is None else agree,
                             model_remembers=base.model_remembers, forgets=model_forgets,
                             iut_alpha=base.iut_alpha if iut_alpha is None else iut_alpha, ceiling=base.ceiling,
                             skew_gate=base.skew_gate, min_levels_model_forgets=base.min_levels_model_forgets)


__all__ = ["AGREE", "GATES", "MIN_LEVELS_MODEL_FORGETS", "N_DRAWS", "READOUT", "READOUTS", "RESOLVE", "ROUTE", "ROUTES",
           "RULES", "Decided", "Gate", "Readout", "Route", "binomial_mcse", "mcse_floor", "model_thresholds",
           "route_of", "rule_text", "stated_rule", "stored_thresholds", "thresholds"]

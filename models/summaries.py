"""Per-pipeline summaries of a fitted memory model: the verdict and how far to trust it.

The verdict rule (docs/memory-model.md, "Verdict"), with the route that decided it in ``rule``:
"remembers" when the seeds' own paired differences carry it (the ordered test of models/paired.py: the extreme
sigma_w pair first, then the peak contrast of the grid's middle level, then the other pairs, family-wise error
<= alpha with no assumption on how the levels co-vary) AND the model agrees, its P(spread > delta) at least
:data:`AGREE` (its posterior median spread above delta). The ordered test is a level-alpha test on its own, so
the agreement only removes claims; demanding P(spread > delta) >= 1 - alpha of the model as well failed on count
imports where the seeds' test found a clear memory and the model shrank the level effects (docs/memory-model.md,
"How the routes combine"). "forgets" when P(spread < delta) >= 1 - alpha/2 (0.975; the model's route, with at
least 3 levels) OR the intersection-union test at alpha x 0.8 (0.04) shows every pair of levels inside +-delta (the
design-based route, valid at its level on its own for any covariance of the levels; the split of alpha between
the two routes: models/paired.py, ``forgets_levels``; on a crossed init x data seed design the intersection-union
test on the crossed blocks is required, the model's route alone does not decide, since the model reads each run as
a seed of its own); else "undecided", flagged ``borderline`` when a deciding probability of the model lies within
two Monte Carlo standard errors of its threshold and no design-based test decided, because then another run of the
sampler could flip it. A fit whose sampler diagnostics failed decides nothing: the design-based tests alone decide
(``model_ok`` False), and the rule says so. Each verdict comes with the model's own verdict, the prior's own
probabilities (what the verdict would be before any data), the verdict under a second prior
(importance reweighting), the model checks that failed, the interpolation gate's counts and, when
runs diverged, a test of whether divergence depends on sigma_w and a refit with the diverged runs
counted at chance accuracy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from initmem import cube
from initmem import names as N
from initmem.jsonio import json_safe
from initmem.models import arviz_io, checks
from initmem.models.data import MemoryData
from initmem.models.paired import (
    CEILING,
    SKEW_GATE,
    equivalence_check,
    forgets_iut_ok,
    forgets_levels,
    pair_interval,
    paired_check,
)
from initmem.models.priors import Priors, prior_p_spread_gt
from initmem.models.rules import (
    AGREE,
    MIN_LEVELS_MODEL_FORGETS,
    N_DRAWS,
    RESOLVE,
    ROUTE,
    RULES,
    Decided,
    binomial_mcse,
    mcse_floor,
    model_thresholds,
    route_of,
)
from initmem.models.sequential import Spending, as_spending
from initmem.names import ALPHA, VERDICTS
from initmem.results import sigma_key
from initmem.results.records import PipelineResult


class FittedModel(Protocol):
    """What a summary reads of a fitted memory model: its data, priors and posterior, and a refit on
    other data (the divergence sensitivity). A protocol, so this module never imports the model."""

    data: MemoryData
    priors: Priors
    idata: Any
    delta: float | None

    def _arrays(self) -> dict[str, np.ndarray]: ...

    def refit(self, data: MemoryData) -> FittedModel: ...

DECISION = 1.0 - ALPHA                     # the model alone says "remembers" at P(spread > delta) >= 0.95


def quantiles(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=float)
    return {"median": float(np.median(x)), "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}


# which route decided (summary.json's ``rule``): the records of models/rules.py, ROUTES
RULE_REMEMBERS_EXTREME = ROUTE["extreme"].name
RULE_REMEMBERS_PEAK = ROUTE["peak"].name
RULE_REMEMBERS_FALLBACK = ROUTE["fallback"].name
RULE_FORGETS_MODEL = ROUTE["model"].name
RULE_FORGETS_IUT = ROUTE["iut"].name
RULE_FORGETS_BOTH = ROUTE["both"].name
RULE_NONE = ROUTE["none"].name


def verdict(p_gt: float, p_lt: float, level: float | Spending = DECISION, mcse: tuple[float, float] | None = None,
            *, paired_ok: bool = True, iut_ok: bool = False, model_forgets_ok: bool = True,
            near_ceiling: bool = False, crossed: bool = False, draws: int = N_DRAWS, model_ok: bool = True) -> str:
    """The verdict from the model's P(spread > delta), P(spread < delta) and the seeds' design-based tests.

    "remembers" when the ordered paired test supports it (``paired_ok``, a level-alpha test on its own) and the
    model agrees: P(spread > delta) >= :data:`AGREE`. "forgets" when P(spread < delta) >= 1 - alpha/2 (the model's
    share of the same alpha, models/paired.py ``forgets_levels``) or the intersection-union test supports it
    (``iut_ok``: valid on its own, no Monte Carlo error, and it cannot coexist with a supported "remembers": one
    needs every pair's upper bound below delta, the other some pair's lower bound above it). Else "undecided";
    :func:`verdict_flagged` also gives its borderline flag: a probability of the model within 2 MCSE of its own
    threshold and no design-based test decided.

    Parameters
    ----------
    p_gt, p_lt : float
        P(spread > delta) and P(spread < delta).
    level : float or Spending
        1 - alpha of a fixed design, or the analysis's :class:`~initmem.models.sequential.Spending` (a look of a
        sequential design: each share spent from its own allotment).
    mcse : tuple of float, optional
        The probabilities' Monte Carlo standard errors (None: no borderline band).
    paired_ok, iut_ok : bool
        The ordered paired test supports "remembers"; the intersection-union test supports "forgets".
    model_forgets_ok : bool
        False with fewer than MIN_LEVELS_MODEL_FORGETS levels: with one level contrast sigma_sd is the prior's, and
        P(spread < delta) >= 0.95 came out at a spread of exactly delta in 5/48 and 1/48 real fits at the demo's
        scale (quadrature over 1,000 tables: 9.2%), so the model's route to "forgets" is closed.
    near_ceiling : bool
        An accuracy within 1 point of 100% at some level (:data:`CEILING`): "forgets" needs BOTH routes, since the
        seeds' skewed differences there cost each route its level (docs/memory-model.md, "Near the ceiling").
    crossed : bool
        A crossed init x data seed design (models/paired.py ``CrossedSeeds``): "forgets" needs the
        intersection-union test on the crossed blocks. The model treats every run as a seed of its own, so at a
        spread of exactly delta it said "forgets" alone on up to 8.2% of crossed tables
        (studies/crossed_scale_calibration.py, ``--verdict``); its route is closed there unless the test shows it
        too (fail closed).
    draws : int
        Posterior draws behind the probabilities (:func:`model_thresholds`: a threshold the draws cannot resolve
        closes the model's route to "forgets").
    model_ok : bool
        The fit's sampler diagnostics passed. When False the model decides nothing: "remembers" rests on the
        ordered test alone and "forgets" on the intersection-union test alone (near the ceiling, where "forgets"
        needs both routes, it is then out of reach).

    Returns
    -------
    str
        "remembers", "forgets" or "undecided".

    Examples
    --------
    >>> verdict(0.7, 0.3)                      # the ordered test carries it and the model agrees
    'remembers'
    >>> verdict(0.4, 0.6)                      # the model's median spread is below delta: no agreement
    'undecided'
    >>> verdict(0.99, 0.01, paired_ok=False)   # the model alone cannot say "remembers"
    'undecided'
    >>> verdict(0.3, 0.7, paired_ok=True, model_ok=False)   # a failed fit: the ordered test alone
    'remembers'
    """
    return verdict_flagged(p_gt, p_lt, level, mcse, paired_ok=paired_ok, iut_ok=iut_ok,
                           model_forgets_ok=model_forgets_ok, near_ceiling=near_ceiling, crossed=crossed, draws=draws,
                           model_ok=model_ok)[0]


def verdict_flagged(p_gt: float, p_lt: float, level: float | Spending = DECISION,
                    mcse: tuple[float, float] | None = None, *, paired_ok: bool = True, iut_ok: bool = False,
                    model_forgets_ok: bool = True, near_ceiling: bool = False, crossed: bool = False,
                    draws: int = N_DRAWS, model_ok: bool = True) -> tuple[str, bool]:
    """:func:`verdict` (same arguments) and its borderline flag: "undecided" because a probability of the
    model lies within 2 MCSE of its threshold, so another run of the sampler could decide it.

    Returns
    -------
    tuple of (str, bool)
        The verdict, and the borderline flag (True only beside "undecided").

    Examples
    --------
    >>> verdict_flagged(0.0, 0.975, mcse=(0.0, 0.01))   # P(spread < delta) sits on its threshold
    ('undecided', True)
    >>> verdict_flagged(0.0, 0.5, mcse=(0.0, 0.01))
    ('undecided', False)
    """
    spend = level if isinstance(level, Spending) else Spending(1.0 - float(level))
    _, t_lt = model_thresholds(spend, draws)
    if iut_ok and not near_ceiling:
        return N.FORGETS, False
    if not model_ok:
        return (N.REMEMBERS if paired_ok else N.UNDECIDED), False
    if not paired_ok:
        p_gt, mcse = 0.0, None if mcse is None else (0.0, mcse[1])
    if t_lt is None or not model_forgets_ok or ((near_ceiling or crossed) and not iut_ok):
        p_lt, t_lt, mcse = 0.0, 1.0, None if mcse is None else (mcse[0], 0.0)
    return _by_thresholds(p_gt, p_lt, AGREE, t_lt, mcse)


def model_verdict(p_gt: float, p_lt: float, level: float | Spending = DECISION,
                  mcse: tuple[float, float] | None = None, draws: int = N_DRAWS) -> str:
    """What the model's probabilities alone say, without the seeds' tests: "remembers" at P(spread > delta) >=
    1 - alpha, "forgets" at P(spread < delta) >= 1 - alpha/2, the thresholds :func:`model_thresholds` for
    ``draws`` draws (a closed route decides nothing), "undecided" otherwise (borderline within 2 MCSE of either:
    :func:`model_verdict_flagged`).

    Examples
    --------
    >>> model_verdict(0.97, 0.03), model_verdict(0.7, 0.3), model_verdict(0.01, 0.99)
    ('remembers', 'undecided', 'forgets')
    """
    return model_verdict_flagged(p_gt, p_lt, level, mcse, draws)[0]


def model_verdict_flagged(p_gt: float, p_lt: float, level: float | Spending = DECISION,
                          mcse: tuple[float, float] | None = None, draws: int = N_DRAWS) -> tuple[str, bool]:
    """:func:`model_verdict` and its borderline flag (a probability within 2 MCSE of its threshold).

    Examples
    --------
    >>> model_verdict_flagged(0.95, 0.05, mcse=(0.01, 0.01))
    ('undecided', True)
    """
    spend = level if isinstance(level, Spending) else Spending(1.0 - float(level))
    t_gt, t_lt = model_thresholds(spend, draws)
    if t_lt is None:
        p_lt, t_lt, mcse = 0.0, 1.0, None if mcse is None else (mcse[0], 0.0)
    return _by_thresholds(p_gt, p_lt, t_gt, t_lt, mcse)


def _by_thresholds(p_gt: float, p_lt: float, t_gt: float, t_lt: float, mcse: tuple[float, float] | None,
                   ) -> tuple[str, bool]:
    """remembers / forgets where a probability reaches its threshold; undecided and borderline within 2 MCSE of
    one; undecided otherwise."""
    if mcse is not None and any(abs(p - t) <= 2 * m for p, t, m in zip((p_gt, p_lt), (t_gt, t_lt), mcse,
                                                                      strict=True)):
        return N.UNDECIDED, True
    if p_gt >= t_gt:
        return N.REMEMBERS, False
    if p_lt >= t_lt:
        return N.FORGETS, False
    return N.UNDECIDED, False


def decision_rule(final: str, model_verdict: str, paired: dict[str, Any], equivalence: dict[str, Any],
                  model_ok: bool = True) -> str:
    """The route that decided ``final`` (one of RULES): the first record of models/rules.py's ROUTES whose
    predicate holds. For "remembers" the ordered test's step with the model agreeing; for "forgets" the model, the
    intersection-union test, or both. Without a healthy fit (``model_ok`` False) the design-based test's route,
    marked as deciding alone (:data:`~initmem.models.rules.WITHOUT_MODEL`)."""
    facts = Decided(final, model_verdict, paired.get("step"), bool(equivalence.get("supports_forgets")), model_ok)
    return route_of(facts).rule(model_ok)


@dataclass(frozen=True)
class Verdict:
    """One pipeline's decision and what it rests on: a pure function (:func:`decide`) of the posterior's two
    probabilities and the seeds' design-based tests, so that every place that decides (the fit, the
    sensitivity refits, the second prior) applies the same rule.

    Attributes
    ----------
    label : str
        "remembers", "forgets" or "undecided" (:func:`verdict`).
    model_label : str
        What the model's probabilities alone say, without the seeds' tests.
    borderline, model_borderline : bool
        ``label`` (``model_label``) is "undecided" with a probability within 2 MCSE of its threshold.
    rule : str
        The route that decided ``label`` (one of ``names.RULES``).
    paired_ok, iut_ok : bool
        The ordered paired test supports "remembers"; the intersection-union test supports "forgets" (after
        the skew gate near the ceiling).
    model_forgets_ok : bool
        The model's route to "forgets" is open (at least ``MIN_LEVELS_MODEL_FORGETS`` levels).
    near_ceiling : bool
        An accuracy within one point of 100% at some level: "forgets" needs both routes.
    crossed : bool
        A crossed init x data seed design: "forgets" needs the intersection-union test (:func:`verdict`).
    model_ok : bool
        The fit's sampler diagnostics passed; when False the design-based tests decided alone.
    """

    label: str
    model_label: str
    rule: str
    paired_ok: bool
    iut_ok: bool
    model_forgets_ok: bool
    near_ceiling: bool
    level: Spending
    draws: int
    crossed: bool = False
    model_ok: bool = True
    borderline: bool = False
    model_borderline: bool = False

    def fields(self) -> dict[str, Any]:
        """The decision as summary.json's pipeline entry holds it (``PipelineResult``): the verdict and its
        borderline flag, the model's own, the route that decided and whether the pipeline is near the ceiling."""
        return {"verdict": self.label, "borderline": self.borderline, "model_verdict": self.model_label,
                "rule": self.rule, "near_ceiling": self.near_ceiling}

    def again(self, p_gt: float, p_lt: float, mcse: tuple[float, float] | None = None) -> str:
        """The label the same tests give with other probabilities (a reweighted posterior, another prior)."""
        return verdict(p_gt, p_lt, self.level, mcse, paired_ok=self.paired_ok, iut_ok=self.iut_ok,
                       model_forgets_ok=self.model_forgets_ok, near_ceiling=self.near_ceiling, crossed=self.crossed,
                       draws=self.draws, model_ok=self.model_ok)


def decide(p_gt: float, p_lt: float, *, level: float | Spending, mcse: tuple[float, float] | None,
           check: dict[str, Any], equivalence: dict[str, Any], near: bool, n_levels: int, draws: int,
           crossed: bool = False, model_ok: bool = True) -> Verdict:
    """The verdict of one pipeline from P(spread > delta), P(spread < delta), their Monte Carlo errors and the
    seeds' tests (``check``: models/paired.py ``paired_check``; ``equivalence``: ``equivalence_check``).

    Parameters
    ----------
    p_gt, p_lt : float
        The posterior probabilities of a spread above and below delta.
    level : float or Spending
        1 - alpha of a fixed design, or a sequential look's spending.
    mcse : tuple of float, optional
        Their Monte Carlo standard errors (None: no borderline band).
    check, equivalence : dict
        The ordered paired test and the intersection-union test.
    near : bool
        The pipeline is near the ceiling (:func:`near_ceiling`).
    n_levels : int
        sigma_w levels with usable runs.
    draws : int
        Posterior draws behind the probabilities (the thresholds they can resolve).
    crossed : bool
        The seeds are a crossed init x data design (``MemoryData.crossed_seeds``): "forgets" then needs the
        intersection-union test, since the model reads every run as a seed of its own (:func:`verdict`).
    model_ok : bool
        The fit's sampler diagnostics passed; when False the design-based tests decide alone.

    Returns
    -------
    Verdict
    """
    spend = as_spending(level)
    model_forgets_ok = n_levels >= MIN_LEVELS_MODEL_FORGETS
    paired_ok, iut_ok = bool(check["supports_remembers"]), forgets_iut_ok(equivalence, near)
    label, borderline = verdict_flagged(p_gt, p_lt, spend, mcse, paired_ok=paired_ok, iut_ok=iut_ok,
                                        model_forgets_ok=model_forgets_ok, near_ceiling=near, crossed=crossed,
                                        draws=draws, model_ok=model_ok)
    model_label, model_borderline = model_verdict_flagged(p_gt, p_lt, spend, mcse, draws=draws)
    rule = decision_rule(label, model_label if model_forgets_ok else N.UNDECIDED, check, equivalence, model_ok)
    return Verdict(label, model_label, rule, paired_ok, iut_ok, model_forgets_ok, near, spend, draws, crossed,
                   model_ok, borderline, model_borderline)


def probability_with_mcse(indicator: np.ndarray) -> tuple[float, float]:
    """Mean of a (chain, draw) 0/1 array and its Monte Carlo standard error (ESS-based; the
    binomial formula with a 1/(N+1) floor when every draw agrees)."""
    p = float(indicator.mean())
    m = arviz_io.mcse_mean(indicator.astype(float))
    if not np.isfinite(m) or m == 0.0:
        m = float(binomial_mcse(p, indicator.size))
    return p, m


def estimand(model: FittedModel) -> str:
    d = model.data
    if d.likelihood in ("per_example", "counts"):
        return ("max - min over the sigma_w grid of the expected accuracy on THIS test set of "
                f"{d.n_test} examples, expected over training seeds (new seeds), as a fraction")
    if d.is_accuracy:
        return (f"max - min over the sigma_w grid of the expected {d.metric}, an accuracy, expected over new "
                "seeds, as a fraction (the report shows points)")
    return f"max - min over the sigma_w grid of the expected {d.metric}, expected over new seeds, in its units"


def _prior_sensitivity(model: FittedModel, a: int, spread: np.ndarray, delta: float, decided: Verdict,
                       ) -> dict[str, Any]:
    pr = model.priors
    scale = float(model._arrays()["sigma_scale"][a])
    post = model.idata.posterior
    sz = post["sigma_sd"].values[..., a].ravel() / model.data.scale[a]
    logw = pr.alt_logpdf(sz, scale) - pr.logpdf(sz, scale)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    p_gt = float(np.sum(w * (spread > delta)))
    p_lt = float(np.sum(w * (spread < delta)))
    return {"prior": pr.alt_description(), "p_spread_gt_delta": p_gt, "p_spread_lt_delta": p_lt,
            "verdict": decided.again(p_gt, p_lt),
            "ess_weights": float(1.0 / np.sum(w**2))}


def _prior_only(model: FittedModel, a: int, delta: float) -> dict[str, Any]:
    """What sigma_sd's prior alone says: P(spread > delta) and P(spread < delta) before any data."""
    d = model.data
    arr = model._arrays()
    scale = float(arr["sigma_scale"][a])
    p_gt = prior_p_spread_gt(delta / float(d.scale[a]), scale, int(d.level_mask[a].sum()))
    out = {"sigma_sd_scale": scale * float(d.scale[a]), "p_spread_gt_delta": p_gt, "p_spread_lt_delta": 1.0 - p_gt}
    if arr["x"][a].any():
        out["note"] = ("of the exchangeable level effects; the memory's linear trend in log sigma_w has a flat prior "
                       "(no prior probability), so its verdict rests on the data alone")
    return out


def spread_interval(model: FittedModel, a: int, spread: np.ndarray, medians: np.ndarray,
                    ) -> tuple[dict[str, float], str]:
    """The spread's reported median and 90% interval: the model's, widened where needed to hold the seeds' own
    paired t interval of the two levels that attain the spread (their posterior medians' max and min).

    Why: the model pools one residual SD over every sigma_w level, and on real grids the level that carries the
    memory (the largest sigma_w, where runs barely interpolate) is the noisiest, so the model's interval for the
    spread was too narrow on disjoint sets of real seeds (docs/memory-model.md, "Real reruns"). The pair's own
    interval reads that level's noise from its runs; with few seeds or runs that agree to the last test example it
    is floored at the noise of one run (the pipeline's noise scale for an accuracy: the test set's), so no interval
    is narrower than the test set allows. The median stays the model's.

    Returns
    -------
    tuple
        The quantiles (median, q05, q95) and which bound set the interval: "model", or the pair that widened it.
    """
    d = model.data
    post = quantiles(spread)
    lev = d.level_mask[a]
    if lev.sum() < 2:
        return post, "model"
    hi, lo = int(np.argmax(medians)), int(np.argmin(medians))
    paired = d.seed_design == cube.SEED_PAIRED
    got = pair_interval(d.y[a][lev], hi, lo, paired=paired, n_test=d.n_test if d.is_accuracy else None,
                        crossed=d.crossed_seeds if paired else None,
                        run_sd=float(d.scale[a]) if d.is_accuracy else 0.0)
    if got is None:
        return post, "model"
    _, lower, upper = got
    q05, q95 = min(post["q05"], max(lower, 0.0)), max(post["q95"], upper)
    if (q05, q95) == (post["q05"], post["q95"]):
        return post, "model"
    sw = d.sigma_w[lev]
    return ({"median": post["median"], "q05": q05, "q95": q95},
            f"the seeds' paired t interval of sigma_w {sw[hi]:g} against {sw[lo]:g}")


def expected_levels(model: FittedModel, a: int) -> np.ndarray:
    """Draws x levels of pipeline ``a``'s expected outcome at its own sigma_w levels."""
    lev = model.data.level_mask[a]
    return model.idata.posterior["expected"].values[..., a, :].reshape(-1, lev.size)[:, lev]


def near_ceiling(model: FittedModel, a: int, medians: np.ndarray | None = None) -> bool:
    """Whether pipeline ``a`` is an accuracy whose expected value (posterior median per level, ``medians`` when
    the caller has them) reaches :data:`CEILING` at some sigma_w level: there "forgets" needs both of its
    routes (:func:`verdict`)."""
    if not model.data.is_accuracy:
        return False
    if medians is None:
        medians = np.median(expected_levels(model, a), axis=0)
    return bool(medians.max() >= CEILING)


def _tests(model: FittedModel, a: int, delta: float, y: np.ndarray | None = None,
           alpha: float | Spending = ALPHA) -> tuple[dict, dict]:
    """The design-based tests of one pipeline's table: the ordered paired test of "remembers" at
    ``alpha`` and the intersection-union test of "forgets" at its share of it (models/paired.py,
    ``forgets_levels``); a sequential look's :class:`Spending` spends each share from its own allotment."""
    d = model.data
    lev = d.level_mask[a]
    table = (d.y if y is None else y)[a][lev]
    paired = d.seed_design == cube.SEED_PAIRED
    spend = as_spending(alpha)
    n_test = d.n_test if d.is_accuracy else None     # the lattice of an accuracy floors every SE
    crossed = d.crossed_seeds                        # crossed seeds: the crossed-block moments
    return (paired_check(table, d.sigma_w[lev], delta, paired=paired, alpha=spend, n_test=n_test, crossed=crossed),
            equivalence_check(table, d.sigma_w[lev], delta, paired=paired, alpha=forgets_levels(spend)[0],
                              n_test=n_test, accuracy=d.is_accuracy, crossed=crossed))


def _divergence(model: FittedModel, a: int, pipe: str, sensitivity: dict | None) -> dict[str, Any]:
    d = model.data
    div = d.diverged[a] if d.diverged is not None else np.zeros_like(d.used[a])
    p_value = d.divergence_p.get(pipe)
    depends = p_value is not None and p_value < ALPHA
    n_div = int(div.sum())
    warning = None
    if depends:
        warning = (f"{n_div} run(s) diverged and divergence depends on sigma_w (permutation p = {p_value:.3g}): "
                   "the verdict rests on the runs that survived; see the sensitivity result")
    return {"n_diverged": n_div, "by_sigma_w": {sigma_key(s): int(n) for s, n in zip(d.sigma_w, div.sum(axis=1),
                                                                                     strict=True) if n},
            "depends_on_sigma_w": bool(depends), "p_value": p_value, "warning": warning,
            "sensitivity": sensitivity}


def _refit_with(model: FittedModel, cells: np.ndarray, values: np.ndarray, delta: float, alpha: float | Spending,
                note: Callable[[int], str]) -> dict[str, dict[str, Any]]:
    """Refit (same compiled sampler) with ``cells`` added at ``values``; per pipeline that has such cells, the
    verdict by the same rule, the spread and the verdict probabilities, and ``note(a)`` saying what was put in."""
    d = model.data
    used = d.used | cells
    alt = model.refit(d.with_cells(np.where(used, np.where(cells, values, d.y), np.nan), used))
    out = {}
    for a, pipe in enumerate(d.pipelines):
        if not cells[a].any():
            continue
        s = alt.idata.posterior["spread"].values[..., a]
        p_gt, m_gt = probability_with_mcse(s > delta)
        p_lt, m_lt = probability_with_mcse(s < delta)
        vd, _, _ = decide_pipeline(alt, a, delta, alpha, (p_gt, p_lt), (m_gt, m_lt), s.size)
        out[pipe] = {"verdict": vd.label,
                     "spread": quantiles(s), "p_spread_gt_delta": p_gt, "p_spread_lt_delta": p_lt, "note": note(a)}
    return out


def _sensitivity_fit(model: FittedModel, delta: float, alpha: float | Spending = ALPHA) -> dict[str, dict[str, Any]]:
    """Refit with every diverged run counted at chance accuracy."""
    d = model.data
    if d.diverged is None or not d.diverged.any():
        return {}
    if d.chance is None:
        return {pipe: {"verdict": None, "spread": None, "p_spread_gt_delta": None, "p_spread_lt_delta": None,
                       "note": "no chance level for this metric (not an accuracy with labels): not computed"}
                for a, pipe in enumerate(d.pipelines) if d.diverged[a].any()}
    return _refit_with(model, d.diverged, np.full_like(d.y, d.chance), delta, alpha,
                       lambda a: f"refit with the {int(d.diverged[a].sum())} diverged run(s) at chance accuracy "
                                 f"{d.chance:.3g}")


def _put_back_fit(model: FittedModel, delta: float, alpha: float | Spending = ALPHA) -> dict[str, dict[str, Any]]:
    """Survivorship: refit with every run the gate left out (it never interpolated) put back at its final test
    accuracy. At large sigma_w the slow seeds are the ones left out, so the gated runs are not missing at
    random; the verdict should not hinge on leaving them out."""
    d = model.data
    if d.gated is None or d.put_back is None:
        return {}
    cells = d.gated & np.isfinite(d.put_back)
    if not cells.any():
        return {}
    return _refit_with(model, cells, np.nan_to_num(d.put_back), delta, alpha,
                       lambda a: f"refit with the {int(cells[a].sum())} run(s) that never interpolated put back at "
                                 "their final test accuracy")


def put_back_direction(fit_median: float, refit_median: float, delta: float) -> str:
    """Where the survivorship refit moves the spread's median relative to delta: ``"further"`` (the same side, at
    least as far), ``"towards"`` (the same side, closer) or ``"across"`` (the other side, or onto delta).

    A verdict that the put-back runs change while moving the spread further from delta changes because they add
    noise (slow runs are noisy), not because they point the other way: a "remembers" whose lost runs at the large
    sigma_w are worse still has more memory with them, not less."""
    a, b = fit_median - delta, refit_median - delta
    if a == 0 or b == 0 or (a > 0) != (b > 0):
        return "across"
    return "further" if abs(b) >= abs(a) else "towards"


def _spread_text(d: MemoryData, x: float) -> str:
    return f"{100 * x:.2f} points" if d.is_accuracy else f"{x:.4g}"


def _missingness(model: FittedModel, a: int, pipe: str, vd: str, sensitivity: dict | None,
                 fit_median: float, delta: float) -> dict[str, Any]:
    """Whether the runs the verdict leaves out (gated out, failed, missing) depend on sigma_w, and what the
    verdict becomes with the gated ones put back; a warning when either should change the reading. The p-value
    is models/data.py's Bonferroni combination of an omnibus test (any pattern over the levels) and an exact trend
    test in log sigma_w (losses piled at one end), so the warning fires on either and keeps its level. Runs with
    no final value (failed, missing) cannot be put back: the warning then says the refit is impossible."""
    d = model.data
    gated = d.gated[a] if d.gated is not None else np.zeros_like(d.used[a])
    lost = d.lost[a] if d.lost is not None else gated
    no_value = d.lost_without_value(a)
    p_value = d.missingness_p.get(pipe)
    trend_p = d.missingness_trend_p.get(pipe)
    omnibus_p = d.missingness_omnibus_p.get(pipe)
    depends = p_value is not None and p_value < ALPHA
    changes = sensitivity is not None and sensitivity.get("verdict") not in (None, vd)
    refit_median = ((sensitivity or {}).get("spread") or {}).get("median")
    direction = (put_back_direction(fit_median, refit_median, delta)
                 if refit_median is not None and np.isfinite(refit_median) else None)
    refit = None
    if no_value.any():
        which = ("none of them has a" if int(no_value.sum()) == int(lost.sum())
                 else f"{int(no_value.sum())} of them have no")
        refit = (f"{which} final accuracy to put back (failed or missing runs), so no sensitivity refit can "
                 "include them: the verdict rests on the runs that survived")
    warning = None
    if depends or changes:
        parts = [f"{int(lost.sum())} run(s) were left out ({int(gated.sum())} never interpolated, "
                 f"{int(lost.sum()) - int(gated.sum())} failed or missing)"]
        if depends:
            parts.append(f"runs left out depend on sigma_w (p = {p_value:.3g}, twice the smaller of the chi-square "
                         f"permutation test, {_p(omnibus_p)}, and the exact trend test in log sigma_w, {_p(trend_p)})")
        if sensitivity is not None:
            parts.append(f"put back at their final accuracy the verdict becomes {sensitivity['verdict']!r}"
                         if changes else "put back at their final accuracy the verdict stands")
            if changes and direction is not None:
                where = {"further": "further from delta", "towards": "towards delta", "across": "across delta"}
                parts.append(f"the spread moves {where[direction]} ({_spread_text(d, fit_median)} -> "
                             f"{_spread_text(d, refit_median)})" + (": the runs put back add noise, not doubt "
                                                                   "about the direction" if direction == "further"
                                                                   else ""))
        if refit is not None:
            parts.append(refit)
        warning = "; ".join(parts) + " (survivorship: docs/memory-model.md)"
    return {"n_gated": int(gated.sum()), "n_lost": int(lost.sum()), "n_without_value": int(no_value.sum()),
            "by_sigma_w": {sigma_key(s): int(n) for s, n in zip(d.sigma_w, gated.sum(axis=1), strict=True) if n},
            "lost_by_sigma_w": {sigma_key(s): int(n) for s, n in zip(d.sigma_w, lost.sum(axis=1), strict=True) if n},
            "p_value": p_value, "p_trend": trend_p, "p_omnibus": omnibus_p,
            "depends_on_sigma_w": bool(depends), "verdict_changes": bool(changes), "put_back_direction": direction,
            "refit_impossible": refit, "warning": warning, "sensitivity": sensitivity}


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"p = {p:.3g}"


def summarize_model(model: FittedModel, delta: float, alpha: float | Spending = ALPHA,
                    failed: dict[str, str | None] | None = None, *,
                    ppc: dict[str, dict[str, dict[str, float]]] | None = None,
                    diagnostics: dict[str, dict[str, Any]] | None = None) -> dict[str, PipelineResult]:
    """The per-pipeline entries of summary.json (schema initmem.summary/2) that models/ owns, each a typed
    :class:`~initmem.results.records.PipelineResult` from the moment it is made: later steps (the model checks,
    the frequentist cross-check, the radial verdict) return new records (``Record.replaced``). ``alpha`` is
    each false verdict's rate: "remembers" needs the ordered test at alpha with the model agreeing (P >= 1/2),
    "forgets" comes from P >= 1 - alpha/2 or the intersection-union test at 0.8 alpha (models/paired.py,
    ``forgets_levels``). A look of the sequential design passes its :class:`Spending` (analysis/sequential.py):
    each share is then spent from its own allotment, and the model's route to "forgets" closes where the draws
    cannot resolve its threshold (:func:`model_thresholds`). ``failed``: per pipeline, what failed in its fit's
    sampler diagnostics (None or absent: nothing); a pipeline whose fit failed is decided by the design-based tests
    alone, with a note. ``ppc`` (``MemoryModel.ppc``) and ``diagnostics`` (per pipeline, the sampler's), where given,
    go into the entry as it is made: the model checks with the names of the failed ones and a warning on the verdict
    (:func:`checked`), and the diagnostics."""
    post = model.idata.posterior
    d = model.data
    level = as_spending(alpha)
    sens = _sensitivity_fit(model, delta, alpha)
    put_back = _put_back_fit(model, delta, alpha)
    out: dict[str, PipelineResult] = {}
    for a, pipe in enumerate(d.pipelines):
        def q(name: str, _a: int = a) -> dict[str, float]:
            return quantiles(post[name].values[..., _a])

        spread = post["spread"].values[..., a]
        p_gt, m_gt = probability_with_mcse(spread > delta)
        p_lt, m_lt = probability_with_mcse(spread < delta)
        lev = d.level_mask[a]
        exp_ = expected_levels(model, a)
        med = np.median(exp_, axis=0)
        fit_failed = (failed or {}).get(pipe)
        decided, check, equiv = decide_pipeline(model, a, delta, level, (p_gt, p_lt), (m_gt, m_lt), spread.size,
                                                med, model_ok=fit_failed is None)
        near = decided.near_ceiling
        vd, model_vd, model_for, ok_for = decided.label, decided.model_label, decided.model_forgets_ok, decided.iut_ok
        shown, model_shown = N.verdict_text(vd, decided.borderline), N.verdict_text(model_vd, decided.model_borderline)
        flat = spread.ravel()
        reported, interval_source = spread_interval(model, a, flat, med)
        entry: dict[str, Any] = {
            "n_sigma": int(lev.sum()), "n_seed": int(d.seed_mask[a].sum()), "n_cells": int(d.used[a].sum()),
            "sigma_sd": q("sigma_sd"), "seed_sd": q("seed_sd"), "slope_sd": q("slope_sd"),
            "residual_sd": q("residual_sd"),
            "memory_share": q("memory_share"), "spread": reported, "spread_model": quantiles(flat),
            "spread_interval": interval_source,
            "p_spread_gt_delta": p_gt, "p_spread_lt_delta": p_lt,
            "mcse": {"p_spread_gt_delta": m_gt, "p_spread_lt_delta": m_lt},
            **decided.fields(),
            "paired_check": check, "equivalence_check": equiv, "prior": _prior_only(model, a, delta),
            "estimand": estimand(model), "likelihood": d.likelihood,
            "noise_scale": float(d.scale[a]),
            "test_set_se": d.test_set_se.get(pipe),
            "expected": {"sigma_w": d.sigma_w[lev].tolist(), "median": med.tolist(),
                         "q05": np.quantile(exp_, 0.05, axis=0).tolist(),
                         "q95": np.quantile(exp_, 0.95, axis=0).tolist()},
            "shares": {"sigma": q("memory_share"), "seed": q("seed_share"), "slope": q("slope_share"),
                       "residual": q("residual_share")},
            "n_excluded": d.n_excluded[pipe],
            "prior_sensitivity": _prior_sensitivity(model, a, flat, delta, decided),
            "interpolation": d.interpolation[pipe],
            "divergence": _divergence(model, a, pipe, sens.get(pipe)),
            "missingness": _missingness(model, a, pipe, vd, put_back.get(pipe), float(np.median(flat)), delta),
            "notes": list(d.notes),
        }
        notes = entry["notes"]
        if fit_failed is not None:
            notes.append(
                f"the fit's sampler diagnostics failed ({fit_failed}), so the model decides nothing here: the verdict "
                "rests on the seeds' design-based tests alone (the ordered paired test for 'remembers', the "
                "intersection-union test for 'forgets'), and the model's interval is shown but not trusted "
                "(docs/memory-model.md, 'Verdict')")
        elif near and (equiv["supports_forgets"] or (model_vd == N.FORGETS and model_for)):
            notes.append(ceiling_note(vd, ok_for, equiv))
        elif model_shown != shown and vd == N.FORGETS:
            notes.append(
                f"the model alone says {model_shown!r}; the seeds' paired differences show every pair of sigma_w "
                f"levels inside +-delta (intersection-union test, p = {equiv['p_value']:.3g}; models/paired.py), which "
                "decides 'forgets' on its own (docs/memory-model.md, 'Verdict')")
        elif model_vd == N.FORGETS and not model_for:
            notes.append(
                f"the model alone says 'forgets', but with {int(d.level_mask[a].sum())} sigma_w levels its "
                "P(spread < delta) is the prior's more than the data's; 'forgets' needs the intersection-union test "
                "here (docs/memory-model.md, 'Verdict')")
        elif model_vd == N.FORGETS and decided.crossed and vd != N.FORGETS:
            notes.append(crossed_note(equiv))
        elif model_shown != shown and vd == N.REMEMBERS:
            notes.append(
                f"the model alone says {model_shown!r} (P(spread > delta) = {p_gt:.3g}, below 1 - alpha): it shrinks "
                "the level effects, and the seeds' paired differences carry 'remembers' on their own (ordered test, "
                f"adjusted p = {check['p_value']:.3g}), with the model agreeing that the spread is more likely above "
                "delta than below (docs/memory-model.md, 'Verdict')")
        elif model_shown != shown:
            pc = check["p_value"]
            notes.append(
                f"the model alone says {model_shown!r}, but the seeds' paired differences do not carry it "
                f"(ordered test, adjusted p = {'n/a' if pc is None else f'{pc:.3g}'} against delta; models/paired.py): "
                "a spread larger than delta rests on the model's noise assumptions here (docs/memory-model.md, "
                "'Verdict')")
        for part in ("divergence", "missingness"):
            if entry[part]["warning"]:
                notes.append(entry[part]["warning"])
        if entry["interpolation"]["levels_without_interpolation"]:
            notes.append("sigma_w level(s) without an interpolating run, left out: " + ", ".join(
                f"{s:g}" for s in entry["interpolation"]["levels_without_interpolation"]))
        if ppc is not None:
            entry["ppc"] = ppc.get(pipe, {})
            entry["checks_failed"], warning = _checks(entry["ppc"])
            notes += [warning] if warning else []
        if diagnostics is not None:
            entry["diagnostics"] = diagnostics[pipe]
        out[pipe] = PipelineResult.model_validate(json_safe(entry))
    return out


def decide_pipeline(model: FittedModel, a: int, delta: float, alpha: float | Spending,
                    p: tuple[float, float], mcse: tuple[float, float] | None, draws: int,
                    medians: np.ndarray | None = None, model_ok: bool = True,
                    ) -> tuple[Verdict, dict[str, Any], dict[str, Any]]:
    """The verdict of pipeline ``a`` of a fitted model from its posterior probabilities: the seeds' design-based
    tests of its table (:func:`_tests`), whether it is near the ceiling, and whether its seeds are a crossed
    design, put through :func:`decide`. The one place that reads those facts off the model, so the fit and its
    sensitivity refits decide by the same rule.

    Parameters
    ----------
    model : FittedModel
        The fit (its ``data`` and posterior ``expected``).
    a : int
        The pipeline's index.
    delta : float
        The smallest spread that matters, in outcome units.
    alpha : float or Spending
        The analysis's level, or a sequential look's spending.
    p : tuple of float
        P(spread > delta) and P(spread < delta).
    mcse : tuple of float, optional
        Their Monte Carlo standard errors.
    draws : int
        Posterior draws behind the probabilities.
    medians : numpy.ndarray, optional
        The posterior median of the expected outcome per level, when the caller has it (:func:`near_ceiling`).
    model_ok : bool
        The fit's sampler diagnostics passed (:func:`decide`).

    Returns
    -------
    tuple
        The :class:`Verdict`, the ordered paired test and the intersection-union test (models/paired.py).
    """
    d = model.data
    check, equiv = _tests(model, a, delta, alpha=alpha)
    return (decide(p[0], p[1], level=alpha, mcse=mcse, check=check, equivalence=equiv,
                   near=near_ceiling(model, a, medians), n_levels=int(d.level_mask[a].sum()), draws=draws,
                   crossed=d.crossed_seeds is not None, model_ok=model_ok), check, equiv)


def crossed_note(equivalence: dict[str, Any]) -> str:
    """The note on a pipeline of a crossed seed design that the model alone calls "forgets" and the
    intersection-union test does not."""
    p = equivalence.get("p_value")
    return ("the model alone says 'forgets', but the seeds are a crossed init x data design and the model reads "
            "every run as a seed of its own (runs sharing an init or data seed are not independent, so its "
            "P(spread < delta) is overconfident); on a crossed design 'forgets' needs the intersection-union test "
            f"on the crossed blocks, which does not show every pair of sigma_w levels inside +-delta ({_p(p)}; "
            "models/paired.py, docs/crossed.md)")


def ceiling_note(final: str, iut_ok: bool, equivalence: dict[str, Any]) -> str:
    """The note on a pipeline near the ceiling that one route or both called "forgets"."""
    head = (f"accuracy within {100 * (1 - CEILING):g} point of 100%: the seeds' differences are skewed there, and "
            "either route to 'forgets' alone was wrong more often than alpha at a spread of exactly delta, so "
            "'forgets' needs both the model and the intersection-union test here (docs/memory-model.md, "
            "'Near the ceiling')")
    tau, bound = equivalence.get("seed_log_sd"), equivalence.get("log_ratio_bound")
    gated = tau is not None and tau >= SKEW_GATE      # the skew gate asked the log-ratio test too
    if gated:
        shown = "every pair within " + (f"{100 * bound:.2f} points" if np.isfinite(bound) else "no bound")
        head += (f"; the seeds' errors are strongly multiplicative (SD of their log across seeds {tau:.2f}, at least "
                 f"{SKEW_GATE:g}), where the paired t exceeds its level, so 'forgets' also needs the log-ratio test "
                 f"({shown}; docs/memory-model.md, 'The skew gate')")
    if final == N.FORGETS:
        agree = "all three agree" if gated else "both agree"
        return head + (f"; {agree}, but on held-out designs where some seeds have several times the errors of the "
                       "others at every level (10-30% of the seeds: wrong up to 11% of the time; rarer such seeds: "
                       "more, since a sample that holds none cannot show them) 'forgets' was still wrong more often "
                       "than alpha")
    if equivalence.get("supports_forgets") and not iut_ok:
        return head + ("; the intersection-union test says 'forgets', but the log-ratio test does not show every pair "
                       "inside")
    return head + f"; only the {'intersection-union test' if iut_ok else 'model'} says 'forgets'"


def _checks(ppc: dict[str, dict[str, float]]) -> tuple[list[str], str | None]:
    """The names of the failed model checks of one pipeline, and the warning on its verdict (None: none failed)."""
    failed = checks.failures(ppc)
    return failed, checks.warning_text(failed, ppc)


def checked(entry: PipelineResult, ppc: dict[str, dict[str, float]]) -> PipelineResult:
    """``entry`` with its model checks (``MemoryModel.ppc``), the names of the failed ones and a warning on the
    verdict when any failed: a new record, the entry itself is left as it was."""
    failed, text = _checks(ppc)
    return entry.replaced(ppc=ppc, checks_failed=failed, notes=[*entry.notes, *([text] if text else [])])


def attach_checks(pipelines: dict[str, dict[str, Any]], ppc: dict[str, dict[str, dict[str, float]]]) -> None:
    """Put each pipeline's model checks (``MemoryModel.ppc``) into its entry of ``MemoryModel.summarize``'s plain
    dicts, with the names of the failed ones and a warning on the verdict when any failed (:func:`checked` does the
    same for a typed entry)."""
    for pipe, entry in pipelines.items():
        entry["ppc"] = ppc.get(pipe, {})
        failed, text = _checks(entry["ppc"])
        entry["checks_failed"] = failed
        if text:
            entry["notes"].append(text)


__all__ = ["AGREE", "DECISION", "MIN_LEVELS_MODEL_FORGETS", "N_DRAWS", "RESOLVE", "RULES", "VERDICTS", "attach_checks",
           "binomial_mcse", "checked", "crossed_note", "decide_pipeline",
           "decision_rule", "estimand", "mcse_floor", "model_thresholds", "probability_with_mcse", "quantiles",
           "summarize_model", "verdict", "verdict_flagged"]

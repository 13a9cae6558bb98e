"""The typed records of the analysis folder's two JSON files, ``summary.json`` and ``collapse.json``.

Every field of ``summary.json`` (schema ``initmem.summary/2``) and ``collapse.json`` (schema
``initmem.collapse/3``) is a typed attribute here, documented field by field in
docs/analysis-folder.md, so a renamed or mistyped field fails where it is produced instead of
silently dropping out of the report. Reading and writing the files is :mod:`initmem.results`
(which re-exports every record); this module only says what the files hold.

Records accept extra keys (``extra="allow"``): the statistics may report more than the contract
names (a collapse test's bandwidths, say) and those travel through unchanged, but nothing in the
report reads an extra key.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from initmem.jsonio import json_safe
from initmem.names import (
    ESS_MIN,
    FORGETS,
    POSTERIOR_NC,
    REMEMBERS,
    RETIRED_VERDICTS,
    RHAT_MAX,
    UNDECIDED,
    VERDICTS,
    verdict_text,
)

SUMMARY_SCHEMA = "initmem.summary/2"
# How a verdict that the survivorship check overturns (PipelineResult.survivorship_overturned) is marked where shown.
SURVIVORSHIP_MARK = "overturned by survivorship"
COLLAPSE_SCHEMA = "initmem.collapse/3"



# The units summary.json's numbers are in (``Summary.units``). An older file's crossed block said "points" over
# fractions and "outcome units" for other metrics: both read as today's words.
FRACTION, METRIC_UNITS = "fraction", "metric units"
UNIT_WORDS = {"points": FRACTION, "outcome units": METRIC_UNITS}


def summary_units(is_accuracy: bool) -> dict[str, str]:
    """The unit of every number summary.json holds, by field: what ``Summary.units`` records.

    Why: the report and the command line speak in accuracy points, the file in fractions of the test set; a
    reader of the file must not have to guess which.

    Examples
    --------
    >>> summary_units(True)["delta"], summary_units(False)["delta"]
    ('fraction', 'metric units')
    """
    outcome = FRACTION if is_accuracy else METRIC_UNITS
    return {
        "delta": outcome,
        "pipelines.*.spread, spread_model, expected, sigma_sd, seed_sd, slope_sd, residual_sd, noise_scale, "
        "test_set_se": outcome,
        "pipelines.*.frequentist.reml": outcome,
        "pipelines.*.effect_sizes.spread_points": "points" if is_accuracy else METRIC_UNITS,
        "pipelines.*.memory_share, shares": "share of the variance (0 to 1)",
        "pipelines.*.p_spread_gt_delta, p_spread_lt_delta, mcse, prior": "probability",
        "pipelines.*.radial.slope, q05, q95, margin": "slope of log kernel norm on log sigma_w (1 at initialization)",
        "pipelines.*.forgetting_time": "each axis's own units (epochs, steps, or the clock's)",
        "crossed.margin, crossed.pipelines.*.sd_*": outcome,
        "alpha, crossed.alpha": "probability",
    }


def current_word(value: Any) -> Any:
    """A verdict word as this release writes it: an older summary.json's "inconclusive" or "borderline" reads as
    "undecided" (names.RETIRED_VERDICTS; :class:`PipelineResult` also sets its ``borderline`` flag).

    Examples
    --------
    >>> current_word("inconclusive"), current_word("borderline"), current_word("remembers")
    ('undecided', 'undecided', 'remembers')
    """
    return RETIRED_VERDICTS.get(value, value) if isinstance(value, str) else value


Verdict = Annotated[Literal[VERDICTS], BeforeValidator(current_word)]  # type: ignore[valid-type]
VerdictWord = Annotated[str, BeforeValidator(current_word)]  # a verdict in a sensitivity refit, a look, a test
Gate = Literal["interpolated", "all"]
GATES: tuple[str, ...] = ("interpolated", "all")
Likelihood = Literal["per_example", "counts", "gaussian"]
# The observation model in a few words, one name in every place (the command line, Summary's repr, the report's
# header): the likelihood is Gaussian whatever ``family`` says ("binomial" only picks the counts' noise scale).
LIKELIHOOD_LABELS: dict[str, str] = {
    "per_example": "Gaussian likelihood, noise scale from the per-example predictions (independent errors; near "
                   "100% the seeds' SD if larger)",
    "counts": "Gaussian likelihood, noise scale from the binomial bound of the test counts (near 100% the seeds' SD "
              "if larger)",
    "gaussian": "Gaussian likelihood, noise scale from the pooled seed SD",
}
CollapseVerdict = Literal["clock_better", "epoch_better", "no_difference", "not_identifiable"]
Adjustment = Literal["holm", "max_statistic"]

Num = float | None  # a statistic; null in JSON when it could not be computed


class Record(BaseModel):
    """Base of every record: extra keys travel through; attributes are what readers may use."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-safe dict (NaN -> null), without keys left unset on optional records."""
        return json_safe(self.model_dump(mode="python", exclude_unset=False, by_alias=True))

    def replaced(self: Rec, **changes: Any) -> Rec:
        """A new record with ``changes``, validated as the record itself is: how a later step of an analysis adds
        to a record (the model checks, the frequentist cross-check, the radial verdict) without editing it.

        Why not ``model_copy(update=...)``: that stores an update unvalidated, so a nested dict would stay a dict
        and serialize in its own key order rather than the record's.

        Examples
        --------
        >>> q = Quantiles(median=1.0, q05=0.5, q95=2.0)
        >>> q.replaced(q95=3.0), q.q95
        (Quantiles(median=1.0, q05=0.5, q95=3.0), 2.0)
        """
        return type(self).model_validate({**dict(self), **json_safe(changes)})


Rec = TypeVar("Rec", bound=Record)


class Quantiles(Record):
    """Posterior (or bootstrap) median and 90% interval of one quantity."""

    model_config = ConfigDict(extra="forbid")
    median: Num
    q05: Num
    q95: Num


class Expected(Record):
    """The expected metric at each sigma_w level, seed and residual averaged out."""

    sigma_w: list[float]
    median: list[Num]
    q05: list[Num]
    q95: list[Num]


class Shares(Record):
    sigma: Quantiles
    seed: Quantiles
    residual: Quantiles
    slope: Quantiles | None = None


class PpcStat(Record):
    """A posterior predictive check of one statistic: observed value, replicate interval, p."""

    observed: Num = None
    p_value: Num = None
    q05: Num = None
    q95: Num = None


class PipelineDiagnostics(Record):
    max_rhat: Num = None
    min_ess_bulk: Num = None
    divergences: int | None = None


class Reml(Record):
    sigma_sd: Num = None
    seed_sd: Num = None
    residual_sd: Num = None
    singular: bool | None = None
    method: str | None = None
    reml_loglik: Num = None


class TestResult(Record):
    """One frequentist test: its statistic(s) and p-value, raw and Holm-adjusted across pipelines."""

    p: Num = None
    p_holm: Num = None
    F: Num = None
    Q: Num = None
    ng2: Num = None
    equivalent: bool | None = None
    delta: Num = None


class Frequentist(Record):
    reml: Reml = Field(default_factory=Reml)
    rm_anova: TestResult = Field(default_factory=TestResult)
    friedman: TestResult = Field(default_factory=TestResult)
    tost: TestResult = Field(default_factory=TestResult)
    min_effect: TestResult | None = None
    verdict: VerdictWord | None = None


class Estimate(Record):
    """A point estimate with its 90% interval."""

    estimate: Num = None
    q05: Num = None
    q95: Num = None


class EffectSizes(Record):
    """Effect sizes of the frequentist cross-check (docs/frequentist.md); more may be added."""

    spread_points: Estimate = Field(default_factory=Estimate)  # spread in points (or outcome units)
    spread_over_seed_sd: Num = None
    omega_sq: Num = None
    units: str | None = None


class Mcse(Record):
    """Monte Carlo standard errors of the two verdict probabilities."""

    p_spread_gt_delta: Num = None
    p_spread_lt_delta: Num = None


class PriorSensitivity(Record):
    """The verdict refitted under a second prior (``prior`` describes it in one line)."""

    prior: str
    p_spread_gt_delta: Num = None
    p_spread_lt_delta: Num = None
    verdict: VerdictWord


class Interpolation(Record):
    """How many cells reached the interpolation threshold, overall and per sigma_w level."""

    n_cells: int
    n_interpolated: int
    by_sigma_w: dict[str, int] = Field(default_factory=dict)
    levels_without_interpolation: list[float] = Field(default_factory=list)
    gate: Gate = "interpolated"


class DivergenceSensitivity(Record):
    """A sensitivity refit: the verdict with left-out runs put in (diverged runs at chance accuracy, runs that
    never interpolated at their final accuracy)."""

    verdict: VerdictWord | None
    spread: Quantiles
    p_spread_gt_delta: Num = None
    p_spread_lt_delta: Num = None
    note: str = ""


class PairedCheck(Record):
    """The seeds' own test of "remembers" (models/paired.py): paired differences between levels,
    the ordered test (``step``: the extreme pair, or the fallback over the other pairs)."""

    p_value: Num = None
    supports_remembers: bool = False
    n_pairs: int = 0
    test: str = ""
    pair: dict[str, float] | None = None
    step: str | None = None


class EquivalenceCheck(Record):
    """The intersection-union test of "forgets" (models/paired.py): every pair of levels inside
    +-delta; ``pair`` is the one furthest from being shown inside."""

    p_value: Num = None
    supports_forgets: bool = False
    n_pairs: int = 0
    test: str = ""
    pair: dict[str, float] | None = None
    # the skew gate (paired accuracies; the verdict reads it near the ceiling): the seeds' log-error SD, the
    # log-ratio test's bound on every pair's difference, and whether the gate lets "forgets" through
    seed_log_sd: Num = None
    log_ratio_bound: Num = None
    multiplicative_ok: bool | None = None


class Missingness(Record):
    """Survivorship (models/summaries.py): runs the gate left out (never interpolated) and runs lost, tested for
    dependence on sigma_w, and the verdict with the gated runs put back at their final accuracy."""

    n_gated: int = 0
    by_sigma_w: dict[str, int] = Field(default_factory=dict)
    p_value: Num = None            # permutation test: do lost runs depend on sigma_w
    depends_on_sigma_w: bool = False
    verdict_changes: bool = False  # the put-back refit gives another verdict
    put_back_direction: str | None = None  # the refit's spread against the fit's: further from / towards / across delta
    warning: str | None = None
    sensitivity: DivergenceSensitivity | None = None


class RadialVerdict(Record):
    """Whether the final kernel norms still carry the initial scale (stats/radial.py, docs/radial-verdict.md):
    the mean over seeds of the slope of log ||W_final|| on log sigma_w against a stated margin."""

    margin: float
    n: int = 0            # seeds (paired) or runs (independent seeds) behind the slope
    unit: str = "seeds"
    slope: Num = None     # 1 at initialization, 0 when the scale is forgotten
    q05: Num = None       # 90% t interval of the slope
    q95: Num = None
    p_keeps: Num = None   # one-sided t test, H0: slope <= margin
    p_forgets: Num = None  # two one-sided t tests, H0: |slope| >= margin
    verdict: VerdictWord = UNDECIDED


class Look(Record):
    """One look of a sequential run (analysis/sequential.py): the seeds then, the look's level, its verdict."""

    look: int
    seeds: int
    level: float
    verdict: VerdictWord | None = None
    p_spread_gt_delta: Num = None
    p_spread_lt_delta: Num = None


class Sequential(Record):
    """The sequential design of ``initmem run --until-decided`` (docs/sequential.md)."""

    design: str = ""
    alpha: float = 0.05
    looks: list[int] = Field(default_factory=list)
    levels: list[float] = Field(default_factory=list)
    decided: dict[str, dict[str, Any]] = Field(default_factory=dict)  # pipeline -> verdict, look, seeds
    undecided: list[str] = Field(default_factory=list)
    seeds_used: dict[str, int] = Field(default_factory=dict)
    runs_used: int = 0
    runs_fixed: int = 0  # what the fixed design with the last look's seeds trains
    max_seeds: int | None = None  # --max-seeds, the cap the looks were cut at (None: no cap)


class SpendingInfo(Record):
    """What an analysis spends (models/sequential.py, ``Spending``): the design's alpha, and at a look of a
    sequential design its looks, the look (1 = first) and the design; ``level`` is the full share's level here."""

    alpha: float = 0.05
    looks: list[int] | None = None
    look: int | None = None
    design: str | None = None
    level: float | None = None
    draws: int | None = None     # posterior draws: they set the finest model threshold (models/summaries.py)


class PriorOnly(Record):
    """What the prior alone says about the verdict (before any data)."""

    sigma_sd_scale: Num = None
    p_spread_gt_delta: Num = None
    p_spread_lt_delta: Num = None
    note: str | None = None


class Divergence(Record):
    """Diverged runs per sigma_w and whether divergence itself depends on sigma_w."""

    n_diverged: int
    by_sigma_w: dict[str, int] = Field(default_factory=dict)
    depends_on_sigma_w: bool = False
    p_value: Num = None
    warning: str | None = None
    sensitivity: DivergenceSensitivity | None = None


class ForgettingTime(Record):
    """One pipeline's forgetting time on one axis, in that axis's units."""

    median: Num = None
    q05: Num = None
    q95: Num = None
    censored: bool = False


class PipelineResult(Record):
    """One pipeline's entry in ``summary.json`` (docs/analysis-folder.md, "pipelines")."""

    n_sigma: int
    n_seed: int
    n_cells: int | None = None
    sigma_sd: Quantiles
    seed_sd: Quantiles
    slope_sd: Quantiles | None = None
    residual_sd: Quantiles
    memory_share: Quantiles
    spread: Quantiles        # the model's median; its interval held to the seeds' own (models/summaries.py)
    p_spread_gt_delta: Num
    p_spread_lt_delta: Num = None
    verdict: Verdict
    expected: Expected | None = None
    shares: Shares | None = None
    n_excluded: int | dict[str, int] | None = None
    ppc: dict[str, PpcStat] = Field(default_factory=dict)
    diagnostics: PipelineDiagnostics = Field(default_factory=PipelineDiagnostics)
    frequentist: Frequentist | None = None
    agreement: bool | None = None
    disagreements: list[str] = Field(default_factory=list)
    effect_sizes: EffectSizes | None = None
    notes: list[str] = Field(default_factory=list)
    # summary/2 additions: optional so a fit without them still validates.
    mcse: Mcse | None = None
    borderline: bool | None = None
    estimand: str | None = None
    likelihood: Likelihood | None = None
    prior_sensitivity: PriorSensitivity | None = None
    interpolation: Interpolation | None = None
    divergence: Divergence | None = None
    forgetting_time: dict[str, ForgettingTime] = Field(default_factory=dict)
    noise_scale: Num = None  # run-to-run noise SD the model standardises by (docs/memory-model.md)
    test_set_se: Num = None  # extra SE of the spread if the estimand were the test distribution
    model_verdict: Verdict | None = None   # the model's verdict before the paired check
    paired_check: PairedCheck | None = None
    rule: str | None = None   # the route that decided (models/summaries.py, RULES): model, ordered test, IUT
    equivalence_check: EquivalenceCheck | None = None
    prior: PriorOnly | None = None
    checks_failed: list[str] = Field(default_factory=list)  # model checks outside their predictive band
    radial: RadialVerdict | None = None  # the mechanism readout beside the accuracy verdict
    missingness: Missingness | None = None  # survivorship: runs the gate left out, and the verdict without the gate
    looks: list[Look] = Field(default_factory=list)  # a sequential run's verdict per look
    near_ceiling: bool | None = None  # accuracy within 1 point of 100%: "forgets" needs both routes and the skew gate
    decided_look: int | None = None  # a sequential run: the look (1 = first) whose analysis this entry is, if decided
    spread_model: Quantiles | None = None  # the model's own posterior quantiles of the spread
    spread_interval: str | None = None  # what set the reported interval: "model", or the pair of levels that widened it

    @model_validator(mode="before")
    @classmethod
    def _borderline_was_a_verdict(cls, data: Any) -> Any:
        """An older summary.json wrote "borderline" as the verdict: it reads as "undecided" with the flag set."""
        if isinstance(data, dict) and data.get("verdict") == "borderline":
            data = {**data, "borderline": True}
        return data

    @property
    def shown_verdict(self) -> str:
        """The verdict as a reader sees it: "undecided (borderline)" for a flagged undecided verdict."""
        return verdict_text(self.verdict, self.borderline)

    @property
    def survivorship_overturned(self) -> bool:
        """Whether the survivorship check overturns this verdict: a "remembers" or "forgets" whose refit with the
        runs the gate left out put back at their final value (``missingness.sensitivity``) gives another verdict
        while moving the spread towards or across delta (``put_back_direction``; an unknown direction counts). A
        refit that moves the spread further from delta only adds the slow runs' noise, and does not overturn.
        Such a verdict is marked wherever it is shown and is not counted among the decided rows
        (docs/memory-model.md, "Survivorship")."""
        mi = self.missingness
        return (self.verdict in (REMEMBERS, FORGETS) and mi is not None and mi.verdict_changes
                and mi.put_back_direction != "further")

    @property
    def marked_verdict(self) -> str:
        """:attr:`shown_verdict`, with :data:`SURVIVORSHIP_MARK` after a verdict the survivorship check overturns."""
        return f"{self.shown_verdict} ({SURVIVORSHIP_MARK})" if self.survivorship_overturned else self.shown_verdict

    @property
    def n_excluded_total(self) -> int | None:
        """Excluded cells summed over reasons (diverged, failed, missing)."""
        if isinstance(self.n_excluded, dict):
            return int(sum(self.n_excluded.values()))
        return self.n_excluded


DrawVerdict = Literal["keeps its draw", "forgets its draw", "undecided"]
DRAW_VERDICTS: tuple[str, ...] = ("keeps its draw", "forgets its draw", "undecided")
# The radial verdict's words (stats/radial.py decides it; :class:`RadialVerdict` holds it): one owner for the test,
# the record and the rule table (models/rules.py, READOUTS).
RADIAL_VERDICTS: tuple[str, ...] = ("keeps the initial scale", "forgets the scale", UNDECIDED)


class Bounds(Record):
    """A frequentist estimate with its two-sided 90% confidence interval (each bound one-sided 95%: the bounds the
    draw verdict reads)."""

    estimate: Num = None
    lower: Num = None
    upper: Num = None


class PosteriorBounds(Record):
    """A posterior median with its 90% credible interval."""

    median: Num = None
    lower: Num = None
    upper: Num = None


class CrossedBayes(Record):
    """The Bayesian crossed model's posterior of the same components, and P(SD_init > margin)."""

    sd_init: PosteriorBounds = Field(default_factory=PosteriorBounds)
    sd_data: PosteriorBounds = Field(default_factory=PosteriorBounds)
    sd_resid: PosteriorBounds = Field(default_factory=PosteriorBounds)
    init_share: PosteriorBounds = Field(default_factory=PosteriorBounds)
    p_sd_init_gt_margin: Num = None


class CrossedLevel(Record):
    """The variance components within one sigma_w level (descriptive: the verdict pools the levels)."""

    sigma_w: float
    sd_init: Bounds = Field(default_factory=Bounds)
    sd_data: Bounds = Field(default_factory=Bounds)
    sd_resid: Bounds = Field(default_factory=Bounds)
    init_share: Bounds = Field(default_factory=Bounds)


class InitShareCurve(Record):
    """The init share (and SD_init, SD_data) at each evaluated epoch: a descriptive curve, no test."""

    epoch: list[float] = Field(default_factory=list)
    init_share: list[Num] = Field(default_factory=list)
    sd_init: list[Num] = Field(default_factory=list)
    sd_data: list[Num] = Field(default_factory=list)


class CrossedPipeline(Record):
    """One pipeline of a crossed design: the draw verdict, the components pooled over sigma_w, their posterior,
    per level, and over training (docs/crossed.md)."""

    draw_verdict: DrawVerdict | None = None  # None: no margin (a metric other than an accuracy, no draw_margin)
    sd_init: Bounds = Field(default_factory=Bounds)
    sd_data: Bounds = Field(default_factory=Bounds)
    sd_resid: Bounds = Field(default_factory=Bounds)
    init_share: Bounds = Field(default_factory=Bounds)
    bayes: CrossedBayes | None = None
    by_sigma_w: list[CrossedLevel] = Field(default_factory=list)
    init_share_curve: InitShareCurve | None = None


class Crossed(Record):
    """summary.json's ``crossed`` block: the draw verdicts of a crossed (init x data seeds) cube, absent for a
    cube with a list of seeds. SDs are in the metric's units (fractions for accuracies), ``margin`` too (None: no
    margin was given for a metric other than an accuracy, so there is no draw verdict); ``units`` says which:
    "fraction" (an accuracy as a fraction of the test set; x 100 for points) or "metric units"."""

    margin: Num = None
    alpha: float = 0.05
    units: Annotated[str, BeforeValidator(lambda v: UNIT_WORDS.get(v, v))] = "fraction"
    n_init: int
    n_data: int
    pipelines: dict[str, CrossedPipeline] = Field(default_factory=dict)

    def __repr__(self) -> str:
        """One line per pipeline: its draw verdict and SD_init [90%] (results/display.py)."""
        from initmem.results.display import crossed_text

        return crossed_text(self)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        from initmem.results.display import crossed_html

        return crossed_html(self)

    def to_frame(self) -> Any:
        """A tidy pandas DataFrame: one row per pipeline, method and quantity (results/display.py)."""
        from initmem.results.display import crossed_frame

        return crossed_frame(self)


class Attempt(Record):
    target_accept: Num = None
    tune: int | None = None
    draws: int | None = None
    flags: list[str] = Field(default_factory=list)
    sampling_seconds: Num = None


class Diagnostics(Record):
    """The sampler's diagnostics over the whole fit (per-pipeline ones live in each pipeline)."""

    sampler: str | None = None
    max_rhat: Num = None
    min_ess_bulk: Num = None
    divergences: int | None = None
    seconds: Num = None
    compile_seconds: Num = None
    sampling_seconds: Num = None
    retried: bool = False
    attempts: list[Attempt] = Field(default_factory=list)
    target_accept: Num = None
    draws: int | None = None
    tune: int | None = None
    chains: int | None = None
    seed: int | None = None
    flags: list[str] | None = None


class Outputs(Record):
    """The folder's other files, by role (null when not written)."""

    posterior: str | None = POSTERIOR_NC
    curves: str | None = None
    collapse: str | None = None


class VerdictThresholds(Record):
    """The numbers an analysis decided its verdicts at (models/rules.py ``thresholds``): the figures, the report's
    Methods and any program read these fields, never the rule's prose (``verdict_rule``). A summary.json written
    before this field existed has them rebuilt from its ``alpha``, ``spending`` and rule (models/rules.py,
    ``stored_thresholds``).

    Attributes
    ----------
    alpha : float
        The ordered paired test's level (a sequential look's full-share level).
    remembers : float
        The bar on P(spread > delta) for "remembers": the model's agreement with the ordered test.
    model_remembers : float or None
        The model's own bar on P(spread > delta) (its own verdict, without the seeds' tests).
    forgets : float or None
        The model's bar on P(spread < delta) for "forgets"; None where its route was closed.
    iut_alpha : float
        The intersection-union test's level.
    ceiling : float or None
        The expected accuracy from which "forgets" needs both routes.
    skew_gate : float or None
        The SD of the seeds' log errors from which, near the ceiling, "forgets" also needs the log-ratio test.
    min_levels_model_forgets : int or None
        The fewest sigma_w levels at which the model's route to "forgets" is open.
    """

    alpha: float
    remembers: float
    model_remembers: float | None = None
    forgets: float | None = None
    iut_alpha: float
    ceiling: float | None = None
    skew_gate: float | None = None
    min_levels_model_forgets: int | None = None


class Margins(Record):
    """The margins an analysis decided at, in the metric's units (a fraction of the test set for an accuracy).

    Attributes
    ----------
    delta : float
        The smallest spread over sigma_w that matters: the verdicts' margin.
    rope : float
        The collapse test's margin: the functional memory counts as forgotten below it (delta unless given).
    draw_margin : float or None
        The draw verdict's margin on SD_init (docs/crossed.md); None: no draw verdict (a metric that is not an
        accuracy, with no margin given).
    unit : str
        ``"fraction"`` (an accuracy, as a fraction of the test set; the report shows points) or ``"metric units"``.
    """

    delta: float
    rope: float
    draw_margin: float | None = None
    unit: str = FRACTION   # or METRIC_UNITS


class Summary(Record):
    """``summary.json`` (docs/analysis-folder.md, "summary.json")."""

    schema_: str = Field(SUMMARY_SCHEMA, alias="schema")
    metric: str
    family: str
    likelihood: Likelihood | None = None
    estimand: str | None = None
    delta: float
    margins: Margins | None = None   # delta, the rope and the draw margin, in their unit (absent in older files)
    gate: Gate | None = None
    n_test: int | None = None
    is_accuracy: bool | None = None   # the outcome is an accuracy as a fraction (decided from the data)
    pipelines: dict[str, PipelineResult]
    skipped: dict[str, str] = Field(default_factory=dict)
    n_excluded: dict[str, dict[str, int]] | dict[str, int] | int | None = None
    priors: dict[str, str] | str = Field(default_factory=dict)
    prior_values: dict[str, Any] = Field(default_factory=dict)
    model: str = ""
    verdict_rule: str = ""
    alpha: float | None = None   # the level the verdicts were decided at (a sequential look's alpha_k)
    thresholds: VerdictThresholds | None = None   # every threshold, typed (absent in files written before it)
    diagnostics: Diagnostics = Field(default_factory=Diagnostics)
    cube: str | None = None
    command: list[str] | str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    outputs: Outputs = Field(default_factory=Outputs)
    sequential: Sequential | None = None  # initmem run --until-decided: the design and what it spent
    spending: SpendingInfo | None = None  # what this analysis spent: alpha, and a sequential look's looks and look
    crossed: Crossed | None = None  # a crossed (init x data seeds) cube: the draw verdicts; absent otherwise
    units: dict[str, str] = Field(default_factory=dict)  # the unit of each number, by field (summary_units)

    def to_json(self) -> dict[str, Any]:
        """As :meth:`Record.to_json`, without a ``crossed`` key when there is no crossed block: the summary of a
        cube with a list of seeds is the file it was before crossed designs existed."""
        out = super().to_json()
        if out.get("crossed") is None:
            out.pop("crossed", None)
        return out

    def _rows(self) -> list[tuple[str, str, str]]:
        """(pipeline, verdict, spread median [90%]) per pipeline, in points for an accuracy."""
        k = 100.0 if self.is_accuracy else 1.0
        spec = ".2f" if self.is_accuracy else ".4g"

        def num(v: float | None) -> str:
            return "-" if v is None or not math.isfinite(v) else format(k * v, spec)

        return [(name, p.shown_verdict, f"{num(p.spread.median)} [{num(p.spread.q05)}, {num(p.spread.q95)}]")
                for name, p in self.pipelines.items()]

    @property
    def likelihood_label(self) -> str | None:
        """The observation model in a few words (:data:`LIKELIHOOD_LABELS`); None where the file does not say."""
        return LIKELIHOOD_LABELS.get(self.likelihood, self.likelihood) if self.likelihood else None

    def _head(self) -> str:
        unit = " points" if self.is_accuracy else ""
        delta = format(100 * self.delta, "g") if self.is_accuracy else format(self.delta, "g")
        return f"{self.metric}, delta = {delta}{unit}, {len(self.pipelines)} pipeline(s); spread median [90%]{unit}"

    def __repr__(self) -> str:
        """One line per pipeline: its verdict and spread (``print(summary)`` in a notebook reads at a glance;
        every field is still an attribute, and :meth:`to_frame` gives the numbers)."""
        rows = self._rows()
        width = max((len(n) for n, _, _ in rows), default=0)
        vwidth = max((len(v) for _, v, _ in rows), default=0)
        return "\n".join([f"Summary: {self._head()}"] + [f"  {n:<{width}}  {v:<{vwidth}}  {sp}" for n, v, sp in rows])

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """The same table as HTML, names escaped (Jupyter shows it in place of the repr)."""
        from html import escape

        body = "".join(f"<tr><td>{escape(n)}</td><td>{escape(v)}</td><td>{escape(sp)}</td></tr>"
                       for n, v, sp in self._rows())
        return (f"<p>{escape(self._head())}</p><table><thead><tr><th>pipeline</th><th>verdict</th>"
                f"<th>spread</th></tr></thead><tbody>{body}</tbody></table>")

    def to_frame(self) -> Any:
        """A tidy pandas DataFrame: one row per pipeline and quantity (the spread, the model's spread and the
        variance components), with the verdict, its borderline flag, the median and the 90% interval in the
        analysis's units.

        Examples
        --------
        >>> summary = initmem.analyze("sim.nc", "sim-analysis")          # doctest: +SKIP
        >>> summary.to_frame().query("quantity == 'spread'")              # doctest: +SKIP
        """
        import pandas as pd

        rows = []
        for name, p in self.pipelines.items():
            for quantity in ("spread", "spread_model", "sigma_sd", "seed_sd", "slope_sd", "residual_sd",
                             "memory_share"):
                q = getattr(p, quantity, None)
                if q is None:
                    continue
                rows.append({"pipeline": name, "verdict": str(p.verdict), "borderline": bool(p.borderline),
                             "quantity": quantity, "median": q.median, "q05": q.q05, "q95": q.q95})
        return pd.DataFrame(rows, columns=["pipeline", "verdict", "borderline", "quantity", "median", "q05", "q95"])


class AxisScore(Record):
    """How well one axis collapses the memory curves (extras: scored_pipelines, note, ...)."""

    loco_error: Num = None
    floor_ratio: Num = None
    overlap: Num = None
    scored_pipelines: int | list[str] | None = None
    note: str | None = None


class VsEpoch(Record):
    """One clock against epochs: collapse gain D with its interval, raw and adjusted p."""

    D: Num = None
    q05: Num = None
    q95: Num = None
    p_value: Num = None
    p_adjusted: Num = None


class Identifiability(Record):
    sd_log_ratio: Num = None
    threshold: Num = None


class ForgettingTimes(Record):
    """Per axis: every pipeline's forgetting time and their spread on the log scale."""

    fraction: Num = None
    rope: Num = None
    spread: Num = None  # collapse/3: censored pipelines kept (Tobit ML); spread_uncensored drops them
    spread_uncensored: Num = None
    n_pipelines: int = 0
    n_censored: int = 0
    per_pipeline: dict[str, ForgettingTime] = Field(default_factory=dict)


class CollapseResult(Record):
    """``collapse.json`` (docs/analysis-folder.md, "collapse.json")."""

    schema_: str = Field(COLLAPSE_SCHEMA, alias="schema")
    memory: str = "radial"
    axes: dict[str, AxisScore] = Field(default_factory=dict)
    vs_epoch: dict[str, VsEpoch] = Field(default_factory=dict)
    adjustment: Adjustment | None = None
    best: str | None = None
    verdict: CollapseVerdict
    identifiable: dict[str, bool] = Field(default_factory=dict)
    identifiability: dict[str, Identifiability] = Field(default_factory=dict)
    forgetting_times: dict[str, ForgettingTimes] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    n_pipelines: int | None = None
    min_p_possible: Num = None
    # collapse/3: the two radial sides and the fitted clock exponents (analysis/collapse.py)
    sides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    exponents: dict[str, Any] = Field(default_factory=dict)


def sampler_flags(label: str, rhat: float, ess: float, divergences: float = 0.0) -> list[str]:
    """What misses the sampler goals (names.RHAT_MAX, names.ESS_MIN, no divergence), one line each: the one
    rule the analysis flags with and the report falls back on for summaries without flags."""
    out = []
    if math.isfinite(rhat) and rhat > RHAT_MAX:
        out.append(f"{label}: R-hat {rhat:.4f} > {RHAT_MAX}")
    if math.isfinite(ess) and ess < ESS_MIN:
        out.append(f"{label}: bulk ESS {ess:.0f} < {ESS_MIN:.0f}")
    if math.isfinite(divergences) and divergences > 0:
        out.append(f"{label}: {int(divergences)} divergent transition(s)")
    return out

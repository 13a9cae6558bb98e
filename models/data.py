"""Data preparation for the memory model: which runs count, on which scale, with what noise.

The model works on a (pipeline, sigma_w, seed) table of one metric. Which cells enter it is a
decision with consequences (docs/memory-model.md, "Data"): only runs that finished ok, by
default only runs that reached the interpolation threshold (``gate``), and never a sigma_w
level averaged in from runs that did not interpolate. Runs that diverged are kept aside (their
positions are recorded) because divergence that depends on sigma_w is itself memory-related
evidence, and the summaries report it with a sensitivity result.

For accuracies the per-example predictions (``test_pred``, ``test_label``) give the run-to-run
noise on this fixed test set under the independent-errors model (Jordan, ICLR 2024): a run's
accuracy varies across runs by sqrt(sum_x p_x (1 - p_x)) / n, with p_x the chance that a random
run gets example x right. That noise scale sets every prior (docs/memory-model.md, "Priors").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.errors import OptionError, UserError, option
from initmem.models.paired import CEILING, CrossedSeeds
from initmem.results import GATES, sigma_key
from initmem.results.margins import DEFAULT_ACCURACY_DELTA, resolve_margins
from initmem.results.spec import FAMILIES  # (the analysis options' vocabulary, initmem/spec.py)

COUNT_METRICS = (cube.SELECTED_TEST_ACC, cube.SELECTED_TEST_CORRECT)
# The metric an accuracy is analyzed as: a fraction of the test set, whatever the cube stores beside it.
ACCURACY_METRIC = cube.SELECTED_TEST_ACC
NOT_METRICS = (cube.STATUS, cube.TAU_INTERP, cube.TAU_BEST, cube.WALL_SECONDS)
N_PERMUTATIONS = 2000


@dataclass
class MemoryData:
    """One metric as a (pipeline, sigma_w, seed) table, plus what was left out and why.

    ``y`` holds outcome units (accuracy as a fraction) with NaN where a cell is not used;
    ``used`` marks the cells that enter the model. ``scale`` is the per-pipeline run-to-run
    noise scale the priors are expressed in, ``center`` the per-pipeline mean of the used
    cells (the model works on (y - center) / scale).
    """

    metric: str
    family: str
    likelihood: str
    gate: str
    pipelines: list[str]
    sigma_w: np.ndarray
    seeds: np.ndarray
    y: np.ndarray
    used: np.ndarray
    scale: np.ndarray
    center: np.ndarray
    n_test: int | None
    chance: float | None = None
    diverged: np.ndarray | None = None    # (pipeline, sigma_w, seed) bool: status diverged
    n_excluded: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    interpolation: dict[str, dict[str, Any]] = field(default_factory=dict)
    divergence_p: dict[str, float | None] = field(default_factory=dict)
    # Runs the gate left out (finished, never interpolated) and the value they would enter with: their final
    # test accuracy (the metric's own value for other metrics); survivorship is tested and its sensitivity
    # refitted from these (models/summaries.py, "missingness").
    gated: np.ndarray | None = None       # (pipeline, sigma_w, seed) bool
    put_back: np.ndarray | None = None    # (pipeline, sigma_w, seed) float, NaN where not gated
    # missingness_p: the warning's one p-value per pipeline, the Bonferroni combination min(1, 2 min(omnibus,
    # trend)) of the two tests below, so that a warning on either keeps its level alpha.
    missingness_p: dict[str, float | None] = field(default_factory=dict)
    missingness_omnibus_p: dict[str, float | None] = field(default_factory=dict)  # any pattern over sigma_w
    missingness_trend_p: dict[str, float | None] = field(default_factory=dict)    # a trend in log sigma_w
    # (pipeline, sigma_w, seed) bool: every run the design planned that the verdict leaves out (failed, missing,
    # no value, gated out); only the gated ones with a finite ``put_back`` can be refitted.
    lost: np.ndarray | None = None
    # "paired" (a seed shares its randomness across sigma_w: a seed effect common to every level) or
    # "independent" (imported runs that share nothing: no seed effect); cube.seed_design.
    seed_design: str = cube.SEED_PAIRED
    test_set_se: dict[str, float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # A crossed seed design (cube coordinates init_seed and data_seed): each seed column's init and data seed,
    # (seed,) int; None for one seed per run.
    init_seed: np.ndarray | None = None
    data_seed: np.ndarray | None = None

    @property
    def crossed_seeds(self) -> CrossedSeeds | None:
        """The crossed design the seeds' tests read (models/paired.py): each seed column's init and data seed, when
        the cube has them and its seeds are paired across sigma_w; None otherwise (one seed per run, or
        independent seeds, which share nothing across levels to block on)."""
        if self.init_seed is None or self.data_seed is None or self.seed_design != cube.SEED_PAIRED:
            return None
        return CrossedSeeds.of(self.init_seed, self.data_seed)

    @property
    def level_mask(self) -> np.ndarray:
        """(pipeline, sigma_w): the level has at least one used cell in this pipeline."""
        return self.used.any(axis=2)

    @property
    def is_accuracy(self) -> bool:
        """Whether the outcome is an accuracy as a fraction: decided by the likelihood (counts or per-example
        predictions over n_test: the data are correct / n_test by construction) and, for gaussian data, by an
        accuracy variable (:func:`initmem.cube.points_scale`) whose values all lie in [0, 1]. The near-ceiling
        rule, the skew gate, the default delta and the report's units all read this one answer."""
        if self.likelihood in ("per_example", "counts"):
            return True
        vals = self.y[self.used]
        return (cube.points_scale(self.metric) != 1.0 and vals.size > 0
                and bool(np.all((vals >= 0.0) & (vals <= 1.0))))

    def lost_without_value(self, a: int) -> np.ndarray:
        """(sigma_w, seed) bool of pipeline ``a``: runs left out that have no final value to put back (failed,
        missing, or gated with no finite final accuracy), so no sensitivity refit can include them."""
        lost = self.lost[a] if self.lost is not None else np.zeros_like(self.used[a])
        if self.gated is None or self.put_back is None:
            return lost.copy()
        return lost & ~(self.gated[a] & np.isfinite(self.put_back[a]))

    @property
    def seed_mask(self) -> np.ndarray:
        return self.used.any(axis=1)

    @property
    def n_obs(self) -> int:
        return int(self.used.sum())

    def standardized(self) -> np.ndarray:
        """(y - center) / scale with 0 in unused cells: the model's data."""
        z = (self.y - self.center[:, None, None]) / self.scale[:, None, None]
        return np.where(self.used, z, 0.0)

    def with_cells(self, y: np.ndarray, used: np.ndarray) -> MemoryData:
        """The same design and scales with other values or cells (refits, sensitivity)."""
        from dataclasses import replace

        return replace(self, y=np.where(used, y, np.nan), used=used.astype(bool))


def _refuse_counts(ds: xr.Dataset, metric: str) -> None:
    """The count of correct answers is not analyzed in its own unit: every part of an analysis (the model, the
    frequentist cross-check, the report) reads delta and the data in one unit, and for an accuracy that unit is
    the fraction of the test set. The accuracy holds the same information (counts / n_test); a delta given in
    answers and compared with fractions once made 'forgets' out of a 5-point spread."""
    n_test = ds.attrs.get(cube.A_N_TEST)
    if n_test is not None and int(n_test) > 0:
        per_point = f" = {0.01 * int(n_test):g} of {int(n_test)} correct answers"
    else:
        per_point = ""
    if ACCURACY_METRIC in ds.data_vars:
        use = (f"use {option('metric', ACCURACY_METRIC)} with {option('delta')} as a fraction "
               f"(0.01 = 1 point{per_point})")
    else:
        use = (f"the cube has no {ACCURACY_METRIC}: add it as {cube.SELECTED_TEST_CORRECT} / {cube.A_N_TEST} "
               f"(initmem import does) and analyze that, with {option('delta')} as a fraction (0.01 = 1 point)")
    raise UserError(f"metric {metric!r} counts correct test answers; initmem analyzes an accuracy as the fraction "
                    f"of the test set, so that delta and the data share one unit: {use}")


def choose_metric(ds: xr.Dataset, metric: str | None) -> str:
    """The metric asked for, else the selected test accuracy, else the first run variable; the count of correct
    answers is refused (:func:`_refuse_counts`: analyze it as the accuracy)."""
    candidates = [str(v) for v in ds.data_vars
                  if tuple(ds[v].dims) == cube.CELL_DIMS and v not in NOT_METRICS
                  and v != cube.SELECTED_TEST_CORRECT]
    if metric == cube.SELECTED_TEST_CORRECT and metric in ds.data_vars:
        _refuse_counts(ds, metric)
    if metric is not None:
        if metric not in ds.data_vars:
            raise UserError(f"metric {metric!r} is not in the cube; choose one of: {', '.join(candidates) or 'none'}")
        if metric == cube.STATUS:  # codes, not a quantity (times such as tau_interp may be analyzed, with delta)
            raise UserError(f"{metric!r} holds codes of how a run ended, not a quantity; choose one of: "
                            f"{', '.join(candidates)}")
        if tuple(ds[metric].dims) != cube.CELL_DIMS:
            raise UserError(f"metric {metric!r} has dims {tuple(ds[metric].dims)}; the memory model needs a run "
                            f"variable with dims {cube.CELL_DIMS} (choose one of: {', '.join(candidates)})")
        return metric
    if ACCURACY_METRIC in candidates:
        return ACCURACY_METRIC
    if cube.SELECTED_TEST_CORRECT in ds.data_vars and tuple(ds[cube.SELECTED_TEST_CORRECT].dims) == cube.CELL_DIMS:
        _refuse_counts(ds, cube.SELECTED_TEST_CORRECT)
    if not candidates:
        raise UserError("the cube has no run variable with dims (pipeline, sigma_w, seed) to analyze")
    return candidates[0]


def _has_counts(ds: xr.Dataset, metric: str) -> bool:
    return metric in COUNT_METRICS and cube.SELECTED_TEST_CORRECT in ds.data_vars and cube.A_N_TEST in ds.attrs


def _has_predictions(ds: xr.Dataset) -> bool:
    return cube.TEST_PRED in ds.data_vars and cube.TEST_LABEL in ds.data_vars


def choose_family(ds: xr.Dataset, metric: str, family: str | None) -> str:
    """"binomial" = an accuracy over n_test examples (from predictions or counts); else gaussian."""
    if family is None:
        return "binomial" if _has_counts(ds, metric) else "gaussian"
    if family == "student_t":
        raise OptionError("family", "{option} student_t is no longer offered: the memory model is marginal over "
                          "its group effects, which needs gaussian noise; use {option} gaussian (docs/memory-model.md)")
    if family not in FAMILIES:
        raise OptionError("family", f"{{option}} must be one of {', '.join(FAMILIES)}, not {family!r}")
    if family == "binomial" and not _has_counts(ds, metric):
        raise OptionError("family", f"{{option}} binomial needs counts of correct test predictions "
                          f"({cube.SELECTED_TEST_CORRECT!r} and the attribute {cube.A_N_TEST!r}); metric {metric!r} "
                          "has none: use {option} gaussian")
    return family


def resolve_delta(data: MemoryData | str, delta: float | None) -> float:
    """The decision threshold in the data's units: :func:`initmem.results.margins.resolve_margins`'s ``delta``
    (one point for an accuracy by default, below 1 as a fraction; required for any other metric)."""
    if isinstance(data, MemoryData):
        return resolve_margins(data.metric, delta=delta, accuracy=data.is_accuracy).delta
    return resolve_margins(data, delta=delta).delta


def _correct_from_predictions(ds: xr.Dataset) -> np.ndarray:
    pred = ds[cube.TEST_PRED].transpose(*cube.CELL_DIMS, cube.EXAMPLE).values
    label = ds[cube.TEST_LABEL].values
    return (pred == label[None, None, None, :]) & (pred >= 0)


def noise_scale(likelihood: str, y: np.ndarray, used: np.ndarray, correct: np.ndarray | None,
                 n_test: int | None) -> float:
    """Run-to-run SD of one pipeline's metric at a fixed sigma_w, without the memory under test.

    per_example: independent-errors variance sum_x p_x(1-p_x) / n^2 (bias-corrected by R/(R-1));
    counts: the binomial bound p(1-p)/n (an upper bound on the fixed-test-set noise); gaussian: the pooled SD
    across seeds within sigma_w levels. Near the ceiling (:func:`near_ceiling_data`) the two accuracy scales
    are at least that pooled SD: there seeds are better or worse on many examples at once, the runs vary up
    to 30 times the test-set noise, and priors in test-set units shrink the seed and run SDs, which made the
    model's "forgets" wrong up to 16% of the time at a spread of delta (docs/memory-model.md, "Likelihood /
    noise scale"). Away from the ceiling the test-set scale keeps its level and decides more often, so it stays.
    Falls back to the pooled within-level SD, then to a small floor, so that a degenerate pipeline cannot
    give a zero scale.
    """
    within = []
    for row, ok in zip(y, used, strict=True):
        if ok.sum() >= 2:
            within.append(np.var(row[ok], ddof=1))
    pooled = float(np.sqrt(np.mean(within))) if within else float("nan")
    if likelihood == "per_example" and correct is not None:
        runs = correct[used]
        r = runs.shape[0]
        p = runs.mean(axis=0)
        s = float(np.sqrt((p * (1 - p)).sum() * r / max(r - 1, 1)) / runs.shape[1])
    elif likelihood == "counts":
        p = float(np.clip(np.nanmean(y[used]), 0.0, 1.0))
        s = float(np.sqrt(p * (1 - p) / n_test))
    else:
        s = pooled
    if likelihood in ("per_example", "counts") and np.isfinite(pooled) and near_ceiling_data(y, used):
        s = max(s, pooled)
    if not (np.isfinite(s) and s > 0):
        s = pooled
    if not (np.isfinite(s) and s > 0):
        s = 0.5 / n_test if n_test else 1e-6 * max(1.0, float(np.nanmax(np.abs(y[used]))))
    return s


def near_ceiling_data(y: np.ndarray, used: np.ndarray) -> bool:
    """Whether some sigma_w level's mean accuracy over its runs reaches ``CEILING`` (models/paired.py): the
    data's own reading, before any fit, of where the verdict rule treats accuracy as near 100%."""
    means = [float(np.mean(row[ok])) for row, ok in zip(y, used, strict=True) if ok.any()]
    return bool(means) and max(means) >= CEILING


def _paired_test_set_se(correct: np.ndarray, used: np.ndarray) -> float:
    """Standard error, from sampling the test examples, of the accuracy difference between the
    pipeline's best and worst sigma_w level (seed-averaged, paired by example): what the
    test-distribution estimand would add to this test set's spread (docs/memory-model.md)."""
    lev = used.any(axis=1)
    per_level = np.array([correct[i][used[i]].mean(axis=0) for i in np.nonzero(lev)[0]])  # (levels, n)
    means = per_level.mean(axis=1)
    diff = per_level[np.argmax(means)] - per_level[np.argmin(means)]
    return float(diff.std(ddof=1) / np.sqrt(diff.size))


def _dependence_test(flag: np.ndarray, observed: np.ndarray, rng: np.random.Generator) -> float | None:
    """Permutation p-value that a run's fate (``flag``: diverged, or gated out / absent) depends on sigma_w
    (chi-square statistic of the level x flag table, cells shuffled within the pipeline); None when no run, or
    every run, is flagged. An omnibus test: it ignores the order of the levels, so losses piled at one end of
    the grid count no more than losses scattered over it (:func:`_trend_test` sees the direction)."""
    n_flagged = int(flag[observed].sum())
    if n_flagged == 0 or n_flagged == int(observed.sum()):
        return None
    lev = np.nonzero(observed)[0]
    hits = flag[observed].astype(float)
    n_lev = observed.shape[0]
    onehot = np.zeros((lev.size, n_lev))
    onehot[np.arange(lev.size), lev] = 1.0
    counts = onehot.sum(axis=0)
    has = counts > 0
    rate = hits.mean()
    e = counts * rate

    def stat(f: np.ndarray) -> np.ndarray:
        d = np.atleast_2d(f) @ onehot
        return (((d - e) ** 2)[:, has] / (e[has] * (1 - rate))).sum(axis=1)

    perms = np.stack([rng.permutation(hits) for _ in range(N_PERMUTATIONS)])
    return float((1 + np.sum(stat(perms) >= stat(hits)[0] - 1e-12)) / (N_PERMUTATIONS + 1))


EXACT_TREND_CELLS = 200_000   # above this many (count, rank sum) states x levels the trend test permutes


def _trend_test(flag: np.ndarray, observed: np.ndarray, rng: np.random.Generator | None = None) -> float | None:
    """Exact two-sided p-value that a run's fate (``flag``) trends with log sigma_w: the Cochran-Armitage
    statistic T = sum of the flagged runs' level ranks (ranks of sigma_w, so of log sigma_w; equally spaced on a
    geometric grid), with its exact null distribution given the number flagged (every choice of which observed
    runs are flagged equally likely: the multivariate hypergeometric, by dynamic programming over levels);
    p = P(|T - E T| >= |t - E T|). None when no run, or every run, is flagged.

    Why beside the omnibus test: survivorship bias has a direction. Three runs lost at the two largest of 7
    levels x 5 seeds give the chi-square permutation p 0.33 (it spreads its power over every pattern) and this
    test p 0.018 (exactly 120 of the 6545 equally likely choices are as extreme). A table too large for the
    exact distribution (more than ``EXACT_TREND_CELLS`` states) gets the permutation p of the same statistic,
    (1 + hits) / (N_PERMUTATIONS + 1), valid at every N."""
    counts = observed.sum(axis=1).astype(int)
    k = int(flag[observed].sum())
    n = int(counts.sum())
    if k == 0 or k == n:
        return None
    lev = np.nonzero(counts)[0]
    scores = np.arange(lev.size)                      # rank of each observed level
    n_i = counts[lev]
    t_obs = int(sum(int((flag[i] & observed[i]).sum()) * r for r, i in zip(scores, lev, strict=True)))
    t_max = int(k * scores.max())
    s_all = int((scores * n_i).sum())
    if (k + 1) * (t_max + 1) * lev.size > EXACT_TREND_CELLS:
        rng = rng if rng is not None else np.random.default_rng(0)
        cell_rank = np.repeat(scores, n_i)
        hits = np.zeros(n, dtype=bool)
        hits[:k] = True
        perm = np.stack([rng.permutation(hits) for _ in range(N_PERMUTATIONS)])
        t_perm = perm.astype(np.int64) @ cell_rank
        more = np.abs(n * t_perm - k * s_all) >= abs(n * t_obs - k * s_all)
        return float((1 + more.sum()) / (N_PERMUTATIONS + 1))
    # ways[j, t]: number of ways to flag j runs among the levels so far with rank sum t (exact integers).
    ways = np.zeros((k + 1, t_max + 1), dtype=object)
    ways[0, 0] = 1
    for r, m in zip(scores, n_i, strict=True):
        new = np.zeros_like(ways)
        for c in range(min(int(m), k) + 1):
            w = math.comb(int(m), c)
            shift = c * int(r)
            if shift > t_max:
                break
            new[c:, shift:] += w * ways[: k + 1 - c, : t_max + 1 - shift]
        ways = new
    dist = ways[k]
    total = math.comb(n, k)
    # |T - k s_all / n| compared as |n T - k s_all| in integers: no rounding decides a tie
    dev = np.abs(n * np.arange(t_max + 1) - k * s_all)
    extreme = dev >= abs(n * t_obs - k * s_all)
    return float(sum(int(w) for w in dist[extreme]) / total)


def _missingness_tests(lost: np.ndarray, ran: np.ndarray, rng: np.random.Generator) -> dict[str, float | None]:
    """The omnibus and trend p-values of one pipeline's lost runs and their Bonferroni combination
    min(1, 2 min(p_omnibus, p_trend)): the warning reads the combination, so that it fires when either test
    rejects and still keeps its level alpha (the two tests are valid on their own; the combination needs no
    assumption on how they co-vary)."""
    omni, trend = _dependence_test(lost, ran, rng), _trend_test(lost, ran, rng)
    ps = [p for p in (omni, trend) if p is not None]
    return {"omnibus": omni, "trend": trend, "combined": min(1.0, 2.0 * min(ps)) if ps else None}


def _put_back_values(ds: xr.Dataset, metric: str, vals: np.ndarray, gated: np.ndarray) -> np.ndarray:
    """The value a gated-out run enters the survivorship sensitivity with: its final test accuracy for an
    accuracy metric (the selected checkpoint of a run that never interpolated is not the paper's), else the
    metric's own value."""
    if metric in cube.ACCURACY_VARS and cube.FINAL_TEST_ACC in ds.data_vars:
        final = ds[cube.FINAL_TEST_ACC].transpose(*cube.CELL_DIMS).values.astype(float)  # a fraction, as y
    else:
        final = vals
    return np.where(gated & np.isfinite(final), final, np.nan)


def _thin_with_holes(good: np.ndarray) -> bool:
    """A (level, seed) table of usable cells with holes in its rectangle and fewer than 2 residual
    degrees of freedom among the observed cells."""
    lev, sd = good.any(axis=1), good.any(axis=0)
    rect = good[lev][:, sd]
    return (not rect.all()) and int(rect.sum()) - int(lev.sum()) - int(sd.sum()) + 1 < 2


@dataclass(frozen=True)
class _Values:
    """One metric's value per cell, and how the likelihood reads it."""

    likelihood: str
    vals: np.ndarray           # (pipeline, sigma_w, seed), a fraction for the binomial family
    finite: np.ndarray         # the cell has a value
    n_test: int | None
    correct: np.ndarray | None  # per-example 0/1 (pipeline, sigma_w, seed, example), where the cube has predictions


def _read_values(ds: xr.Dataset, metric: str, family: str) -> _Values:
    """The metric per cell: per-example predictions where the cube has them (binomial), else the counts of
    correct answers (binomial), else the metric itself (gaussian)."""
    n_test = int(ds.attrs[cube.A_N_TEST]) if family == "binomial" else None
    if family == "binomial" and _has_predictions(ds):
        correct = _correct_from_predictions(ds)
        finite = (ds[cube.TEST_PRED].transpose(*cube.CELL_DIMS, cube.EXAMPLE).values >= 0).all(axis=-1)
        return _Values("per_example", correct.sum(axis=-1) / n_test, finite, n_test, correct)
    if family == "binomial":
        counts = ds[cube.SELECTED_TEST_CORRECT].transpose(*cube.CELL_DIMS).values.astype(float)
        return _Values("counts", counts / n_test, counts >= 0, n_test, None)
    vals = ds[metric].transpose(*cube.CELL_DIMS).values.astype(float)
    return _Values("gaussian", vals, np.isfinite(vals), None, None)


@dataclass(frozen=True)
class _Cells:
    """Which cells enter the fit, which were lost, and why (every mask is (pipeline, sigma_w, seed))."""

    gate: str                 # the gate actually used ("all" for a cube without tau_interp)
    ok: np.ndarray            # finished ok with a value
    interp: np.ndarray        # reached the interpolation threshold
    usable: np.ndarray        # enters the fit
    gated: np.ndarray         # ok but gated out (never interpolated)
    status: np.ndarray
    diverged: np.ndarray
    observed: np.ndarray      # ok or diverged: the cells the divergence test counts
    lost: np.ndarray          # planned but failed, missing or gated out
    ran: np.ndarray           # the pipeline ran this seed at some level
    notes: list[str]


def _cell_masks(ds: xr.Dataset, finite: np.ndarray, gate: str) -> _Cells:
    """The cells each step uses. A cube without ``tau_interp`` (an imported table) is analyzed as gate "all"."""
    ok = cube.ok_cells(ds).values & finite
    status = (ds[cube.STATUS].transpose(*cube.CELL_DIMS).values if cube.STATUS in ds.data_vars
              else np.where(finite, cube.OK, cube.MISSING))
    diverged = status == cube.DIVERGED
    notes: list[str] = []
    if cube.TAU_INTERP in ds.data_vars:
        interp = np.isfinite(ds[cube.TAU_INTERP].transpose(*cube.CELL_DIMS).values.astype(float))
        gate_used = gate
    else:
        interp = np.ones_like(ok)
        gate_used = "all"
        if gate == "interpolated":
            notes.append(f"the cube has no {cube.TAU_INTERP!r} (imported table): every ok run is used (gate 'all')")
    usable = ok & interp if gate_used == "interpolated" else ok
    gated = ok & ~interp if gate_used == "interpolated" else np.zeros_like(ok)
    # Runs the design planned but that did not finish (failed, missing) or were gated out, among the seeds
    # the pipeline actually ran (a sequential design's unrun seeds are not survivorship).
    lost = (status == cube.FAILED) | (status == cube.MISSING) | ((status == cube.OK) & ~finite) | gated
    ran = (status != cube.MISSING).any(axis=1, keepdims=True) & np.ones_like(ok)
    return _Cells(gate_used, ok, interp, usable, gated, status, diverged, ok | diverged, lost, ran, notes)


def _interpolation_record(cells: _Cells, a: int, sigma_w: np.ndarray) -> dict[str, Any]:
    """How many of pipeline ``a``'s cells interpolated, by sigma_w (the report's first table)."""
    ok, interp = cells.ok[a], cells.interp[a]
    by_level = (ok & interp).sum(axis=1)
    without = [float(s) for s, n_ok, n_i in zip(sigma_w, ok.sum(axis=1), by_level, strict=True)
               if n_ok > 0 and n_i == 0] if cells.gate == "interpolated" else []
    return {"n_cells": int(ok.sum()), "n_interpolated": int((ok & interp).sum()),
            "by_sigma_w": {sigma_key(s): int(n) for s, n in zip(sigma_w, by_level, strict=True)},
            "levels_without_interpolation": without, "gate": cells.gate}


def _exclusion_counts(cells: _Cells, finite: np.ndarray, a: int) -> dict[str, int]:
    """Pipeline ``a``'s runs left out of the fit, by reason."""
    st = cells.status[a]
    return {"diverged": int(cells.diverged[a].sum()), "failed": int((st == cube.FAILED).sum()),
            "missing": int((st == cube.MISSING).sum() + ((st == cube.OK) & ~finite[a]).sum()),
            "not_interpolated": int((cells.ok[a] & ~cells.usable[a]).sum())}


def _skip_reason(good: np.ndarray, vals: np.ndarray, paired: bool) -> str | None:
    """Why a pipeline's (sigma_w, seed) table of usable cells cannot be fitted; None when it can."""
    n_lev, n_sd = int(good.any(axis=1).sum()), int(good.any(axis=0).sum())
    if n_lev < 2:
        return f"only {n_lev} sigma_w level(s) with usable runs: the level effect needs at least 2"
    if n_sd < 2:
        return (f"only {n_sd} seed(s) with usable runs: seed and level effects cannot be separated "
                "with fewer than 2 seeds")
    if paired and _thin_with_holes(good):
        # Missing cells are imputed; with under 2 residual degrees of freedom among the observed
        # cells the imputed ones fit any value as the residual SD vanishes (a funnel NUTS
        # diverges in: the clocks preset's 3 x 2 tables). Such a table cannot support a verdict.
        return ("missing runs leave fewer than 2 residual degrees of freedom (observed cells minus "
                "levels minus seeds plus 1): too few runs to separate seeds, levels and noise")
    if np.ptp(vals[good]) == 0:
        return "the metric is constant in this pipeline: nothing to decompose"
    return None


def prepare_data(ds: xr.Dataset, metric: str | None = None, family: str | None = None, *,
                 gate: str = "interpolated", seed: int = 0) -> MemoryData:
    """The analyzable table of one metric (docs/memory-model.md, "Data").

    Cells enter when the run finished ok with a finite value and, with ``gate="interpolated"``,
    reached the interpolation threshold (``tau_interp`` finite). A cube without ``tau_interp``
    (imported tables) is analyzed as gate "all" and the notes say so. Pipelines with fewer than
    two sigma_w levels or two seeds left are skipped with the reason; if none remains, UserError.
    The steps: read the values (:func:`_read_values`), mark the cells (:func:`_cell_masks`), keep the
    pipelines that can be fitted (:func:`_skip_reason`), then the per-pipeline scales and tests.
    """
    if gate not in GATES:
        raise OptionError("gate", f"{{option}} must be one of {', '.join(GATES)}, not {gate!r}")
    metric = choose_metric(ds, metric)
    family = choose_family(ds, metric, family)
    pipes = [str(p) for p in ds[cube.PIPELINE].values.tolist()]
    sigma_w = ds[cube.SIGMA].values.astype(float)
    v = _read_values(ds, metric, family)
    cells = _cell_masks(ds, v.finite, gate)
    put_back = _put_back_values(ds, metric, v.vals, cells.gated)

    paired = cube.seed_design(ds) == cube.SEED_PAIRED
    skipped: dict[str, str] = {}
    keep: list[int] = []
    for a, pipe in enumerate(pipes):
        reason = _skip_reason(cells.usable[a], v.vals[a], paired)
        if reason is None:
            keep.append(a)
        else:
            skipped[pipe] = reason
    if not keep:
        reasons = "; ".join(f"{p}: {r}" for p, r in skipped.items())
        raise UserError(f"no pipeline can be analyzed ({reasons}); the memory model needs >= 2 sigma_w levels "
                        "and >= 2 seeds with usable runs per pipeline")

    rng = np.random.default_rng(seed)
    used = cells.usable[keep]
    y = np.where(used, v.vals[keep], np.nan)
    scale = np.array([noise_scale(v.likelihood, y[k], used[k], None if v.correct is None else v.correct[a],
                                  v.n_test) for k, a in enumerate(keep)])
    center = np.array([float(np.mean(y[k][used[k]])) for k in range(len(keep))])
    divergence_p = {a: _dependence_test(cells.diverged[a], cells.observed[a], rng) for a in keep}
    miss = {a: _missingness_tests(cells.lost[a], cells.ran[a], rng) for a in keep}
    chance = None
    if v.likelihood == "per_example":
        labels = ds[cube.TEST_LABEL].values
        chance = 1.0 / max(int(np.unique(labels[labels >= 0]).size), 2)
    kept = [pipes[a] for a in keep]
    n_excluded = {p: _exclusion_counts(cells, v.finite, a) for a, p in enumerate(pipes)}
    interpolation = {p: _interpolation_record(cells, a, sigma_w) for p, a in zip(kept, keep, strict=True)}
    return MemoryData(
        metric=metric, family=family, likelihood=v.likelihood, gate=cells.gate,
        pipelines=kept, sigma_w=sigma_w, seeds=ds[cube.SEED].values,
        y=y, used=used, scale=scale, center=center, n_test=v.n_test, chance=chance,
        diverged=cells.diverged[keep], n_excluded=n_excluded, skipped=skipped, interpolation=interpolation,
        notes=cells.notes, divergence_p={pipes[a]: divergence_p[a] for a in keep},
        gated=cells.gated[keep], put_back=put_back[keep],
        missingness_p={pipes[a]: miss[a]["combined"] for a in keep},
        missingness_omnibus_p={pipes[a]: miss[a]["omnibus"] for a in keep},
        missingness_trend_p={pipes[a]: miss[a]["trend"] for a in keep},
        lost=(cells.lost & cells.ran)[keep],
        test_set_se={pipes[a]: None if v.correct is None else _paired_test_set_se(v.correct[a], cells.usable[a])
                     for a in keep},
        seed_design=cube.seed_design(ds),
        **_seed_coords(ds),
    )


def _seed_coords(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """A crossed design's ``init_seed`` and ``data_seed`` per seed column (empty for one seed per run)."""
    if cube.INIT_SEED not in ds.coords or cube.DATA_SEED not in ds.coords:
        return {}
    return {"init_seed": ds[cube.INIT_SEED].values.astype("int64"),
            "data_seed": ds[cube.DATA_SEED].values.astype("int64")}


__all__ = ["DEFAULT_ACCURACY_DELTA", "FAMILIES", "MemoryData", "choose_family", "choose_metric", "near_ceiling_data",
           "noise_scale", "prepare_data", "resolve_delta"]

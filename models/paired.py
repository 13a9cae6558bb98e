"""The design-based tests behind both verdicts: paired differences between sigma_w levels.

Why (docs/memory-model.md, "Verdict"): the memory model pools its run-to-run noise over the
whole levels x seeds table under one covariance structure. When the seeds do not follow it --
each seed drifting with log sigma_w in its own direction, one sigma_w level much noisier than
the others -- the model's interval for the spread is too narrow, and several levels tied at an
extreme bias max - min upward (the winner's curse). So each verdict also has a test that uses
only the seeds themselves, with no assumption on how the levels co-vary. For a pair of levels
(j, k) the per-seed differences d_s = y[j, s] - y[k, s] give a paired t with n - 1 degrees of
freedom (n shared seeds); it is exact for gaussian seeds whatever the levels' covariance, because
only the pair's own seeds enter. Degrees of freedom pooled over the table would be valid only
under sphericity (equal variance of every pair's difference), which seed slopes and a noisy level
break (docs/memory-model.md measures what pooling costs there), so every test here is per pair.

"remembers" -- the ordered test (``paired_check``). The claim is global (spread > delta: SOME pair
differs by more than delta), so its null is the intersection of the pair nulls |E d_jk| <= delta
and one level-alpha test of that intersection suffices. The test is pre-specified and ordered:

    step 1: the extreme pair (smallest vs largest sigma_w), paired t of |E d| > delta at level
            alpha * EXTREME_WEIGHT (see _exceed_p: a Berger-Boos test, valid whatever the pair's SD);
    step 2: the peak contrast c = y_mid - (y_lo + y_hi) / 2 (the middle level of the grid against the
            mean of the two ends; ``middle_level``), the same test of |E c| > delta at alpha * PEAK_WEIGHT;
    step 3 (fallback): every other pair, Bonferroni at alpha * (1 - EXTREME_WEIGHT - PEAK_WEIGHT) / (m - 1).

|E c| > delta puts the middle level more than delta from one end, so the contrast's null contains the
claim's, and by the union bound the probability of any rejection under any configuration with max - min
<= delta (plateaus included) is at most the sum of the shares, alpha. A fixed sequence at full alpha
would stop when the extreme pair fails and never find a peak in the middle; giving a later step alpha
after step 1 spent alpha would exceed alpha for the global claim (nothing is passed on after a
rejection: the claim is then made). The shares, the order and the middle level are fixed before seeing
data (monotone memory along log sigma_w is the expected shape, a peak at the grid's middle the next);
a step that lacks two shared seeds (a fact about the missingness pattern, not the values) passes its
share to the fallback, and with two levels the extreme pair is the only pair and gets alpha.

Accuracies over n_test examples move in steps of 1 / n_test: with ``n_test`` every SE is floored at that
resolution (``_run_var_floor``), since a few seeds' differences are often all equal (SE 0).

"forgets" -- the intersection-union test (``equivalence_check``; Berger 1982, Berger & Hsu 1996),
run by the analysis at alpha x FORGETS_IUT_SHARE (``forgets_levels``: the model's route takes the rest).
The claim spread < delta is the intersection of |E d_jk| < delta over ALL pairs, so it holds when
every pair is shown inside +-delta by two one-sided paired tests (TOST) at level alpha each, with
no multiplicity correction: if the true spread is >= delta, some pair has |E d_jk| >= delta, and
that pair alone passes its TOST with probability <= alpha. A pair without two shared seeds cannot
be shown inside, so the test then fails.

With independent seeds (imported runs that share nothing across sigma_w) a pair is compared by
Welch's t. Small pure functions over arrays (the table of one pipeline), no model import.

Crossed seeds (a grid's ``seeds: {init: [...], data: [...]}``: every (init, data) pair is one run; ``crossed``, a
:class:`CrossedSeeds`): runs that share an init seed (or a data seed) are correlated across sigma_w whenever a
seed's effect differs by level (an init x sigma_w or data x sigma_w interaction), so a t that treats each run as
one block has an SE too small (at a true spread of delta such an interaction made the run-as-block tests say
"remembers" 21-42% and "forgets" 20-27% of the time; studies/crossed_scale_calibration.py). Every mean, SE and df
then comes from the pair's runs D[i, j] laid out as init x data (:func:`crossed_moments`): the mean of D, SE^2 =
var(row means) / I + var(column means) / J and Welch-Satterthwaite df (1 with two seeds on a side:
:func:`_guarded_moments`), valid whatever the seeds' effects do across levels (conservative by the residual's
share, var(e) / IJ). A pair uses the largest complete block of its shared runs
(:func:`initmem.cube.crossed.complete_crossed_block`, the rule stats/crossed.py uses too: the line that discards
the fewest present runs goes first, from the missingness pattern alone) and is untestable without two init and two
data seeds there. The skew gate's log-ratio test has no crossed form: near the ceiling a strongly multiplicative
crossed table fails the gate (fail closed). The memory model has no crossed form either (it reads each run as a
seed of its own), so on a crossed design "forgets" needs the intersection-union test here (models/summaries.py,
``verdict``): the model's route alone does not decide.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, stats

from initmem.cube.crossed import complete_crossed_block
from initmem.models.sequential import Spending, as_spending
from initmem.names import ALPHA

EXTREME_WEIGHT = 0.6   # the share of alpha the ordered test spends on the extreme pair (step 1)
PEAK_WEIGHT = 0.3      # the share of alpha on the peak contrast (step 2; three or more levels)
NUISANCE_SHARE = 0.02  # the share of a pair's level spent on the upper confidence bound of its SD (_exceed_p)
STEP_EXTREME, STEP_PEAK, STEP_FALLBACK = "extreme pair", "peak contrast", "fallback over the other pairs"
# The smallest SD of the difference of two runs' accuracies that a test believes, in test examples (1 / n_test):
# accuracies move in steps of 1 / n_test, so a few seeds' differences are often all equal (SE 0) or nearly so, and
# a t test that trusts such an SE says "forgets" or "remembers" at any level (_se_floor).
LATTICE_STEPS = 1.0

# "forgets" has two routes, the intersection-union test and the memory model; each gets a share of alpha
FORGETS_IUT_SHARE = 0.8     # the IUT runs at alpha x 0.8
FORGETS_MODEL_SHARE = 0.5   # the model's route needs P(spread < delta) >= 1 - alpha x 0.5
# An accuracy from which "forgets" needs both routes (models/summaries.py, ``verdict``): within 1 point of 100%
# a seed's errors are multiplicative, the seeds' differences skewed, and either route alone exceeded its level
# at a spread of delta (studies/ceiling_check.py; docs/memory-model.md, "Near the ceiling").
CEILING = 0.99
# Near the ceiling, where the seeds' errors are strongly multiplicative (the SD over seeds of the log of a seed's
# mean error reaches SKEW_GATE), "forgets" also needs the log-ratio test (``multiplicative_ok``): the paired t
# exceeded its level there (6-9% at a spread of delta; docs/memory-model.md, "The skew gate").
SKEW_GATE = 0.4


@dataclass(frozen=True)
class CrossedSeeds:
    """Each seed column's init and data seed in a crossed seed design (cube coordinates ``init_seed`` and
    ``data_seed``), as indices 0..I-1 and 0..J-1: the layout the crossed-block moments read.

    Attributes
    ----------
    init, data : numpy.ndarray
        (S,) int: the init and data index of every seed column of a table.
    n_init, n_data : int
        I and J, the distinct init and data seeds.
    """

    init: np.ndarray
    data: np.ndarray
    n_init: int
    n_data: int

    @classmethod
    def of(cls, init_seed: np.ndarray, data_seed: np.ndarray) -> CrossedSeeds:
        """From the seeds themselves (any integers, one pair per column).

        Parameters
        ----------
        init_seed, data_seed : array of int
            (S,): every seed column's init and data seed.

        Returns
        -------
        CrossedSeeds

        Raises
        ------
        ValueError
            Arrays of different shapes or an (init, data) pair twice: two columns of one run would be one run
            counted twice (cube validation refuses such a cube).
        """
        i_vals, i_idx = np.unique(np.asarray(init_seed), return_inverse=True)
        d_vals, d_idx = np.unique(np.asarray(data_seed), return_inverse=True)
        if i_idx.shape != d_idx.shape or i_idx.ndim != 1:
            raise ValueError("init_seed and data_seed need one value per seed column")
        if np.unique(i_idx * d_vals.size + d_idx).size != i_idx.size:
            raise ValueError("an (init, data) seed pair appears in more than one seed column")
        return cls(i_idx.astype(int), d_idx.astype(int), int(i_vals.size), int(d_vals.size))

    @classmethod
    def full(cls, n_init: int, n_data: int) -> CrossedSeeds:
        """Every (init, data) pair once, init outer and data inner: a crossed cube's run order."""
        return cls(np.repeat(np.arange(n_init), n_data), np.tile(np.arange(n_data), n_init), n_init, n_data)

    def grid(self, values: np.ndarray) -> np.ndarray:
        """(..., S) values as (..., I, J), NaN where the design has no run."""
        values = np.asarray(values, dtype=float)
        out = np.full((*values.shape[:-1], self.n_init, self.n_data), np.nan)
        out[..., self.init, self.data] = values
        return out


def crossed_moments(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The crossed-block mean, SE and degrees of freedom of complete (..., I, J) tables of per-run values (a
    pair's differences D[i, j], init seed i, data seed j).

    mean = mean(D); SE^2 = var(row means) / I + var(column means) / J (sample variances, ddof 1); df =
    Welch-Satterthwaite, SE^4 / ((var_r / I)^2 / (I - 1) + (var_c / J)^2 / (J - 1)) (min(I, J) - 1 where SE = 0).

    Why: with D = m + a_i + b_j + e_ij the mean's variance is var(a) / I + var(b) / J + var(e) / IJ, and the row
    means' sample variance estimates var(a) + var(e) / J (the columns' alike), so SE^2 is unbiased plus
    var(e) / IJ: valid (conservative by that) whatever the init and data seeds' effects do across sigma_w, where
    the run-as-block t (var(D) / IJ) misses the shared effects.

    Parameters
    ----------
    d : numpy.ndarray
        (..., I, J), complete (NaN gives NaN moments), I, J >= 2.

    Returns
    -------
    tuple of numpy.ndarray
        The mean, SE and df, each of shape (...).
    """
    d = np.asarray(d, dtype=float)
    n_i, n_j = d.shape[-2], d.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vr = np.var(d.mean(axis=-1), axis=-1, ddof=1) / n_i
        vc = np.var(d.mean(axis=-2), axis=-1, ddof=1) / n_j
        se2 = vr + vc
        df = se2**2 / (vr**2 / (n_i - 1) + vc**2 / (n_j - 1))
        df = np.where(se2 > 0, df, min(n_i, n_j) - 1.0)
        return d.mean(axis=(-2, -1)), np.sqrt(se2), df


def _guarded_moments(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`crossed_moments` as the tests use them: with two seeds on a side (one degree of freedom in that
    side's variance) the df is 1, min(I, J) - 1, instead of Welch-Satterthwaite's.

    Why: a variance with one df is too rough for the Satterthwaite match, and with 2 init x 4-6 data seeds at a
    true spread of delta the ordered test said "remembers" 6.2-6.7% of the time at alpha 0.05 (8,000 tables a
    design; every design with three or more seeds a side kept its level). min(I, J) - 1 is never above the
    Satterthwaite df and is conservative for a sum of two scaled chi-squares (Mickey & Brown 1966)."""
    mean, se, df = crossed_moments(d)
    if min(d.shape[-2], d.shape[-1]) <= 2:
        df = np.minimum(df, 1.0)
    return mean, se, df


def _crossed_stats(values: np.ndarray, crossed: CrossedSeeds, run_var: float,
                   complete_only: bool = False) -> tuple[np.ndarray, ...]:
    """Per row of (..., S) per-run values (a pair's differences or a contrast): the crossed-block mean, SE, df and
    the SE's floor (``run_var``, one run's floor variance, through the same formula: 2 run_var / IJ), over the
    row's complete block (:func:`~initmem.cube.crossed.complete_crossed_block`; ``complete_only``: the whole
    design, NaN if a run is absent, the vectorised form). NaN statistics where the block lacks two init or two
    data seeds."""
    g = crossed.grid(values)
    if complete_only or np.isfinite(g).all():
        mean, se, df = _guarded_moments(g)
        n = np.full(mean.shape, crossed.n_init * crossed.n_data, dtype=float)
        bad = np.full(mean.shape, min(crossed.n_init, crossed.n_data) < 2)
    else:
        flat = g.reshape(-1, crossed.n_init, crossed.n_data)
        mean, se, df, n = (np.full(flat.shape[0], np.nan) for _ in range(4))
        for r, t in enumerate(flat):
            rows, cols = complete_crossed_block(np.isfinite(t))
            if rows.size >= 2 and cols.size >= 2:
                mean[r], se[r], df[r] = (float(x) for x in _guarded_moments(t[np.ix_(rows, cols)]))
                n[r] = float(rows.size * cols.size)
        shape = g.shape[:-2]
        mean, se, df, n = (x.reshape(shape) for x in (mean, se, df, n))
        bad = ~np.isfinite(n)
    floor = np.sqrt(2.0 * run_var / np.where(bad, 1.0, n))
    bad = bad | ~np.isfinite(mean)
    nan = np.nan
    return (np.where(bad, nan, mean), np.where(bad, nan, se), np.where(bad, nan, df), np.where(bad, nan, floor))


def forgets_levels(alpha: float | Spending = ALPHA) -> tuple[float, float]:
    """(the intersection-union test's level, the model's threshold on P(spread < delta)) of "forgets"
    in an analysis at ``alpha``: (alpha x FORGETS_IUT_SHARE, 1 - alpha x FORGETS_MODEL_SHARE).

    Why not (alpha, 1 - alpha): "forgets" is the UNION of the two routes, and where the IUT is near
    its boundary (a true spread of exactly delta, one pair at the margin) it is exact at its own level,
    so any extra rejections by the model push the union above alpha: at 0.05 / 0.95 the rule-level
    false "forgets" at a true spread of delta was 5.9% (slopes_at_delta, paper scale, 16 seeds;
    3,000 tables, planner quadrature; the sequential benchmark's fixed design: 5.6% [4.7, 6.7]).
    The split was chosen on that table (docs/memory-model.md, "Verdict"): (0.04, 0.975) gave at most
    4.6% over the at-delta designs with 0.908 "forgets" on the demo-scale null at 16 seeds; the
    Bonferroni split (0.04, 0.99) would be provably tidier (0.04 + 0.01 = alpha whatever the model
    does) but cost 14 points of power on nulls at 16 seeds (0.821). A sequential look passes its own
    look passes its :class:`Spending`, and each route's level is spent from the route's own share of alpha."""
    spend = as_spending(alpha)
    return spend.level(FORGETS_IUT_SHARE), 1.0 - spend.level(FORGETS_MODEL_SHARE)


def _run_var_floor(n_test: int | None, unit: float = 1.0) -> float:
    """The floor of one run's variance in table units: half the square of LATTICE_STEPS test examples, so that
    the difference of two runs has an SD of at least LATTICE_STEPS / n_test (0 without ``n_test``).

    Why: an accuracy over n_test examples moves in steps of 1 / n_test, so with a few seeds every per-seed
    difference of a pair is often the same lattice value (SE 0) or all but one are ((0, 0, 1/n_test): an SE of a
    third of a step), and a t test that trusts that SE rejects at any level: with 2-5 seeds at 50-600 examples
    the unfloored tests said "remembers" up to 67% and "forgets" up to 12% of the time where neither was true
    (studies/lattice_calibration.py). A sample SD below one step does not resolve the noise; floored there,
    every design of the study keeps its allotment. The binomial SD of a run is a poor floor: it is the noise of
    a run whose examples are equally hard, real runs share hard examples and vary less (about 0.6 of it), and
    at its own truth it left the tests far below their levels (the study's ``binomial`` column). ``unit``: outcome
    units per table unit (tables standardised by a noise scale pass that scale)."""
    if not n_test:
        return 0.0
    return 0.5 * (LATTICE_STEPS / (float(n_test) * float(unit))) ** 2


def _pairs(table: np.ndarray, paired: bool, n_test: int | None = None,
           crossed: CrossedSeeds | None = None) -> tuple[np.ndarray, ...]:
    """Per pair of levels (j < k): indices, mean difference y_j - y_k, its SE (floored at the test set's
    resolution with ``n_test``: :func:`_run_var_floor`), degrees of freedom, and whether the floor bound the SE;
    pairs without two runs a side (two shared seeds when paired; a complete block of two init x two data seeds
    when ``crossed``: :func:`_crossed_stats`) are dropped."""
    j, k = np.triu_indices(table.shape[0], 1)
    a, b = table[j], table[k]
    v0 = _run_var_floor(n_test)
    with np.errstate(invalid="ignore", divide="ignore"):
        if paired and crossed is not None:
            diff, se, df, floor = _crossed_stats(a - b, crossed, 2.0 * v0)
            keep = np.isfinite(diff) & np.isfinite(se)
        elif paired:
            d = a - b
            n = np.isfinite(d).sum(axis=1)
            keep = n >= 2
            diff = np.nanmean(np.where(keep[:, None], d, 0.0), axis=1)
            se = np.nanstd(np.where(keep[:, None], d, 0.0), axis=1, ddof=1) / np.sqrt(np.maximum(n, 1))
            floor = np.sqrt(2.0 * v0 / np.maximum(n, 1))
            df = (n - 1).astype(float)
        else:
            na, nb = np.isfinite(a).sum(axis=1), np.isfinite(b).sum(axis=1)
            keep = (na >= 2) & (nb >= 2)
            a, b = np.where(keep[:, None], a, 0.0), np.where(keep[:, None], b, 0.0)
            va, vb = np.nanvar(a, axis=1, ddof=1) / na, np.nanvar(b, axis=1, ddof=1) / nb
            diff = np.nanmean(a, axis=1) - np.nanmean(b, axis=1)
            se, df = _welch(va, vb, na, nb)
            floor = np.sqrt(v0 / np.maximum(na, 1) + v0 / np.maximum(nb, 1))
    floored = floor > se
    se = np.maximum(se, floor)
    return j[keep], k[keep], diff[keep], se[keep], df[keep], floored[keep]


def pair_interval(table: np.ndarray, hi: int, lo: int, level: float = 0.9, *, paired: bool = True,
                  n_test: int | None = None, crossed: CrossedSeeds | None = None,
                  run_sd: float = 0.0) -> tuple[float, float, float] | None:
    """The seeds' own ``level`` (two-sided) t interval of the difference y[hi] - y[lo] between two levels.

    The pair's SE is the paired (Welch for independent seeds, crossed-block for crossed ones) SE of
    :func:`paired_check`, from the pair's own runs, so a level noisier than the others widens it whatever the other
    levels do; floored at the test set's resolution (``n_test``) and at ``run_sd``, the noise of one run's value
    (each level mean then has an SE of at least ``run_sd`` / sqrt(runs)).

    Parameters
    ----------
    table : numpy.ndarray
        (L, S) values in outcome units, NaN where a run is absent.
    hi, lo : int
        The two levels' indices.
    level : float
        The interval's coverage.
    paired, n_test, crossed
        As :func:`paired_check`.
    run_sd : float
        The smallest SD a run's value is taken to have (0: none).

    Returns
    -------
    tuple of float or None
        (difference, lower, upper), None when the pair has too few runs.

    Examples
    --------
    >>> t = np.array([[0.91, 0.90], [0.84, 0.83]])
    >>> diff, lower, upper = pair_interval(t, 0, 1, n_test=10_000, run_sd=0.0034)
    >>> round(diff, 4), round(upper - diff, 4)           # 2 seeds, the same difference: the floor sets the width
    (0.07, 0.0215)
    """
    j, k = min(hi, lo), max(hi, lo)
    rows = np.asarray(table, dtype=float)[[j, k]]
    _, _, diff, se, df, _ = _pairs(rows, paired, n_test, crossed if paired else None)
    if not diff.size:
        return None
    runs = np.isfinite(rows).sum(axis=1)
    se_run = run_sd * np.sqrt(1.0 / runs[0] + 1.0 / runs[1])
    d = float(diff[0]) * (1.0 if hi == j else -1.0)
    half = float(stats.t.ppf(0.5 + level / 2, df[0]) * max(float(se[0]), float(se_run)))
    return d, d - half, d + half


def _welch(va: np.ndarray, vb: np.ndarray, na: np.ndarray, nb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welch's SE and approximate degrees of freedom from the two sides' squared SEs ``va``, ``vb``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        se2 = va + vb
        welch = se2**2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        return np.sqrt(se2), np.where(se2 > 0, welch, na + nb - 2.0)


def middle_level(sigma_w: np.ndarray) -> int | None:
    """The index of the peak contrast's middle level: the level nearest the middle of the grid in log sigma_w
    (of two equally near, the one nearest sigma_w = 1, else the lower); None with fewer than three levels.

    Why from the grid alone: the contrast is a pre-specified step of the ordered test, so which level it tests
    must not depend on the data (a middle level picked as the best-looking one would spend alpha many times)."""
    x = np.log(np.asarray(sigma_w, dtype=float))
    if x.size < 3:
        return None
    lo, hi = int(np.argmin(x)), int(np.argmax(x))
    inner = np.array([i for i in range(x.size) if i not in (lo, hi)])
    dist = np.abs(x[inner] - 0.5 * (x[lo] + x[hi]))
    near = inner[dist <= dist.min() + 1e-9 * max(1.0, float(np.ptp(x)))]
    return int(min(near, key=lambda i: (round(abs(float(x[i])), 12), float(x[i]))))


def _peak_contrast(table: np.ndarray, lo: int, mid: int, hi: int, paired: bool,
                   n_test: int | None = None, crossed: CrossedSeeds | None = None,
                   ) -> tuple[float, float, float, bool] | None:
    """The peak contrast c = y_mid - (y_lo + y_hi) / 2: its mean, SE (floored as a pair's is), degrees of
    freedom and whether the floor bound it; None when it lacks two shared seeds (paired), two runs a level, or
    (``crossed``) a complete block of two init x two data seeds."""
    v0 = _run_var_floor(n_test)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if paired and crossed is not None:
            c = table[mid] - 0.5 * (table[lo] + table[hi])
            m, se_c, df_c, fl = (float(x) for x in _crossed_stats(c, crossed, 1.5 * v0))
            if not (np.isfinite(m) and np.isfinite(se_c)):
                return None
            mean, se, floor, df = m, se_c, fl, df_c
        elif paired:
            c = table[mid] - 0.5 * (table[lo] + table[hi])
            c = c[np.isfinite(c)]
            if c.size < 2:
                return None
            se, floor, df = float(c.std(ddof=1) / np.sqrt(c.size)), float(np.sqrt(1.5 * v0 / c.size)), c.size - 1.0
            mean = float(c.mean())
        else:
            rows = [table[i][np.isfinite(table[i])] for i in (mid, lo, hi)]
            if min(r.size for r in rows) < 2:
                return None
            n = np.array([r.size for r in rows], dtype=float)
            v = np.array([r.var(ddof=1) for r in rows]) / n * np.array([1.0, 0.25, 0.25])
            se2 = float(v.sum())
            df = float(se2**2 / np.sum(v**2 / (n - 1))) if se2 > 0 else float(n.sum() - 3.0)
            se, floor = float(np.sqrt(se2)), float(np.sqrt(v0 * np.sum(np.array([1.0, 0.25, 0.25]) / n)))
            mean = float(rows[0].mean() - 0.5 * (rows[1].mean() + rows[2].mean()))
    return mean, max(se, floor), df, bool(floor > se)


def _two_sided_p(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.minimum(1.0, 2.0 * stats.t.sf(t, df))


def _relevance_p(t: np.ndarray, lam: np.ndarray, df: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Berger-Boos p of the region {(|mean d| - delta) / SE >= t} at E d = delta, sup over the pair's SD
    up to its upper (1 - beta) confidence bound, which puts delta at ``lam`` = delta sqrt(n) / sigma_U
    or more standard errors: beta + P(T >= t) + P(mean d <= -delta - t SE). The last term is
    P((Z + 2 lam) / W <= -t) with W = S / sigma, a noncentral t with noncentrality 2 lam; it only
    shrinks as lam grows, so the sup sits at the bound."""
    first = stats.t.sf(t, df)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        other = stats.nct.sf(t, df, -2.0 * lam)
    other = np.where(np.isfinite(other), other, first)   # the far tail: P(T >= t) bounds it for t >= 0
    return np.minimum(1.0, beta + first + np.where(t >= 0, np.minimum(other, first), other))


def _exceed_p(diff: np.ndarray, se: np.ndarray, df: np.ndarray, delta: float, level: np.ndarray | float,
              paired: bool = True) -> np.ndarray:
    """p-values of H0: |true difference| <= delta, for a test that will be run at ``level``.

    The region is (|mean d| - delta) / SE >= t. At E d = delta its size is P(T >= t) plus the chance
    of landing beyond -delta on the other side, which depends on the unknown SD: it is negligible
    when SE << delta (the one-sided p is then exact) and reaches a second P(T >= t) when SE >> delta
    (the one-sided p in the observed direction then has size up to 2 alpha: measured 5.2-6.1% at
    alpha 0.05 with a 10-20x noisier extreme level). Paired seeds get the Berger-Boos p (Berger &
    Boos 1994): beta = level x NUISANCE_SHARE buys an upper confidence bound on the pair's SD, and
    the size is taken at its worst over every SD below it, so P(p <= level) <= beta + (level - beta)
    for every SD. It is about the two-sided p plus beta when the bound is loose (3 seeds, unless the
    SD is tiny against delta) and approaches the one-sided p plus beta when the bound puts delta many SEs away
    (docs/memory-model.md, "Verdict"). Independent seeds (Welch's approximate df) keep the two-sided p."""
    excess = np.abs(diff) - delta
    level = np.broadcast_to(np.asarray(level, dtype=float), np.shape(diff))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = excess / se
        if paired:
            beta = level * NUISANCE_SHARE
            lam = np.where(se > 0, delta / se, 0.0) * np.sqrt(stats.chi2.ppf(beta, df) / df)
            ok = (se > 0) & np.isfinite(t)
            p = np.full(np.shape(diff), np.nan)
            p[ok] = _relevance_p(t[ok], lam[ok], np.asarray(df, dtype=float)[ok], beta[ok])
        else:
            p = _two_sided_p(t, df)
    return np.where(se > 0, p, np.where(excess > 0, 0.0, 1.0))


def _inside_p(diff: np.ndarray, se: np.ndarray, df: np.ndarray, delta: float) -> np.ndarray:
    """TOST p-values of H0: |true difference| >= delta: the larger of the two one-sided p's, which is
    the one on the side of the observed difference, P(T >= (delta - |diff|) / se)."""
    margin = delta - np.abs(diff)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.t.sf(margin / se, df)
    return np.where(se > 0, p, np.where(margin > 0, 0.0, 1.0))


def _pair_info(sigma_w: np.ndarray, j: int, k: int, diff: float, se: float, df: float, p: float) -> dict[str, float]:
    hi, lo = (j, k) if diff >= 0 else (k, j)
    return {"higher": float(sigma_w[hi]), "lower": float(sigma_w[lo]), "difference": float(abs(diff)),
            "se": float(se), "df": float(df), "p_unadjusted": float(p)}


def extreme_weight(n_pairs: int) -> float:
    """The share of alpha on the extreme pair: all of it when it is the only pair."""
    return 1.0 if n_pairs <= 1 else EXTREME_WEIGHT


def step_shares(n_levels: int) -> tuple[float, float, float]:
    """The ordered test's shares of alpha (extreme pair, peak contrast, fallback over the other pairs) for a grid
    of ``n_levels`` levels: all on the extreme pair with two levels (the only pair, and no middle level)."""
    if n_levels <= 2:
        return 1.0, 0.0, 0.0
    return EXTREME_WEIGHT, PEAK_WEIGHT, 1.0 - EXTREME_WEIGHT - PEAK_WEIGHT


def paired_check(table: np.ndarray, sigma_w: np.ndarray, delta: float, *, paired: bool = True,
                 alpha: float | Spending = ALPHA, n_test: int | None = None,
                 crossed: CrossedSeeds | None = None) -> dict[str, Any]:
    """The seeds' own evidence that some pair of levels differs by more than ``delta``: the ordered
    test (step 1 the extreme pair at alpha x EXTREME_WEIGHT, step 2 the peak contrast at alpha x PEAK_WEIGHT,
    step 3 the other pairs, Bonferroni at the rest).

    ``table``: (L, S) values in outcome units, NaN where a run is absent; ``sigma_w``: (L,). ``n_test``: the
    test set's size when the outcome is an accuracy over it, which floors every SE at the lattice's resolution
    (:func:`_run_var_floor`; None for a metric without a lattice). Returns the adjusted p-value (the
    weighted-Bonferroni one: the smallest p / share over the steps' tests; "remembers" is supported when it is
    below ``alpha``), the step that carried it and the pair (its mean difference, standard error, degrees of
    freedom and unadjusted p; for the peak contrast the middle level and the end further from it, with the
    contrast as the difference and both ends in ``end_low`` / ``end_high``). The peak contrast's null
    |E c| <= delta contains the claim's null (|E c| > delta puts the middle level more than delta from an
    end), so the union bound over the steps keeps alpha. ``crossed`` (paired seeds of a crossed design: each
    column's init and data seed) gives every test the crossed-block moments (:func:`crossed_moments`).
    """
    spend = as_spending(alpha)
    alpha = spend.level(1.0)
    sigma_w = np.asarray(sigma_w, dtype=float)
    table = np.asarray(table, dtype=float)
    crossed = crossed if paired else None
    j, k, diff, se, df, floored = _pairs(table, paired, n_test, crossed)
    base = {"alpha": alpha, "test": _test_name(paired, crossed=crossed is not None), "extreme_weight": EXTREME_WEIGHT,
            "se_floor": LATTICE_STEPS / n_test if n_test else None}
    if j.size == 0:
        return {**base, "p_value": None, "supports_remembers": False, "n_pairs": 0, "pair": None, "step": None,
                "se_floored": False, "note": "no pair of sigma_w levels with two runs each"}
    lo, hi = int(np.argmin(sigma_w)), int(np.argmax(sigma_w))
    mid = middle_level(sigma_w)
    peak = None if mid is None else _peak_contrast(table, lo, mid, hi, paired, n_test, crossed)
    ext = ((j == lo) & (k == hi)) | ((j == hi) & (k == lo))
    n_other = int((~ext).sum())
    w_ext, w_peak, w_fall = step_shares(sigma_w.size)
    if peak is None:              # an untestable step (a fact of the missingness, not of the values)
        w_fall, w_peak = w_fall + w_peak, 0.0
    if not ext.any():
        w_fall, w_ext = w_fall + w_ext, 0.0
    if n_other == 0:
        w_ext, w_fall = w_ext + w_fall, 0.0
    share = np.where(ext, w_ext, w_fall / max(n_other, 1))   # each pair's share of alpha
    level = _share_levels(spend, share)
    p = _exceed_p(diff, se, df, delta, level, paired)
    adj = p * alpha / np.maximum(level, 1e-300)
    i = int(np.argmin(adj))
    adjusted, step = float(min(1.0, adj[i])), STEP_EXTREME if ext[i] else STEP_FALLBACK
    pair = _pair_info(sigma_w, j[i], k[i], diff[i], se[i], df[i], p[i])
    is_floored = bool(floored[i])
    p_peak = None
    if peak is not None and w_peak > 0:
        c, c_se, c_df, c_floored = peak
        peak_level = spend.level(w_peak)
        p_peak = float(_exceed_p(np.array([c]), np.array([c_se]), np.array([c_df]), delta, peak_level, paired)[0])
        if p_peak * alpha / max(peak_level, 1e-300) < adjusted:
            adjusted, step, is_floored = float(min(1.0, p_peak * alpha / max(peak_level, 1e-300))), STEP_PEAK, c_floored
            end = max((lo, hi), key=lambda e: abs(np.nanmean(table[mid]) - np.nanmean(table[e])))
            top, bottom = (mid, end) if c >= 0 else (end, mid)
            pair = {"higher": float(sigma_w[top]), "lower": float(sigma_w[bottom]), "difference": abs(c),
                    "se": c_se, "df": c_df, "p_unadjusted": p_peak, "end_low": float(sigma_w[lo]),
                    "end_high": float(sigma_w[hi])}
    ok = bool(adjusted < alpha)
    return {**base, "p_value": adjusted, "supports_remembers": ok, "n_pairs": int(j.size),
            "step": step if ok else None, "extreme_weight": w_ext, "peak_weight": w_peak,
            "peak_level": None if mid is None else float(sigma_w[mid]),
            "p_extreme": float(p[ext][0]) if ext.any() else None, "p_peak": p_peak,
            "se_floored": is_floored, "pair": pair}


def equivalence_check(table: np.ndarray, sigma_w: np.ndarray, delta: float, *, paired: bool = True,
                      alpha: float = ALPHA, n_test: int | None = None, accuracy: bool = False,
                      crossed: CrossedSeeds | None = None) -> dict[str, Any]:
    """The intersection-union test of "forgets": every pair of levels shown inside +-``delta`` by
    two one-sided tests at ``alpha`` (no multiplicity correction: the claim is one intersection).

    Returns the IUT p-value (the largest pair TOST p; 1 when some pair cannot be tested), whether
    it supports "forgets", and the pair that limits it (the one furthest from being inside). ``n_test`` floors
    every pair's SE at the test set's resolution (as in :func:`paired_check`; ``se_floor`` says which floor, None
    for none). For accuracies (``accuracy``) also the skew gate's reading (``seed_log_sd``, ``log_ratio_bound``,
    ``multiplicative_ok``; :func:`multiplicative_ok`), which the verdict uses near the ceiling. The gate is
    defined for paired seeds; with independent seeds it cannot be computed and ``multiplicative_ok`` is None,
    which :func:`forgets_iut_ok` reads as a fail near the ceiling. ``crossed`` (paired seeds of a crossed
    design) gives every pair the crossed-block moments (:func:`crossed_moments`) and the gate its crossed reading
    (:func:`multiplicative_ok`).
    """
    sigma_w = np.asarray(sigma_w, dtype=float)
    table = np.asarray(table, dtype=float)
    n_lev = table.shape[0]
    m_all = n_lev * (n_lev - 1) // 2
    crossed = crossed if paired else None
    j, k, diff, se, df, floored = _pairs(table, paired, n_test, crossed)
    base = {"alpha": alpha, "test": _test_name(paired, equivalence=True, crossed=crossed is not None),
            "n_pairs": m_all, "se_floor": LATTICE_STEPS / n_test if n_test else None}
    if accuracy and not paired:
        base.update(multiplicative_ok=None, gate_note="the skew gate needs paired seeds: with independent seeds "
                    "near the ceiling this route cannot show \"forgets\"")
    if j.size < m_all or m_all == 0:
        return {**base, "p_value": 1.0 if m_all else None, "supports_forgets": False, "pair": None,
                "se_floored": False,
                "note": f"{m_all - j.size} pair(s) of sigma_w levels without two shared runs: not every pair "
                        "can be shown inside +-delta"}
    p = _inside_p(diff, se, df, delta)
    i = int(np.argmax(p))
    out = {**base, "p_value": float(p[i]), "supports_forgets": bool(p[i] < alpha), "se_floored": bool(floored[i]),
           "pair": _pair_info(sigma_w, j[i], k[i], diff[i], se[i], df[i], p[i])}
    if accuracy and paired:
        tau = float(seed_log_sd(table, n_test, crossed))
        bound = float(log_ratio_bounds(table, alpha, n_test)) if crossed is None else float("inf")
        out.update(seed_log_sd=tau, log_ratio_bound=bound, multiplicative_ok=bool(_gate_ok(tau, bound, delta)))
        if crossed is not None:
            out["gate_note"] = ("crossed seeds: the skew gate reads the runs' multiplicative spread over init and "
                                "data seeds; the log-ratio test has no crossed form, so a table at or above the gate "
                                "cannot pass it")
    return out


@functools.lru_cache(maxsize=128)
def _lognormal_ucb(n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """h_n(s) on a grid of s: the upper (1 - level) bound of log E p is mean(log p) + h_n(s) for n lognormal p with
    SD s of log p. It is the (1 - level) quantile of the generalised pivotal quantity of mu + sigma^2 / 2
    (Krishnamoorthy & Mathew 2003), T = -Z s sqrt((n - 1) / (n U)) + (n - 1) s^2 / (2 U), Z ~ N(0, 1),
    U ~ chi2(n - 1): given U = u, T is normal, so P(T <= t) is one integral over u, taken at 2,000 quantiles of
    U (exact to quadrature error, no random draws)."""
    u = stats.chi2.ppf((np.arange(2000) + 0.5) / 2000, n - 1)
    grid = np.linspace(0.0, 6.0, 241)
    h = np.zeros_like(grid)
    for i, sd in enumerate(grid[1:], start=1):
        mean, scale = sd * sd * (n - 1) / (2 * u), sd * np.sqrt((n - 1) / (n * u))

        def below(t: float, mean: np.ndarray = mean, scale: np.ndarray = scale) -> float:
            return float(stats.norm.cdf((t - mean) / scale).mean()) - (1.0 - level)

        hi = float(mean.max() + 10 * scale.max())
        h[i] = optimize.brentq(below, -10 * sd, hi, xtol=1e-10)
    return grid, h


def _log_mean_ucb(mean: np.ndarray, sd: np.ndarray, n: np.ndarray, level: float) -> np.ndarray:
    """Upper (1 - level) bound of log E p from the mean and SD of log p over n seeds (inf beyond the table's s)."""
    out = np.full(np.shape(mean), np.inf)
    for k in np.unique(n[n >= 2]):
        sel = n == k
        grid, h = _lognormal_ucb(int(k), float(level))
        out[sel] = np.where(sd[sel] <= grid[-1], mean[sel] + np.interp(sd[sel], grid, h), np.inf)
    return out


def _errors(tables: np.ndarray, n_test: int | None) -> np.ndarray:
    """1 - accuracy, floored at half a test example (0.5 / n_test; without n_test, half the table's smallest
    positive error) so that a perfect run has a finite log."""
    err = 1.0 - np.asarray(tables, dtype=float)
    if n_test:
        return np.maximum(err, 0.5 / n_test)
    with np.errstate(invalid="ignore"):
        pos = np.where(err > 0, err, np.inf)
    return np.maximum(err, 0.5 * np.nanmin(pos, axis=(-2, -1), keepdims=True))


def log_error_pairs(tables: np.ndarray, n_test: int | None = None) -> tuple[np.ndarray, ...]:
    """Per pair of levels of paired (..., L, S) accuracy tables, over the pair's shared seeds: the mean and SD of
    the log-error ratio r = log e_j - log e_k, the mean and SD of the log of the pair's mean error, and n."""
    err = _errors(tables, n_test)
    j, k = np.triu_indices(err.shape[-2], 1)
    ej, ek = err[..., j, :], err[..., k, :]
    r, lp = np.log(ej) - np.log(ek), np.log(0.5 * (ej + ek))
    n = np.isfinite(r).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # pairs without two shared seeds
        return (np.nanmean(r, axis=-1), np.nanstd(r, axis=-1, ddof=1), np.nanmean(lp, axis=-1),
                np.nanstd(lp, axis=-1, ddof=1), n)


def log_ratio_bounds(tables: np.ndarray, alpha: float, n_test: int | None = None,
                     ratio_share: float = 0.5) -> np.ndarray:
    """For paired (..., L, S) accuracy tables: the smallest delta the log-ratio intersection-union test shows every
    pair of levels inside of (infinite when a pair has fewer than two shared seeds).

    A pair's difference of expected errors is |E e_j - E e_k| = 2 tanh(|theta| / 2) m, theta = log(E e_j / E e_k),
    m = (E e_j + E e_k) / 2. theta is bounded by a paired t on the seeds' log-error ratios at alpha x
    ``ratio_share``, m by the lognormal-mean bound of the seeds' pair means at the rest (Bonferroni: the pair's
    level is alpha). Valid when a run's error is its level's mean times a seed factor shared by the levels (any
    distribution: it cancels in the ratio) times run noise of one distribution at every level, with pair means no
    heavier-tailed than lognormal; conservative where noise is additive (studies/ceiling_skew.py)."""
    rbar, rsd, lbar, lsd, n = log_error_pairs(tables, n_test)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = np.abs(rbar) + stats.t.ppf(1.0 - alpha * ratio_share, np.maximum(n - 1, 1)) * rsd / np.sqrt(n)
        bound = 2.0 * np.tanh(theta / 2.0) * np.exp(_log_mean_ucb(lbar, lsd, n, alpha * (1.0 - ratio_share)))
    return np.where(np.isfinite(bound) & (n >= 2), bound, np.inf).max(axis=-1)


def seed_log_sd(tables: np.ndarray, n_test: int | None = None, crossed: CrossedSeeds | None = None) -> np.ndarray:
    """For paired (..., L, S) accuracy tables: the SD over seeds of the log of each seed's mean error over the
    levels it has, the seeds' multiplicative spread (about the coefficient of variation of a shared seed factor).

    With ``crossed`` seeds the runs sharing an init or data seed are correlated, and their plain SD misses part of
    the spread (by 1/I of the init share and 1/J of the data share), so it reads the two-way variance components
    of the runs' log mean errors instead (init + data + residual, each negative one read as 0: an upward-biased,
    so conservative, reading) over the complete block of runs that have a level
    (:func:`~initmem.cube.crossed.complete_crossed_block`); inf
    where that block lacks two init or two data seeds, so that the gate cannot pass on a reading it lacks."""
    err = np.where(np.isfinite(tables), _errors(tables, n_test), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        run_log = np.log(np.nanmean(err, axis=-2))
        if crossed is None:
            return np.nanstd(run_log, axis=-1, ddof=1)
        g = crossed.grid(run_log)
        flat = g.reshape(-1, crossed.n_init, crossed.n_data)
        out = np.full(flat.shape[0], np.inf)
        for r, t in enumerate(flat):
            rows, cols = complete_crossed_block(np.isfinite(t))
            if rows.size >= 2 and cols.size >= 2:
                out[r] = _two_way_total_sd(t[np.ix_(rows, cols)])
        return out.reshape(g.shape[:-2]) if g.ndim > 2 else out[0]


def _two_way_total_sd(t: np.ndarray) -> float:
    """sqrt(var_row + var_col + var_resid) of a complete (I, J) table by the two-way mean squares without
    replication, every negative component read as 0."""
    n_i, n_j = t.shape
    m, r, c = t.mean(), t.mean(axis=1), t.mean(axis=0)
    ms_a = n_j * float(((r - m) ** 2).sum()) / (n_i - 1)
    ms_b = n_i * float(((c - m) ** 2).sum()) / (n_j - 1)
    ms_e = float(((t - r[:, None] - c[None, :] + m) ** 2).sum()) / ((n_i - 1) * (n_j - 1))
    return float(np.sqrt(max(ms_a - ms_e, 0.0) / n_j + max(ms_b - ms_e, 0.0) / n_i + ms_e))


def multiplicative_ok(tables: np.ndarray, delta: float, alpha: float, n_test: int | None = None,
                      crossed: CrossedSeeds | None = None) -> np.ndarray:
    """Whether the skew gate lets "forgets" through near the ceiling: the seeds' log-error SD is below SKEW_GATE
    (the paired t keeps its level), or the log-ratio test shows every pair inside +-delta at ``alpha``. With
    ``crossed`` seeds only the first reading exists (:func:`seed_log_sd`): the log-ratio test has no crossed form
    and is read as not shown."""
    if crossed is not None:
        return _gate_ok(seed_log_sd(tables, n_test, crossed), np.inf, delta)
    return _gate_ok(seed_log_sd(tables, n_test), log_ratio_bounds(tables, alpha, n_test), delta)


def _gate_ok(tau: np.ndarray | float, bound: np.ndarray | float, delta: float) -> np.ndarray:
    """The gate from its two readings: tau below SKEW_GATE (or undefined: fewer than two seeds), or the bound
    below delta."""
    return ~(np.asarray(tau) >= SKEW_GATE) | (np.asarray(bound) < delta)


def forgets_iut_ok(equivalence: dict[str, Any], near_ceiling: bool) -> bool:
    """The intersection-union route to "forgets" as the verdict reads it: near the ceiling also the skew gate,
    which must have passed: a gate that was not computed (independent seeds, a check without the accuracy's
    reading) fails there, since a check that did not run cannot vouch for the paired t's level."""
    return bool(equivalence.get("supports_forgets")) and (not near_ceiling
                                                          or equivalence.get("multiplicative_ok") is True)


def _pair_arrays(tables: np.ndarray, n_test: int | None = None, unit: float = 1.0,
                 crossed: CrossedSeeds | None = None) -> tuple[np.ndarray, ...]:
    """Pair indices, |mean difference|, SE (floored at the lattice's resolution with ``n_test``:
    :func:`_run_var_floor`) and degrees of freedom for paired (..., L, S) tables (NaN where a run is absent:
    each pair uses its shared seeds; a pair with fewer than two has NaN statistics). ``crossed``: the
    crossed-block moments over the whole design (a pair with an absent run has NaN statistics)."""
    j, k = np.triu_indices(tables.shape[-2], 1)
    d = tables[..., j, :] - tables[..., k, :]
    if crossed is not None:
        mean, se, df, floor = _crossed_stats(d, crossed, 2.0 * _run_var_floor(n_test, unit), complete_only=True)
        return j, k, np.abs(mean), np.maximum(se, floor), np.where(np.isfinite(df), df, 1.0)
    n = np.isfinite(d).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN pairs (absent runs)
        ad = np.abs(np.nanmean(d, axis=-1))
        se = np.maximum(np.nanstd(d, axis=-1, ddof=1) / np.sqrt(n),
                        np.sqrt(2.0 * _run_var_floor(n_test, unit) / np.maximum(n, 1)))
    bad = n < 2
    return j, k, np.where(bad, np.nan, ad), np.where(bad, np.nan, se), np.maximum(n - 1, 1).astype(float)


def _peak_arrays(tables: np.ndarray, mid: int, n_test: int | None = None,
                 unit: float = 1.0, crossed: CrossedSeeds | None = None) -> tuple[np.ndarray, ...]:
    """|mean|, SE (floored as :func:`_peak_contrast`) and df of the peak contrast of paired (..., L, S) tables,
    levels in sigma_w order (NaN with fewer than two seeds shared by the three levels; ``crossed``: the
    crossed-block moments, NaN with an absent run)."""
    c = tables[..., mid, :] - 0.5 * (tables[..., 0, :] + tables[..., -1, :])
    if crossed is not None:
        mean, se, df, floor = _crossed_stats(c, crossed, 1.5 * _run_var_floor(n_test, unit), complete_only=True)
        return np.abs(mean), np.maximum(se, floor), np.where(np.isfinite(df), df, 1.0)
    n = np.isfinite(c).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ac = np.abs(np.nanmean(c, axis=-1))
        se = np.maximum(np.nanstd(c, axis=-1, ddof=1) / np.sqrt(n),
                        np.sqrt(1.5 * _run_var_floor(n_test, unit) / np.maximum(n, 1)))
    bad = n < 2
    return np.where(bad, np.nan, ac), np.where(bad, np.nan, se), np.maximum(n - 1, 1).astype(float)


def _share_levels(spend: Spending, share: np.ndarray) -> np.ndarray:
    """Each share's own level at this analysis (a sequential look spends each share from its own allotment)."""
    levels = {float(s): spend.level(float(s)) for s in np.unique(share)}
    return np.array([levels[float(s)] for s in np.ravel(share)]).reshape(np.shape(share))


def _ordered_pairs(tables: np.ndarray, alpha: float | Spending, n_test: int | None = None, unit: float = 1.0,
                   sigma_w: np.ndarray | None = None, crossed: CrossedSeeds | None = None) -> tuple[np.ndarray, ...]:
    """|mean|, SE, df and the ordered test's level of every test of paired (..., L, S) tables, levels in sigma_w
    order (the extreme pair is the first against the last level): the pairs, then, with three or more levels,
    the peak contrast (its middle level from ``sigma_w``, :func:`middle_level`; without it the grid is taken as
    geometric, so the middle index, the lower of two)."""
    tables = np.asarray(tables, dtype=float)
    n_lev = tables.shape[-2]
    j, k, ad, se, df = _pair_arrays(tables, n_test, unit, crossed)
    df = np.broadcast_to(df, ad.shape)
    ext = (j == 0) & (k == n_lev - 1)
    w_ext, w_peak, w_fall = step_shares(n_lev)
    share = np.where(ext, w_ext, w_fall / max(int((~ext).sum()), 1))
    if n_lev >= 3 and w_peak > 0:
        mid = (n_lev - 1) // 2 if sigma_w is None else middle_level(np.sort(np.asarray(sigma_w, dtype=float)))
        ac, c_se, c_df = _peak_arrays(tables, mid, n_test, unit, crossed)
        ad, se = np.concatenate([ad, ac[..., None]], axis=-1), np.concatenate([se, c_se[..., None]], axis=-1)
        df = np.concatenate([df, np.broadcast_to(c_df, ac.shape)[..., None]], axis=-1)
        share = np.append(share, w_peak)
    level = _share_levels(as_spending(alpha), share)
    return ad, se, df, np.broadcast_to(level, ad.shape)


def remembers_at(tables: np.ndarray, delta: float, alpha: float | Spending = ALPHA, *, n_test: int | None = None,
                 unit: float = 1.0, sigma_w: np.ndarray | None = None,
                 crossed: CrossedSeeds | None = None) -> np.ndarray:
    """For paired (..., L, S) tables, levels in sigma_w order: whether the ordered test shows
    "remembers" at ``delta`` (the planner's and the simulations' vectorised form of
    :func:`paired_check`; the extreme pair is assumed testable). ``n_test`` floors the SEs at the lattice's
    resolution (``unit``: outcome units per table unit, for standardised tables); ``sigma_w`` names the peak
    contrast's middle level (:func:`middle_level`); ``crossed``: complete crossed designs, each test by the
    crossed-block moments (:func:`crossed_moments`)."""
    ad, se, df, level = _ordered_pairs(tables, alpha, n_test, unit, sigma_w, crossed)
    p = _exceed_p(ad, se, df, delta, level)
    return (np.where(np.isnan(p), 1.0, p) <= level).any(axis=-1)


def remembers_bounds(tables: np.ndarray, alpha: float | Spending = ALPHA, iterations: int = 30, *,
                     n_test: int | None = None, unit: float = 1.0, sigma_w: np.ndarray | None = None,
                     crossed: CrossedSeeds | None = None) -> np.ndarray:
    """The largest delta at which :func:`remembers_at` still holds, per table (-inf when none): the
    readout of which memory a design could show. Per test the Berger-Boos critical t lies between the
    one-sided and the two-sided t at (level - beta), so the test's bound is found by bisection there."""
    ad, se, df, level = _ordered_pairs(tables, alpha, n_test, unit, sigma_w, crossed)
    room = level * (1.0 - NUISANCE_SHARE)
    lo, hi = ad - stats.t.isf(room / 2.0, df) * se, ad - stats.t.isf(room, df) * se
    hi = np.where(np.isnan(hi), -np.inf, hi)
    two_sided = np.minimum(np.where(np.isnan(lo), -np.inf, lo), hi)   # rejected at any delta below it
    search = hi > 0
    lo = np.where(search, np.maximum(two_sided, 0.0), hi)
    for _ in range(iterations):         # halve [lo, hi]: hi is never rejected, lo is (or is 0)
        mid = 0.5 * (lo + hi)
        rej = _exceed_p(ad, se, df, np.where(search, mid, 0.0), level) <= level
        lo, hi = np.where(search & rej, mid, lo), np.where(search & ~rej, mid, hi)
    return np.where(lo > 0, lo, np.minimum(two_sided, lo)).max(axis=-1)


def forgets_bounds(tables: np.ndarray, alpha: float = ALPHA, *, n_test: int | None = None,
                   unit: float = 1.0, crossed: CrossedSeeds | None = None) -> np.ndarray:
    """For paired (..., L, S) tables: the smallest delta the intersection-union test shows every
    pair inside of, max over pairs of |mean d| + t_{1 - alpha, n-1} SE(d) (infinite when a pair
    cannot be tested; SEs floored with ``n_test`` as in :func:`remembers_at`). "forgets" is supported at delta
    exactly when this bound is below delta (vectorised :func:`equivalence_check`). ``crossed``: complete crossed
    designs, every pair by the crossed-block moments (:func:`crossed_moments`)."""
    tables = np.asarray(tables, dtype=float)
    _, _, ad, se, df = _pair_arrays(tables, n_test, unit, crossed)
    bound = ad + stats.t.ppf(1.0 - alpha, df) * se
    return np.where(np.isnan(bound), np.inf, bound).max(axis=-1)


def bonferroni_bounds(tables: np.ndarray, alpha: float = ALPHA, *, two_sided: bool = False) -> np.ndarray:
    """The former "remembers" check (Bonferroni over all pairs, one-sided in the observed
    direction) in bound form, kept to measure what the ordered test buys (studies/calibration.py);
    ``two_sided`` gives it the same validity correction as :func:`_exceed_p`."""
    tables = np.asarray(tables, dtype=float)
    j, _, ad, se, df = _pair_arrays(tables)
    level = alpha / j.size / (2.0 if two_sided else 1.0)
    bound = ad - stats.t.ppf(1.0 - level, df) * se
    return np.where(np.isnan(bound), -np.inf, bound).max(axis=-1)


def two_sided_ordered_bounds(tables: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """The ordered test with every test's p two-sided (as in 0.3.0-0.4.0, but with the current split of alpha,
    the peak contrast included), in bound form: kept to measure what the Berger-Boos p buys, beside it in one
    run (studies/calibration.py)."""
    ad, se, df, level = _ordered_pairs(tables, alpha)
    bound = ad - stats.t.ppf(1.0 - level / 2.0, df) * se
    return np.where(np.isnan(bound), -np.inf, bound).max(axis=-1)


def _test_name(paired: bool, equivalence: bool = False, crossed: bool = False) -> str:
    kind = "paired t on per-seed differences" if paired else "Welch t (independent seeds)"
    if paired and crossed:
        kind = ("crossed-seed t on per-run differences (SE^2 = var(init-seed means) / I + var(data-seed means) / J, "
                "Welch-Satterthwaite df)")
    if equivalence:
        return f"{kind}, intersection-union test: every pair of sigma_w levels inside +-delta by two one-sided tests"
    test = "Berger-Boos test" if paired else "two-sided test"
    fall = 1 - EXTREME_WEIGHT - PEAK_WEIGHT
    return (f"{kind}, |E d| > delta ({test}), ordered: the extreme sigma_w pair at alpha x {EXTREME_WEIGHT:g}, "
            f"the peak contrast (the middle sigma_w level against the mean of the two ends) at alpha x "
            f"{PEAK_WEIGHT:g}, then the other pairs, Bonferroni at alpha x {fall:.2g} (with two levels the one "
            "pair at alpha)")


__all__ = ["CEILING", "CrossedSeeds", "EXTREME_WEIGHT", "crossed_moments",
           "FORGETS_IUT_SHARE", "FORGETS_MODEL_SHARE", "LATTICE_STEPS", "NUISANCE_SHARE",
           "PEAK_WEIGHT", "SKEW_GATE", "STEP_EXTREME", "STEP_FALLBACK", "STEP_PEAK", "bonferroni_bounds",
           "equivalence_check", "extreme_weight", "forgets_bounds", "forgets_iut_ok", "forgets_levels",
           "log_error_pairs", "log_ratio_bounds", "middle_level", "multiplicative_ok", "paired_check",
           "remembers_at", "remembers_bounds", "seed_log_sd", "step_shares", "two_sided_ordered_bounds"]

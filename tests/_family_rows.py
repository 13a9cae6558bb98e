"""Simulated rows of a family for the Holm null control (models/family.py): rule-level tables decided as the
analysis decides them, each as the ``RowEvidence`` summary.json would give, and families cut from them.

Shared by tests/test_family.py and ``studies/family_calibration.py`` (which prints the full tables). The
posterior probabilities come from the planner's quadrature (models/plan.py), the paired p-values from the
analysis's own test functions, vectorised (:func:`check_tests` compares them with the per-table functions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from initmem import names as N
from initmem.models import paired
from initmem.models.designs import SCALES, noise_sd, rule_tables
from initmem.models.family import RowEvidence, holm_verdicts, passes
from initmem.models.paired import equivalence_check, forgets_levels, paired_check
from initmem.models.plan import posterior_spread, sequential_decisions
from initmem.models.sequential import SEQUENTIAL_DESIGN, Spending
from initmem.models.summaries import binomial_mcse, decide

DELTA = 0.01                       # the designs' delta: one accuracy point
KINDS = ("ramp", "step", "single")  # the shapes at delta (and of the true memories), in turn along a family
TRUE_SIZE = 3.0                    # a true memory's spread, in deltas
DRAWS = 4000                       # posterior draws of a default analysis (4 chains x 1,000)
SIZES = (14, 5)                    # the atlas's rows, and a small table
DECIDED = (N.REMEMBERS, N.FORGETS)


def ordered_p(tables: np.ndarray, sigma_w: np.ndarray, delta: float, spend: Spending,
              n_test: int | None) -> np.ndarray:
    """The ordered paired test's adjusted p-value of complete tables, as ``paired_check`` records it in summary.json.

    Parameters
    ----------
    tables : numpy.ndarray
        (n, L, S) complete tables in outcome units, levels in sigma_w order.
    sigma_w : numpy.ndarray
        (L,) the levels (the peak contrast's middle level).
    delta : float
        The smallest spread that matters.
    spend : Spending
        The analysis's spending (its shares' levels).
    n_test : int or None
        The test set's size: floors every SE at the accuracy lattice, as the analysis does.

    Returns
    -------
    numpy.ndarray
        (n,) the smallest p / share over the steps' tests (extreme pair, peak contrast, fallback pairs), at most 1:
        vectorised so that a pool of 100,000 tables is cheap; :func:`check_tests` checks it against
        ``paired_check``.
    """
    ad, se, df, level = paired._ordered_pairs(tables, spend, n_test, 1.0, sigma_w)
    p = paired._exceed_p(ad, se, df, delta, level)
    return np.minimum(1.0, np.min(p * spend.level(1.0) / np.maximum(level, 1e-300), axis=-1))


def iut_p(tables: np.ndarray, delta: float, n_test: int | None) -> np.ndarray:
    """The intersection-union test's p-value of complete tables, as ``equivalence_check`` records it.

    Parameters
    ----------
    tables : numpy.ndarray
        (n, L, S) complete tables in outcome units.
    delta : float
        The smallest spread that matters.
    n_test : int or None
        The test set's size (the SE floor).

    Returns
    -------
    numpy.ndarray
        (n,) the largest TOST p over the pairs of levels.
    """
    _, _, ad, se, df = paired._pair_arrays(tables, n_test)
    return paired._inside_p(ad, se, df, delta).max(axis=-1)


def check_tests(tables: np.ndarray, sigma_w: np.ndarray, delta: float, spend: Spending, n_test: int | None) -> float:
    """The largest difference between the vectorised p-values and the analysis's own per-table tests.

    Parameters
    ----------
    tables, sigma_w, delta, spend, n_test
        As :func:`ordered_p`.

    Returns
    -------
    float
        max |difference| over both tests and every table (0 up to rounding when they agree).
    """
    po, pi = ordered_p(tables, sigma_w, delta, spend, n_test), iut_p(tables, delta, n_test)
    iut_alpha = forgets_levels(spend)[0]
    real_o = [paired_check(t, sigma_w, delta, alpha=spend, n_test=n_test)["p_value"] for t in tables]
    real_i = [equivalence_check(t, sigma_w, delta, alpha=iut_alpha, n_test=n_test, accuracy=True)["p_value"]
              for t in tables]
    return float(max(np.max(np.abs(po - np.array(real_o))), np.max(np.abs(pi - np.array(real_i)))))


def row_evidence(tables: np.ndarray, scale: str, rng: np.random.Generator, *, delta: float = DELTA,
                 alpha: float = 0.05, draws: int = DRAWS, spend: Spending | None = None) -> list[RowEvidence]:
    """Each table decided as the analysis decides it, as a row of a family.

    Parameters
    ----------
    tables : numpy.ndarray
        (n, L, S) complete accuracy tables of one scale (models/designs.py, ``rule_tables``).
    scale : str
        "demo" or "paper" (``SCALES``): the test set's size and the noise scale the tables are standardised by.
    rng : numpy.random.Generator
        The quadrature posterior's draws.
    delta : float
        The smallest spread that matters.
    alpha : float
        The fixed design's level.
    draws : int
        Posterior draws per table (the probabilities' resolution and the borderline band).
    spend : Spending, optional
        A look of a sequential design (each share of alpha spent from its own allotment); default the fixed design
        at ``alpha``.

    Returns
    -------
    list of RowEvidence
        One per table: the verdict of models/summaries.py's ``decide`` and what it rests on.
    """
    n_test = int(SCALES[scale]["n_test"])
    sig = noise_sd(n_test)
    n_lev = tables.shape[1]
    sigma_w = np.geomspace(0.25, 8.0, n_lev)
    spend = Spending(alpha) if spend is None else spend
    p_ord = ordered_p(tables, sigma_w, delta, spend, n_test)
    p_iut = iut_p(tables, delta, n_test)
    iut_alpha = forgets_levels(spend)[0]
    post = posterior_spread((tables - 0.9) / sig, delta / sig, rng, n_post=draws, sigma_w=sigma_w, alpha=spend,
                            n_test=n_test, unit=sig)
    rows = []
    for p_gt, p_lt, po, pi in zip(post["p_gt"], post["p_lt"], p_ord, p_iut, strict=True):
        label = decide(float(p_gt), float(p_lt), level=spend,
                       mcse=(float(binomial_mcse(p_gt, draws)), float(binomial_mcse(p_lt, draws))),
                       check={"supports_remembers": bool(po < spend.level(1.0)), "step": None},
                       equivalence={"supports_forgets": bool(pi < iut_alpha)}, near=False, n_levels=n_lev,
                       draws=draws).label
        rows.append(RowEvidence(label, spend, float(p_gt), float(p_lt), float(po), float(pi), gate_ok=True,
                                near_ceiling=False, n_levels=n_lev, draws=draws))
    return rows


def pool(size: float, scale: str, n_seed: int, n: int, rng: np.random.Generator,
         draws: int = DRAWS) -> list[RowEvidence]:
    """``n`` rows of one spread (in deltas), the shapes of ``KINDS`` in turn (row i is ``KINDS[i % 3]``).

    Parameters
    ----------
    size : float
        The true spread in deltas (1: at delta; 3: a true memory).
    scale : str
        "demo" or "paper".
    n_seed : int
        Seeds per cell.
    n : int
        Rows.
    rng : numpy.random.Generator
        The tables' and the quadrature's randomness.
    draws : int
        Posterior draws per table.

    Returns
    -------
    list of RowEvidence
    """
    per = -(-n // len(KINDS))
    tabs = [rule_tables(kind, scale, per, rng, n_seed=n_seed, delta=size * DELTA) for kind in KINDS]
    order = np.stack(tabs, axis=1).reshape(per * len(KINDS), *tabs[0].shape[1:])[:n]   # kinds in turn
    return row_evidence(order, scale, rng, draws=draws)


CODE = {N.REMEMBERS: 1, N.FORGETS: -1}


def sequential_pool(size: float, scale: str, looks: tuple[int, ...], n: int, rng: np.random.Generator,
                    draws: int = DRAWS, design: str = SEQUENTIAL_DESIGN) -> tuple[list[RowEvidence], np.ndarray]:
    """``n`` rows of one spread decided by the sequential design of ``initmem run --until-decided``.

    Each row's table holds the last look's seeds; look k analyzes its first n_k seeds at look k's spending
    (models/plan.py ``sequential_decisions``, the planner's loop over the looks), and a row decided at a look keeps
    that look's evidence, as the run's final summary keeps the deciding look's entry (analysis/sequential.py); a row
    still undecided keeps the last look's. So ``RowEvidence.spending`` is the deciding look's, as
    models/family.py's ``summary_rows`` reads it from a sequential run.

    Parameters
    ----------
    size, scale, n, rng, draws
        As :func:`pool`.
    looks : tuple of int
        Seeds per cell at each look (the atlas: 4, 8, 12, 16).
    design : str
        The sequential design (models/sequential.py; the analysis's default).

    Returns
    -------
    tuple
        The rows, and the seeds each spent.
    """
    per = -(-n // len(KINDS))
    tabs = [rule_tables(kind, scale, per, rng, n_seed=looks[-1], delta=size * DELTA) for kind in KINDS]
    tables = np.stack(tabs, axis=1).reshape(per * len(KINDS), *tabs[0].shape[1:])[:n]   # kinds in turn
    evidence: list[RowEvidence | None] = [None] * len(tables)

    def decide_open(idx: np.ndarray, n_k: int, spend: Spending) -> np.ndarray:
        rows = row_evidence(tables[idx, :, :n_k], scale, rng, draws=draws, spend=spend)
        for i, r in zip(idx, rows, strict=True):
            evidence[i] = r
        return np.array([CODE.get(r.verdict, 0) for r in rows], dtype=int)

    sig = noise_sd(int(SCALES[scale]["n_test"]))
    _, seeds = sequential_decisions(tables / sig, DELTA / sig, looks, rng, None, alpha=0.05, design=design,
                                    decide_open=decide_open)
    return [r for r in evidence if r is not None], seeds


def full_share(rows: Mapping[str, RowEvidence]) -> dict[str, str]:
    """A wrong family rule (negative control): every row tested at the full share of alpha."""
    return {k: r.verdict if passes(r, 1.0) else N.UNDECIDED for k, r in rows.items()}


def decided_only_holm(rows: Mapping[str, RowEvidence]) -> dict[str, str]:
    """A wrong family rule (negative control): Holm with the shares counted over the decided rows only."""
    kept = {k: N.UNDECIDED for k in rows}
    kept.update(holm_verdicts({k: r for k, r in rows.items() if r.verdict in DECIDED}))
    return kept


def bonferroni(rows: Mapping[str, RowEvidence]) -> dict[str, str]:
    """Single-step Bonferroni: every row tested at the share 1/r (valid, less powerful than Holm)."""
    return {k: r.verdict if passes(r, 1.0 / len(rows)) else N.UNDECIDED for k, r in rows.items()}


def raw(rows: Mapping[str, RowEvidence]) -> dict[str, str]:
    """The per-row verdicts, with no family rule."""
    return {k: r.verdict for k, r in rows.items()}


RULES: dict[str, Callable[[Mapping[str, RowEvidence]], dict[str, str]]] = {
    "raw": raw, "holm": holm_verdicts, "bonferroni": bonferroni, "full_share": full_share,
    "decided_only": decided_only_holm}


@dataclass(frozen=True)
class Family:
    """One family: its rows and which verdict is false on each (a row at delta: both; a true memory: "forgets")."""

    rows: dict[str, RowEvidence]
    false: dict[str, tuple[str, ...]]


def families(at_delta: list[RowEvidence], true: list[RowEvidence], r: int, n_true: int) -> list[Family]:
    """Families of ``r`` rows, ``n_true`` of them true memories, cut in order from the two pools.

    Parameters
    ----------
    at_delta, true : list of RowEvidence
        The pools: rows at a spread of delta and true memories.
    r : int
        Rows per family.
    n_true : int
        True memories per family (0: every row at delta).

    Returns
    -------
    list of Family
        As many as both pools give.
    """
    n_null = r - n_true
    n_fam = len(at_delta) // n_null if not n_true else min(len(at_delta) // n_null, len(true) // n_true)
    out = []
    for f in range(n_fam):
        rows = {f"d{i}": at_delta[f * n_null + i] for i in range(n_null)}
        rows.update({f"t{i}": true[f * n_true + i] for i in range(n_true)})
        out.append(Family(rows, {k: DECIDED if k.startswith("d") else (N.FORGETS,) for k in rows}))
    return out

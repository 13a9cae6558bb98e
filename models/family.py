"""Verdicts over a family of pipelines: Holm's step-down across rows, and the family's expected false verdicts.

Each pipeline's verdict keeps its own false-verdict rate at alpha (docs/memory-model.md). A table of many rows (the
memory atlas, docs/atlas.md) is also read as a whole, so it states two family views beside the per-row verdicts:

* the expected number of false verdicts over its decided rows, at most ``alpha`` per decided row;
* the verdicts that survive Holm's step-down across the rows (family-wise error at about alpha).

Holm's step-down is closed testing with Bonferroni's local tests: while some rows remain undecided by the family,
test each remaining row at the share ``1 / r`` of alpha (``r`` rows remain), keep the verdicts that pass, and
repeat with the rest; stop when a round keeps none. A row passes at share ``s`` when its verdict's own rule
(models/summaries.py, :func:`~initmem.models.summaries.verdict`) holds with every share of alpha in it multiplied
by ``s``:

* "remembers": the ordered paired test's adjusted p at most ``level(s)`` (the model's agreement,
  P(spread > delta) >= 1/2, does not depend on the share);
* "forgets": ``1 - P(spread < delta)`` at most ``level(s x FORGETS_MODEL_SHARE)`` (the model's route, open with at
  least ``MIN_LEVELS_MODEL_FORGETS`` levels) or the intersection-union test's p at most
  ``level(s x FORGETS_IUT_SHARE)`` with the skew gate passed; near the ceiling both routes.

``level(share)`` is :meth:`Spending.level <initmem.models.sequential.Spending.level>` of the row's own analysis: a
fixed design's ``share x alpha``, or the level at the row's deciding look of a sequential design, computed from the
share's own allotment (a spending function is not linear in alpha). A posterior probability of 1 estimated from
``draws`` draws stands for ``1 - 1/(draws + 1)``.

Where this is not exact: the paired tests' adjusted p-values are taken as summary.json records them, computed at the
full share. Re-run at a smaller share, their Berger-Boos nuisance bound (``NUISANCE_SHARE`` of the level) and the
ordered test's step levels would be computed at that share's own levels; and the Monte Carlo band that flags an
undecided row borderline is not re-applied. For a fixed design with paired p-values that do not move with the level,
this is Holm's procedure exactly (tests/test_family.py checks it against pingouin's Holm).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from initmem import names as N
from initmem import results as R
from initmem.models.paired import FORGETS_IUT_SHARE, FORGETS_MODEL_SHARE
from initmem.models.sequential import Spending
from initmem.models.summaries import AGREE, MIN_LEVELS_MODEL_FORGETS


@dataclass(frozen=True)
class RowEvidence:
    """What one row's verdict rests on, as summary.json records it.

    Attributes
    ----------
    verdict : str
        The row's verdict ("remembers", "forgets", "undecided"; a borderline row is "undecided").
    spending : Spending
        The analysis that decided it: a fixed design's alpha, or the deciding look of a sequential design.
    p_gt, p_lt : float
        The posterior probabilities of a spread above and below delta.
    paired_p : float or None
        The ordered paired test's adjusted p-value (compared with ``level(1)``).
    iut_p : float or None
        The intersection-union test's p-value (compared with ``level(FORGETS_IUT_SHARE)``).
    gate_ok : bool
        The skew gate lets the intersection-union test through (always True away from the ceiling).
    near_ceiling : bool
        "forgets" needs both routes.
    n_levels : int
        sigma_w levels with usable runs (the model's route to "forgets" needs ``MIN_LEVELS_MODEL_FORGETS``).
    draws : int
        Posterior draws behind the probabilities.
    """

    verdict: str
    spending: Spending
    p_gt: float
    p_lt: float
    paired_p: float | None
    iut_p: float | None
    gate_ok: bool = True
    near_ceiling: bool = False
    n_levels: int = 3
    draws: int = 4000


def _tail(p: float, draws: int) -> float:
    """``1 - p``, floored at the smallest tail ``draws`` posterior draws can show."""
    return max(1.0 - float(p), 1.0 / (draws + 1))


def passes(row: RowEvidence, share: float) -> bool:
    """Whether the row's verdict holds with every share of alpha in its rule multiplied by ``share``.

    Parameters
    ----------
    row : RowEvidence
        The row's probabilities, tests and spending.
    share : float
        The row's share of the family's alpha, in (0, 1].

    Returns
    -------
    bool
        False for an undecided row (borderline or not).
    """
    level = row.spending.level
    if row.verdict == N.REMEMBERS:
        return (row.paired_p is not None and float(row.paired_p) <= level(share)
                and float(row.p_gt) >= AGREE)
    if row.verdict != N.FORGETS:
        return False
    model = (row.n_levels >= MIN_LEVELS_MODEL_FORGETS
             and _tail(row.p_lt, row.draws) <= level(share * FORGETS_MODEL_SHARE))
    iut = row.iut_p is not None and row.gate_ok and float(row.iut_p) <= level(share * FORGETS_IUT_SHARE)
    return (model and iut) if row.near_ceiling else (model or iut)


def holm_verdicts(rows: Mapping[str, RowEvidence]) -> dict[str, str]:
    """Each row's verdict under Holm's step-down across the rows, else "undecided".

    Parameters
    ----------
    rows : mapping of str to RowEvidence
        Every row of the family, undecided ones included (they count in the shares).

    Returns
    -------
    dict of str to str
        Per row: its own verdict where Holm keeps it, "undecided" where it does not.
    """
    kept = {name: N.UNDECIDED for name in rows}
    remaining = list(rows)
    while remaining:
        share = 1.0 / len(remaining)
        passed = [name for name in remaining if passes(rows[name], share)]
        if not passed:
            break
        for name in passed:
            kept[name] = rows[name].verdict
        remaining = [name for name in remaining if name not in passed]
    return kept


def summary_rows(summary: R.Summary) -> dict[str, RowEvidence]:
    """Every pipeline of an analysis as a row of the family, read from its summary.json.

    Parameters
    ----------
    summary : Summary
        The analysis's summary (a sequential run's: each pipeline's entry is its deciding look's).

    Returns
    -------
    dict of str to RowEvidence
    """
    info = summary.spending
    alpha = info.alpha if info is not None else (summary.alpha or 0.05)
    seq = summary.sequential
    draws = (info.draws if info is not None and info.draws else 4000)
    out = {}
    for name, p in summary.pipelines.items():
        if seq is not None and seq.looks and p.decided_look:
            spend = Spending(alpha, tuple(seq.looks), p.decided_look - 1, seq.design or Spending().design)
        elif info is not None and info.looks and info.look:
            spend = Spending(alpha, tuple(info.looks), info.look - 1, info.design or Spending().design)
        else:
            spend = Spending(alpha)
        eq, check = p.equivalence_check, p.paired_check
        out[name] = RowEvidence(
            verdict=str(p.verdict), spending=spend, p_gt=float(p.p_spread_gt_delta or 0.0),
            p_lt=float(p.p_spread_lt_delta or 0.0), paired_p=None if check is None else check.p_value,
            iut_p=None if eq is None else eq.p_value,
            gate_ok=not p.near_ceiling or bool(eq is not None and eq.multiplicative_ok),
            near_ceiling=bool(p.near_ceiling), n_levels=int(p.n_sigma), draws=int(draws))
    return out


def expected_false_verdicts(rows: Mapping[str, RowEvidence]) -> float:
    """The bound on the expected number of false verdicts over the family: alpha per decided row.

    Parameters
    ----------
    rows : mapping of str to RowEvidence
        Every row of the family.

    Returns
    -------
    float
    """
    return float(sum(r.spending.alpha for r in rows.values() if r.verdict in (N.REMEMBERS, N.FORGETS)))


__all__ = ["RowEvidence", "expected_false_verdicts", "holm_verdicts", "passes", "summary_rows"]

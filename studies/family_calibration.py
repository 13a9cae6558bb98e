"""Family-wise error of Holm's step-down across a table's rows (models/family.py), on simulated tables.

A table of pipelines (the memory atlas, docs/atlas.md: 14 rows) is read as a whole under Holm's step-down:
closed testing with Bonferroni's local tests, each row re-decided at the share 1/r of alpha by its own rule
(``passes``). The module claims a family-wise error at about alpha. This study measures it where every false
verdict is possible: families whose rows are NULL for the verdict they could get wrong.

Rows. Each row is one simulated pipeline, a (levels x seeds) table of models/designs.py's rule-level designs
(``rule_tables``: seed effect 1.5 and run noise 1 noise unit, the noise 0.6 x the binomial SD at 90% accuracy), at
delta = 1 point, decided without NUTS as the analysis decides it: the ordered paired test's adjusted p and the
intersection-union test's p of models/paired.py (``paired_check``'s and ``equivalence_check``'s p-values, computed
here vectorised by the same private functions and checked against them, ``check_tests``), the memory model's
P(spread > delta) and P(spread < delta) by the planner's quadrature (models/plan.py, ``posterior_spread``, 4,000
posterior draws: the analysis's default), and the verdict by models/summaries.py's ``decide`` with the binomial
Monte Carlo error of 4,000 draws (its borderline band). Each row becomes a :class:`RowEvidence` as
``summary_rows`` reads one from summary.json: a fixed design at alpha = 0.05, draws = 4000.

Families (per scale -- demo: 720 test examples, 6 levels; paper: 10,000, 7 levels -- and 4 or 8 seeds):

* ``at delta``: every row's spread exactly delta (a ramp, a step and one level at delta, in turn), where both a
  false "remembers" and a false "forgets" are possible: any verdict is false;
* ``mixed``: half the rows (2 of 5, 7 of 14) true memories of 3 x delta (the same three shapes), whose "remembers"
  is right (only "forgets" is false), the rest at delta.

Per family design: the family-wise error (any false verdict in the family) of the per-row verdicts (raw), of
Holm's step-down (``holm_verdicts``) and of single-step Bonferroni (every row at 1/r, for comparison), the expected
number of raw false verdicts per family, and on mixed families the share of true memories each keeps. Negative
controls (deliberately wrong family rules, which must show an excess wherever the raw verdicts do): every row
tested at the full share, and Holm with the shares counted over the decided rows only (undecided rows dropped from
r). The last table gives the per-row false rates, raw and when re-decided at the shares 1/5 and 1/14 (against their
nominal 5% / r).

Families are cut from one pool of rows per scale and seed count (``--families`` families of 14; the families of 5
take as many as the same pool gives), so the designs' estimates are correlated with one another; each is a
binomial count over independent families. Intervals: 95% Wilson (for the expected count: mean +- 1.96 SE).

    python studies/family_calibration.py [--families 1000] [--scales demo,paper] [--seeds 4,8] [--draws 4000]
    python studies/family_calibration.py --looks 4,8,12,16 --scales paper --families 500

``--looks``: every row decided by the sequential design of ``initmem run --until-decided`` instead of at one fixed
look: its table holds the last look's seeds, look k decides the rows still open on their first n_k seeds at look
k's spending (models/plan.py ``sequential_decisions``, the planner's loop over the looks), and a decided row keeps
its deciding look's evidence, an undecided one its last look's, as the run's final summary keeps them
(tests/_family_rows.py ``sequential_pool``). Holm then reads each row at its own look's levels, as it reads the
atlas. Output (10,500 rows, 126 CPU-s, 7 minutes on a loaded 2-core machine): Holm's family-wise error 2.00%
[1.09, 3.64] for 14 rows at delta, 1.00% [0.43, 2.32] mixed, 2.07% [1.45, 2.96] and 2.17% [1.59, 2.97] for 5
rows; the per-row verdicts alone 44.4% of families of 14; per row at delta 3.21% false "remembers", 0.74% false
"forgets", 0.14% kept at 1/14; Holm keeps 90.7% of the true memories among 14 rows; rows at delta spend 15.75
seeds per cell on average, true memories 4.00 (docs/sequential.md, docs/atlas.md).

What it shows: Holm's family-wise error stays at or below alpha in every design, 0-2.5% (the largest 2.54% [2.07,
3.12], 3,500 families of 5 rows at the paper's scale with 8 seeds), because each row re-decided at 1/r is wrong
less often than alpha / r (0.13% against 0.36% at 1/14); the raw verdicts give a false verdict in up to 37% of the
families of 14, and both wrong family rules show an excess wherever the raw verdicts do. Holm's price is power
where the paired tests are weak: among 14 rows at the demo's scale with 4 seeds it keeps 10% of the true memories
of 3 x delta that the rows alone decide 74% of the time. The rows are independent across a family and decided at
one fixed look; tests/test_family.py runs the level test and the negative controls on 3,000 rows of the paper's
scale at 8 seeds.

Output of ``python studies/family_calibration.py`` (the defaults: 1,000 families of 14 rows per design, 2,800 and
3,500 of 5; 84,000 rows; 278 s on one core with one BLAS thread, about 9 minutes on a shared one):

    Family-wise error, families with a false verdict -- k: % [95% Wilson]:

    | family | r | scale | seeds | families | raw verdicts | Holm | Bonferroni |
    | --- | --- | --- | --- | --- | --- | --- | --- |
    | at delta | 14 | demo | 4 | 1000 | 109: 10.90 [9.12, 12.98] | 0: 0.00 [0.00, 0.38] | 0: 0.00 [0.00, 0.38] |
    | mixed | 14 | demo | 4 | 1000 | 58: 5.80 [4.51, 7.42] | 0: 0.00 [0.00, 0.38] | 0: 0.00 [0.00, 0.38] |
    | at delta | 5 | demo | 4 | 2800 | 114: 4.07 [3.40, 4.87] | 5: 0.18 [0.08, 0.42] | 5: 0.18 [0.08, 0.42] |
    | mixed | 5 | demo | 4 | 3500 | 85: 2.43 [1.97, 2.99] | 6: 0.17 [0.08, 0.37] | 4: 0.11 [0.04, 0.29] |
    | at delta | 14 | demo | 8 | 1000 | 244: 24.40 [21.84, 27.16] | 5: 0.50 [0.21, 1.17] | 5: 0.50 [0.21, 1.17] |
    | mixed | 14 | demo | 8 | 1000 | 138: 13.80 [11.80, 16.08] | 5: 0.50 [0.21, 1.17] | 2: 0.20 [0.05, 0.73] |
    | at delta | 5 | demo | 8 | 2800 | 275: 9.82 [8.77, 10.98] | 34: 1.21 [0.87, 1.69] | 34: 1.21 [0.87, 1.69] |
    | mixed | 5 | demo | 8 | 3500 | 209: 5.97 [5.23, 6.81] | 46: 1.31 [0.99, 1.75] | 23: 0.66 [0.44, 0.98] |
    | at delta | 14 | paper | 4 | 1000 | 220: 22.00 [19.54, 24.67] | 1: 0.10 [0.02, 0.56] | 1: 0.10 [0.02, 0.56] |
    | mixed | 14 | paper | 4 | 1000 | 113: 11.30 [9.48, 13.41] | 4: 0.40 [0.16, 1.02] | 1: 0.10 [0.02, 0.56] |
    | at delta | 5 | paper | 4 | 2800 | 237: 8.46 [7.49, 9.55] | 14: 0.50 [0.30, 0.84] | 14: 0.50 [0.30, 0.84] |
    | mixed | 5 | paper | 4 | 3500 | 175: 5.00 [4.33, 5.77] | 27: 0.77 [0.53, 1.12] | 11: 0.31 [0.18, 0.56] |
    | at delta | 14 | paper | 8 | 1000 | 372: 37.20 [34.26, 40.24] | 18: 1.80 [1.14, 2.83] | 18: 1.80 [1.14, 2.83] |
    | mixed | 14 | paper | 8 | 1000 | 211: 21.10 [18.68, 23.74] | 20: 2.00 [1.30, 3.07] | 8: 0.80 [0.41, 1.57] |
    | at delta | 5 | paper | 8 | 2800 | 433: 15.46 [14.17, 16.85] | 59: 2.11 [1.64, 2.71] | 59: 2.11 [1.64, 2.71] |
    | mixed | 5 | paper | 8 | 3500 | 350: 10.00 [9.05, 11.04] | 89: 2.54 [2.07, 3.12] | 47: 1.34 [1.01, 1.78] |

    Raw false verdicts per family (mean [95%]); on mixed families the true memories kept as 'remembers':

    | family | r | scale | seeds | families | raw false verdicts | true kept (%): raw / Holm / Bonferroni |
    | --- | --- | --- | --- | --- | --- | --- |
    | at delta | 14 | demo | 4 | 1000 | 0.117 [0.096, 0.138] | - |
    | mixed | 14 | demo | 4 | 1000 | 0.060 [0.045, 0.075] | 73.5 / 10.0 / 9.4 |
    | at delta | 5 | demo | 4 | 2800 | 0.042 [0.034, 0.049] | - |
    | mixed | 5 | demo | 4 | 3500 | 0.025 [0.020, 0.031] | 73.5 / 29.9 / 28.3 |
    | at delta | 14 | demo | 8 | 1000 | 0.287 [0.253, 0.321] | - |
    | mixed | 14 | demo | 8 | 1000 | 0.146 [0.123, 0.169] | 100.0 / 95.2 / 89.3 |
    | at delta | 5 | demo | 8 | 2800 | 0.102 [0.091, 0.114] | - |
    | mixed | 5 | demo | 8 | 3500 | 0.061 [0.053, 0.069] | 100.0 / 98.8 / 98.2 |
    | at delta | 14 | paper | 4 | 1000 | 0.245 [0.215, 0.275] | - |
    | mixed | 14 | paper | 4 | 1000 | 0.119 [0.098, 0.140] | 100.0 / 99.6 / 96.7 |
    | at delta | 5 | paper | 4 | 2800 | 0.087 [0.077, 0.098] | - |
    | mixed | 5 | paper | 4 | 3500 | 0.051 [0.044, 0.059] | 100.0 / 100.0 / 99.9 |
    | at delta | 14 | paper | 8 | 1000 | 0.462 [0.421, 0.503] | - |
    | mixed | 14 | paper | 8 | 1000 | 0.234 [0.205, 0.263] | 100.0 / 100.0 / 100.0 |
    | at delta | 5 | paper | 8 | 2800 | 0.165 [0.150, 0.180] | - |
    | mixed | 5 | paper | 8 | 3500 | 0.103 [0.093, 0.114] | 100.0 / 100.0 / 100.0 |

    Negative controls, wrong family rules -- k: % [95% Wilson]. Wherever the raw verdicts' rate is credibly
    above 5% (Wilson lower bound above it) each must be too; *not above* marks the designs where it is not
    (the raw verdicts are not either there):

    | family | r | scale | seeds | families | every row at the full share | Holm over the decided rows only |
    | --- | --- | --- | --- | --- | --- | --- |
    | at delta | 14 | demo | 4 | 1000 | 109: 10.90 [9.12, 12.98] | 106: 10.60 [8.84, 12.66] |
    | mixed | 14 | demo | 4 | 1000 | 58: 5.80 [4.51, 7.42] *not above* | 13: 1.30 [0.76, 2.21] *not above* |
    | at delta | 5 | demo | 4 | 2800 | 114: 4.07 [3.40, 4.87] *not above* | 112: 4.00 [3.33, 4.79] *not above* |
    | mixed | 5 | demo | 4 | 3500 | 85: 2.43 [1.97, 2.99] *not above* | 61: 1.74 [1.36, 2.23] *not above* |
    | at delta | 14 | demo | 8 | 1000 | 244: 24.40 [21.84, 27.16] | 233: 23.30 [20.79, 26.02] |
    | mixed | 14 | demo | 8 | 1000 | 138: 13.80 [11.80, 16.08] | 133: 13.30 [11.34, 15.55] |
    | at delta | 5 | demo | 8 | 2800 | 275: 9.82 [8.77, 10.98] | 273: 9.75 [8.71, 10.90] |
    | mixed | 5 | demo | 8 | 3500 | 209: 5.97 [5.23, 6.81] | 207: 5.91 [5.18, 6.75] |
    | at delta | 14 | paper | 4 | 1000 | 220: 22.00 [19.54, 24.67] | 204: 20.40 [18.02, 23.01] |
    | mixed | 14 | paper | 4 | 1000 | 113: 11.30 [9.48, 13.41] | 110: 11.00 [9.21, 13.09] |
    | at delta | 5 | paper | 4 | 2800 | 237: 8.46 [7.49, 9.55] | 232: 8.29 [7.32, 9.36] |
    | mixed | 5 | paper | 4 | 3500 | 175: 5.00 [4.33, 5.77] *not above* | 172: 4.91 [4.25, 5.68] *not above* |
    | at delta | 14 | paper | 8 | 1000 | 372: 37.20 [34.26, 40.24] | 342: 34.20 [31.33, 37.20] |
    | mixed | 14 | paper | 8 | 1000 | 211: 21.10 [18.68, 23.74] | 199: 19.90 [17.54, 22.49] |
    | at delta | 5 | paper | 8 | 2800 | 433: 15.46 [14.17, 16.85] | 421: 15.04 [13.76, 16.41] |
    | mixed | 5 | paper | 8 | 3500 | 350: 10.00 [9.05, 11.04] | 345: 9.86 [8.91, 10.89] |

    Per row at a spread of delta (14000 rows a cell; any verdict false) -- k: % [95% Wilson];
    raw, and re-decided at the share 1/r of Holm's first step (nominal 5% / r: 1.00% at 1/5, 0.36% at 1/14):

    | scale | seeds | false 'remembers' | false 'forgets' | kept at 1/5 | kept at 1/14 |
    | --- | --- | --- | --- | --- | --- |
    | demo | 4 | 117: 0.84 [0.70, 1.00] | 0: 0.00 [0.00, 0.03] | 5: 0.04 [0.02, 0.08] | 0: 0.00 [0.00, 0.03] |
    | demo | 8 | 281: 2.01 [1.79, 2.25] | 6: 0.04 [0.02, 0.09] | 34: 0.24 [0.17, 0.34] | 5: 0.04 [0.02, 0.08] |
    | paper | 4 | 213: 1.52 [1.33, 1.74] | 32: 0.23 [0.16, 0.32] | 14: 0.10 [0.06, 0.17] | 1: 0.01 [0.00, 0.04] |
    | paper | 8 | 336: 2.40 [2.16, 2.67] | 126: 0.90 [0.76, 1.07] | 59: 0.42 [0.33, 0.54] | 18: 0.13 [0.08, 0.20] |

    Holm's rate not credibly above 5% (Wilson lower bound at most 5%) in every design: True;
    the largest Wilson upper bound 3.12%. Both negative controls credibly above 5% wherever the raw
    verdicts' rate is (12 of 16 designs): True
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np

from initmem import names as N
from initmem.models.designs import SCALES, rule_tables, wilson
from initmem.models.family import RowEvidence, passes
from initmem.models.sequential import Spending
from initmem.tests._family_rows import (
    DELTA,
    DRAWS,
    RULES,
    SIZES,
    TRUE_SIZE,
    Family,
    check_tests,
    families,
    pool,
    sequential_pool,
)


def family_rates(fams: list[Family]) -> dict[str, dict]:
    """The family-wise error of each rule in RULES, the raw expected false verdicts and the true memories kept.

    Parameters
    ----------
    fams : list of Family
        Independent families of one design.

    Returns
    -------
    dict
        Per rule ``fwer_<rule>`` as (k, n, lo, hi); ``false_raw`` (mean, lo, hi) of the raw false verdicts per
        family; per rule ``power_<rule>`` (k, n, lo, hi) of true memories kept as "remembers" (mixed families).
    """
    hits = {name: 0 for name in RULES}
    kept = {name: 0 for name in RULES}
    n_true = 0
    false_raw = []
    for fam in fams:
        for name, rule in RULES.items():
            v = rule(fam.rows)
            wrong = sum(v[k] in fam.false[k] for k in v)
            hits[name] += wrong > 0
            kept[name] += sum(v[k] == N.REMEMBERS for k in v if k.startswith("t"))
            if name == "raw":
                false_raw.append(wrong)
        n_true += sum(k.startswith("t") for k in fam.rows)
    n = len(fams)
    out: dict[str, dict] = {f"fwer_{k}": _prop(v, n) for k, v in hits.items()}
    if n_true:
        out.update({f"power_{k}": _prop(v, n_true) for k, v in kept.items()})
    m, se = float(np.mean(false_raw)), float(np.std(false_raw, ddof=1) / np.sqrt(n))
    out["false_raw"] = {"mean": m, "lo": m - 1.96 * se, "hi": m + 1.96 * se}
    return out


def row_rates(rows: list[RowEvidence]) -> dict[str, dict]:
    """Per-row false rates of rows at delta: raw "remembers" and "forgets", and any verdict kept at 1/5 and 1/14.

    Parameters
    ----------
    rows : list of RowEvidence
        Rows at a spread of delta (every verdict false).

    Returns
    -------
    dict
        (k, n, lo, hi) per rate.
    """
    n = len(rows)
    out = {"remembers": _prop(sum(r.verdict == N.REMEMBERS for r in rows), n),
           "forgets": _prop(sum(r.verdict == N.FORGETS for r in rows), n)}
    for r_ in SIZES:
        out[f"share_1/{r_}"] = _prop(sum(passes(r, 1.0 / r_) for r in rows), n)
    return out


def _prop(k: int, n: int) -> dict:
    lo, hi = wilson(int(k), int(n))
    return {"k": int(k), "n": int(n), "rate": k / n, "lo": lo, "hi": hi}


def _cell(x: dict) -> str:
    """A rate as ``k: percent [Wilson 95% interval]``."""
    return f"{x['k']}: {100 * x['rate']:.2f} [{100 * x['lo']:.2f}, {100 * x['hi']:.2f}]"


def run(n_families: int, scales: list[str], seeds: list[int], draws: int = DRAWS, seed: int = 0,
        looks: tuple[int, ...] | None = None) -> list[dict]:
    """Every family design of the module docstring, per scale and seed count.

    Parameters
    ----------
    n_families : int
        Families of 14 rows per design (the pools: 14 x that many rows at delta, 7 x that many true memories).
    scales : list of str
        "demo", "paper".
    seeds : list of int
        Seeds per cell.
    draws : int
        Posterior draws per row.
    seed : int
        The study's random seed.
    looks : tuple of int, optional
        Decide every row with the sequential design at these looks (``initmem run --until-decided``; ``seeds`` is
        then ignored): each row's evidence is its deciding look's (``sequential_pool``).

    Returns
    -------
    list of dict
        One per (scale, seeds): the per-row rates and, per family design, :func:`family_rates`.
    """
    out = []
    for scale in scales:
        for s in ([looks[-1]] if looks else seeds):
            t0 = time.perf_counter()
            tag = f"family-{scale}-{s}-{seed}" + (f"-looks-{','.join(map(str, looks))}" if looks else "")
            rng = np.random.default_rng(zlib.crc32(tag.encode()))
            probe = rule_tables("ramp", scale, 40, rng, n_seed=s)
            n_lev = probe.shape[1]
            spends = [Spending(0.05, looks, k) for k in range(len(looks))] if looks else [Spending(0.05)]
            for spend in spends:
                gap = check_tests(probe[:, :, : (spend.looks[spend.look] if looks else s)],
                                  np.geomspace(0.25, 8.0, n_lev), DELTA, spend, int(SCALES[scale]["n_test"]))
                if gap > 1e-9:
                    raise RuntimeError(f"vectorised p-values differ from the analysis's tests by {gap:g}")
            spent: list[np.ndarray] = []
            if looks:
                null, used = sequential_pool(1.0, scale, looks, max(SIZES) * n_families, rng, draws)
                true, used_true = sequential_pool(TRUE_SIZE, scale, looks, max(SIZES) // 2 * n_families, rng,
                                                  draws)
                spent = [used, used_true]
            else:
                null = pool(1.0, scale, s, max(SIZES) * n_families, rng, draws)
                true = pool(TRUE_SIZE, scale, s, max(SIZES) // 2 * n_families, rng, draws)
            cell = {"scale": scale, "seeds": ",".join(map(str, looks)) if looks else s, "rows": row_rates(null),
                    "designs": [], "n_rows": len(null) + len(true),
                    "seeds_spent": [float(x.mean()) for x in spent]}
            for r in SIZES:
                for name, n_true in (("at delta", 0), ("mixed", r // 2)):
                    fams = families(null, true, r, n_true)
                    cell["designs"].append({"family": name, "r": r, "n": len(fams), **family_rates(fams)})
            cell["seconds"] = time.perf_counter() - t0
            print(f"{scale} x {s} seeds: {cell['n_rows']} rows in {cell['seconds']:.0f} s", flush=True)
            out.append(cell)
    return out


def print_tables(cells: list[dict]) -> None:
    """The study's markdown tables (the module docstring's Output)."""
    designs = [(c, d) for c in cells for d in c["designs"]]

    def head(d: dict, c: dict) -> str:
        return f"| {d['family']} | {d['r']} | {c['scale']} | {c['seeds']} | {d['n']} |"

    print("\nFamily-wise error, families with a false verdict -- k: % [95% Wilson]:\n")
    print("| family | r | scale | seeds | families | raw verdicts | Holm | Bonferroni |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c, d in designs:
        print(f"{head(d, c)} {_cell(d['fwer_raw'])} | {_cell(d['fwer_holm'])} | {_cell(d['fwer_bonferroni'])} |")
    print("\nRaw false verdicts per family (mean [95%]); on mixed families the true memories kept as 'remembers':\n")
    print("| family | r | scale | seeds | families | raw false verdicts | true kept (%): raw / Holm / Bonferroni |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for c, d in designs:
        fr = d["false_raw"]
        kept = " / ".join(f"{100 * d[f'power_{k}']['rate']:.1f}" for k in ("raw", "holm", "bonferroni")) \
            if "power_raw" in d else "-"
        print(f"{head(d, c)} {fr['mean']:.3f} [{fr['lo']:.3f}, {fr['hi']:.3f}] | {kept} |")
    print("\nNegative controls, wrong family rules -- k: % [95% Wilson]. Wherever the raw verdicts' rate is credibly\n"
          "above 5% (Wilson lower bound above it) each must be too; *not above* marks the designs where it is not\n"
          "(the raw verdicts are not either there):\n")
    print("| family | r | scale | seeds | families | every row at the full share | Holm over the decided rows only |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for c, d in designs:
        cell = [_cell(d[k]) + ("" if d[k]["lo"] > 0.05 else " *not above*")
                for k in ("fwer_full_share", "fwer_decided_only")]
        print(f"{head(d, c)} {cell[0]} | {cell[1]} |")
    print(f"\nPer row at a spread of delta ({cells[0]['rows']['remembers']['n']} rows a cell; any verdict false) -- "
          "k: % [95% Wilson];\nraw, and re-decided at the share 1/r of Holm's first step (nominal 5% / r: 1.00% at "
          "1/5, 0.36% at 1/14):\n")
    print("| scale | seeds | false 'remembers' | false 'forgets' | kept at 1/5 | kept at 1/14 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for c in cells:
        r = c["rows"]
        print(f"| {c['scale']} | {c['seeds']} | {_cell(r['remembers'])} | "
              f"{_cell(r['forgets'])} | {_cell(r['share_1/5'])} | {_cell(r['share_1/14'])} |")
    seen = [d for _, d in designs if d["fwer_raw"]["lo"] > 0.05]
    print(f"\nHolm's rate not credibly above 5% (Wilson lower bound at most 5%) in every design: "
          f"{all(d['fwer_holm']['lo'] <= 0.05 for _, d in designs)};\nthe largest Wilson upper bound "
          f"{100 * max(d['fwer_holm']['hi'] for _, d in designs):.2f}%. Both negative controls credibly above 5% "
          f"wherever the raw\nverdicts' rate is ({len(seen)} of {len(designs)} designs): "
          f"{all(d[k]['lo'] > 0.05 for d in seen for k in ('fwer_full_share', 'fwer_decided_only'))}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", type=int, default=1000, help="families of 14 rows per design (pool size)")
    ap.add_argument("--scales", default="demo,paper")
    ap.add_argument("--seeds", default="4,8", help="seeds per cell, comma-separated")
    ap.add_argument("--draws", type=int, default=DRAWS, help="posterior draws per row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--looks", default=None,
                    help="decide each row with the sequential design at these looks, e.g. 4,8,12,16 (the atlas's); "
                         "--seeds is then ignored")
    args = ap.parse_args()
    scales = [s for s in args.scales.split(",") if s]
    unknown = sorted(set(scales) - set(SCALES))
    if unknown:
        ap.error(f"unknown --scales {unknown}; known: {', '.join(SCALES)}")
    t0 = time.perf_counter()
    looks = tuple(int(n) for n in args.looks.split(",")) if args.looks else None
    if looks is not None and (len(looks) < 1 or any(b <= a for a, b in zip(looks, looks[1:], strict=False))
                              or looks[0] < 2):
        ap.error(f"--looks must be increasing seed counts of at least 2, not {args.looks}")
    cells = run(args.families, scales, [int(s) for s in args.seeds.split(",")], args.draws, args.seed, looks)
    print_tables(cells)
    for c in cells:
        if c["seeds_spent"]:
            print(f"{c['scale']}, looks {c['seeds']}: seeds per cell spent, mean over rows at delta "
                  f"{c['seeds_spent'][0]:.2f}, over true memories {c['seeds_spent'][1]:.2f}")
    print(f"\n{sum(c['n_rows'] for c in cells)} rows, {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

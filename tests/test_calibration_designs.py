"""Calibration of the memory verdict, part two (real NUTS fits; one compiled sampler per file):
simulation-based calibration of the four SDs from the model's own priors, and a small version of the
designs outside the model found by an audit of real grids (seed-specific slopes, one level 10-20x noisier, plateaus
exactly at delta, 3 levels x 3 seeds at delta, slopes with a linear memory at delta), whose n = 48
studies run in studies/calibration.py (docs/memory-model.md, "Calibration"). A file of its own
so that the two halves run on different test workers.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from initmem.models.core import slope_axis
from initmem.models.designs import L, P, S, design_tables, fit_tables, table_data, wilson
from initmem.models.priors import Priors

pytestmark = pytest.mark.slow
DELTA = 0.01


SBC_SDS = ("sigma_sd", "seed_sd", "slope_sd", "residual_sd")


def _sbc_ranks(n_fits: int = 3, thin: int = 99):
    """Ranks of the four true SDs among posterior draws, data drawn from the model's own priors.

    Only the SDs have an exact SBC: their priors are proper and their likelihood is the restricted one,
    which the flat trend and alpha leave (so the level values' trend may be drawn any way). The spread
    has none: its trend part has a flat prior, so its posterior is wider than any proper generator's
    and, where the seeds' slopes are large, centred above a small true spread (docs/memory-model.md,
    "Calibration"); its verdicts are calibrated by the designs below and the paired check instead."""
    rng = np.random.default_rng(2024)
    ranks = {name: [] for name in SBC_SDS}
    cover = {name: [] for name in SBC_SDS}
    x = slope_axis(np.geomspace(0.25, 8.0, L), np.ones(L, dtype=bool))    # table_data's sigma_w levels
    priors = Priors()
    for f in range(n_fits):
        # half-t(3) SDs in noise units (scale 1; sigma_sd's neutral scale is its floor at this delta)
        sd = np.abs(stats.t.rvs(priors.sd_nu, size=(4, P), random_state=rng))
        sd[2] *= priors.slope_scale
        u = rng.standard_normal((P, L)) * sd[0][:, None]
        v = rng.standard_normal((P, S)) * sd[1][:, None]
        b = rng.standard_normal((P, S)) * sd[2][:, None]
        y = (0.5 + u[:, :, None] + v[:, None, :] + b[:, None, :] * x[None, :, None]
             + rng.standard_normal((P, L, S)) * sd[3][:, None, None])
        m = fit_tables(table_data(y, np.ones((P, L, S), dtype=bool), 1.0), seed=100 + f)
        post = m.idata.posterior
        for name, truth in zip(SBC_SDS, sd, strict=True):
            draws = post[name].values.reshape(-1, P)
            pick = draws[np.linspace(0, draws.shape[0] - 1, thin).astype(int)]
            ranks[name].extend((pick < truth[None]).sum(axis=0).tolist())
            q05, q95 = np.quantile(draws, [0.05, 0.95], axis=0)
            cover[name].extend(((q05 <= truth) & (truth <= q95)).tolist())
    return ranks, cover, thin


def test_sbc_ranks_uniform_and_90_percent_intervals_cover():
    # 8 uniformity tests and 4 coverages: each at 0.001 (99.9% Wilson), so a correct sampler fails one
    # about 1% of the time when its draws change; a wrong likelihood or sampler gives p near 0.
    ranks, cover, thin = _sbc_ranks()
    for name in ranks:
        r = np.asarray(ranks[name])
        counts = np.bincount(r * 8 // (thin + 1), minlength=8)
        chi2 = stats.chisquare(counts)
        ks = stats.kstest((r + 0.5) / (thin + 1), "uniform")
        rate = float(np.mean(cover[name]))
        lo, hi = wilson(int(np.sum(cover[name])), len(cover[name]), level=0.999)
        print(f"SBC {name}: {len(r)} ranks, chi-square p = {chi2.pvalue:.3f}, KS p = {ks.pvalue:.3f}; "
              f"90% coverage {rate:.3f} (99.9% Wilson {lo:.3f}-{hi:.3f})")
        assert chi2.pvalue > 0.001 and ks.pvalue > 0.001, name
        assert lo <= 0.90 <= hi, name


PER_DESIGN_MAX = 4   # false verdicts admitted per design (of 24 fits)


def _guard(n: int, k_max: int, alpha: float = 0.05) -> tuple[float, float]:
    """What admitting at most ``k_max`` false verdicts of ``n`` guards: the chance a rule exactly at ``alpha``
    fails it, and the true rate it catches with probability 0.9."""
    detect = optimize.brentq(lambda p: stats.binom.sf(k_max, n, p) - 0.9, 1e-6, 1 - 1e-6)
    return float(stats.binom.sf(k_max, n, alpha)), float(detect)


def _overall_max(n: int) -> int:
    """The most false verdicts of ``n`` fits whose 95% Wilson interval still reaches down to 5%."""
    return max(k for k in range(n + 1) if wilson(k, n)[0] <= 0.05)


def test_what_the_fit_level_checks_can_detect():
    # Real NUTS fits keep n small (24 per design, 120 overall), so these checks guard against gross failures
    # only; the rates themselves are checked at 4,000+ tables per design in tests/test_paired.py and
    # tests/test_lattice.py. Per design (at most 4 of 24): a rule at 5% fails it 0.6% of the time, and a true
    # rate of 31% is caught with probability 0.9. Overall (at most 10 of 120, the Wilson bound; the binomial
    # 0.99 quantile at 5% would admit 12): a rule at 5% fails 3.8% of the time, and 13% is caught with
    # probability 0.9. The compound-symmetric model's failures these designs were built on (10-35%
    # "remembers", 20-23% "forgets") are caught overall, not all per design.
    at_alpha, detect = _guard(24, PER_DESIGN_MAX)
    assert at_alpha < 0.01 and 0.30 < detect < 0.32
    k_max = _overall_max(120)
    at_alpha, detect = _guard(120, k_max)
    assert k_max == 10 and at_alpha < 0.04 and 0.12 < detect < 0.135


OUTSIDE = [("slopes", "demo"), ("noisy_level", "demo"), ("step", "paper"), ("three_levels", "demo"),
           ("slopes_at_delta", "paper")]


@pytest.fixture(scope="module")
def outside_fits() -> dict[tuple[str, str], tuple[int, int]]:
    """(false verdicts, pipelines) of 24 fits per design outside the model."""
    out = {}
    for kind, scale in OUTSIDE:
        d, truth = design_tables(kind, scale, np.random.default_rng(18), n_seed=S)
        m = fit_tables(d, seed=18)
        verdicts = [e["verdict"] for e in m.summarize(DELTA).values()]
        bad = ("remembers", "forgets") if np.all(truth > 0) else ("remembers",)
        k = sum(verdicts.count(v) for v in bad)
        print(f"{kind} ({scale}): {dict((v, verdicts.count(v)) for v in set(verdicts))}; false {bad}: {k}/24")
        assert m.diagnostics()["divergences"] == 0
        out[kind, scale] = (k, len(verdicts))
    return out


@pytest.mark.parametrize(("kind", "scale"), OUTSIDE)
def test_designs_outside_the_model_do_not_give_the_false_verdict(outside_fits, kind, scale):
    # 24 pipeline fits of one design (the n = 48 studies at the default sampler settings are in
    # studies/calibration.py and docs/memory-model.md): seed-specific slopes, one level 10-20x
    # noisier, plateaus tied at both extremes exactly at delta, 3 levels x 3 seeds at delta, and
    # slopes with a linear memory exactly at delta. The compound-symmetric model said "remembers"
    # 10-35% of the time on the first three, "forgets" 20% on the fourth and 23% on the last.
    # Per design 24 fits only guard against such failures (at most 4 of 24: a rule at 5% exceeds it
    # 0.6% of the time); the rate itself is checked over all 120 fits, and per design at 4,000+
    # tables in tests/test_paired.py. Plateaus at delta at the paper's scale are where the ordered
    # test is closest to alpha (4.5% at the rule level on this generator, 4,800 tables): this draw
    # gives 4 of 24.
    k, n = outside_fits[kind, scale]
    assert k <= PER_DESIGN_MAX
    total = sum(k_ for k_, _ in outside_fits.values())
    count = sum(n_ for _, n_ in outside_fits.values())
    print(f"all designs outside the model: {total}/{count} false verdicts, 95% Wilson {wilson(total, count)}")
    assert total <= _overall_max(count)

"""REML at the optimum (boundary included), the Greenhouse-Geisser rm-ANOVA, and the spread interval.

Known answers: lme4's Penicillin REML fit; the REML optimum of random balanced tables checked
against an independent maximisation of the factorised REML likelihood (scipy from many starts
and a grid); unbalanced tables against a dense-matrix REML likelihood on a grid. Controls: the GG
p rejects about alpha of true nulls under a sphericity violation; the spread interval covers
>= 85% (nominal 90%) at 3 and 5 seeds.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from initmem.stats.effects import spread_interval
from initmem.stats.frequentist import greenhouse_geisser, rm_anova
from initmem.stats.reml import reml_balanced, reml_fit, reml_profile

DATA = Path(__file__).parent / "data"


def _indices(n_lev: int, n_seed: int) -> tuple[np.ndarray, np.ndarray]:
    return np.repeat(np.arange(n_lev), n_seed), np.tile(np.arange(n_seed), n_lev)


def test_penicillin_published_reml_within_one_percent():
    df = pd.read_csv(DATA / "penicillin.csv")
    # Mapped onto the cube: sample is the sigma_w level, plate the seed.
    want = {"sigma_sd": 1.9316, "seed_sd": 0.8467, "residual_sd": 0.5499}
    fits = [reml_fit(df["diameter"].to_numpy(float), df["sample"].to_numpy(), df["plate"].to_numpy())]
    li, si = np.unique(df["sample"], return_inverse=True)[1], np.unique(df["plate"], return_inverse=True)[1]
    fits.append(reml_profile(df["diameter"].to_numpy(float), li, si))  # the general path too
    for f in fits:
        got = f.as_dict()
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=0.01), (f.method, k, got[k])
        assert not got["singular"]
    assert fits[0].method.startswith("closed form") and fits[0].loglik == pytest.approx(fits[1].loglik, abs=1e-6)


def _factorised_negll(params, table: np.ndarray):
    """-REML log-likelihood of a balanced table, written out independently of stats/ (params may be
    arrays of any common shape: it is evaluated on a grid)."""
    s2a, s2b, s2e = (np.asarray(p, float) for p in params)
    n_lev, n_seed = table.shape
    g = table.mean()
    ss_a = n_seed * ((table.mean(1) - g) ** 2).sum()
    ss_b = n_lev * ((table.mean(0) - g) ** 2).sum()
    ss_e = ((table - table.mean(1, keepdims=True) - table.mean(0, keepdims=True) + g) ** 2).sum()
    terms = [(n_lev - 1, ss_a, s2e + n_seed * s2a), (n_seed - 1, ss_b, s2e + n_lev * s2b),
             ((n_lev - 1) * (n_seed - 1), ss_e, s2e)]
    return 0.5 * sum(df * np.log(2 * np.pi * lam) + ss / lam for df, ss, lam in terms)


def _independent_optimum(table: np.ndarray) -> tuple[float, np.ndarray]:
    """A 40^3 grid (zero included on the two boundary axes), then bounded refinement of the 3 best."""
    v = table.var()
    axis = np.concatenate([[0.0], np.geomspace(1e-3, 5, 39)]) * v
    ga, gb, ge = np.meshgrid(axis, axis, axis[1:], indexing="ij")
    vals = _factorised_negll((ga, gb, ge), table)
    best = (math.inf, None)
    for flat in np.argsort(vals, axis=None)[:3]:
        i, j, k = np.unravel_index(flat, vals.shape)
        res = optimize.minimize(lambda p: float(_factorised_negll(p, table)), [ga[i, j, k], gb[i, j, k], ge[i, j, k]],
                                method="L-BFGS-B", bounds=[(0, None), (0, None), (1e-12 * v, None)],
                                options={"ftol": 1e-15, "gtol": 1e-12})
        if res.fun < best[0]:
            best = (float(res.fun), res.x)
    return -best[0], best[1]


@pytest.mark.slow
def test_balanced_reml_reaches_the_optimum_on_30_tables_half_at_the_boundary():
    rng = np.random.default_rng(7)
    n_boundary = 0
    for i in range(30):
        sd_a = 0.0 if i % 2 else rng.uniform(0.3, 1.5)  # half null-ish in the level effect
        table = rng.normal(0, sd_a, (6, 1)) + rng.normal(0, rng.uniform(0, 0.5), (1, 3)) + rng.normal(0, 1, (6, 3))
        fit = reml_balanced(table)
        n_boundary += fit.singular
        ll, x = _independent_optimum(table)
        assert fit.loglik >= ll - 1e-7, (i, fit, ll, x)
        assert fit.loglik == pytest.approx(-float(_factorised_negll([fit.s2_level, fit.s2_seed, fit.s2_e], table)),
                                           abs=1e-9)
        tol = 1e-3 * table.var()
        np.testing.assert_allclose([fit.s2_level, fit.s2_seed, fit.s2_e], x, atol=tol)
        # The general (profiled, multi-start) path finds the same optimum.
        prof = reml_profile(table.ravel(), *_indices(6, 3))
        assert prof.loglik == pytest.approx(fit.loglik, abs=1e-6)
    assert n_boundary >= 10, n_boundary


def _dense_reml_ll(s2: tuple[float, float, float], y, li, si) -> float:
    n = y.size
    za = (li[:, None] == np.unique(li)).astype(float)
    zb = (si[:, None] == np.unique(si)).astype(float)
    v = s2[0] * za @ za.T + s2[1] * zb @ zb.T + s2[2] * np.eye(n)
    vi = np.linalg.inv(v)
    one = np.ones(n)
    xvx = one @ vi @ one
    beta = (one @ vi @ y) / xvx
    r = y - beta
    return -0.5 * ((n - 1) * math.log(2 * math.pi) + np.linalg.slogdet(v)[1] + math.log(xvx / n) + r @ vi @ r)


@pytest.mark.slow
def test_unbalanced_reml_beats_a_dense_grid():
    rng = np.random.default_rng(3)
    for _ in range(4):
        table = rng.normal(0, 0.5, (5, 1)) + rng.normal(0, 0.3, (1, 4)) + rng.normal(0, 0.4, (5, 4))
        keep = np.ones(table.shape, bool)
        keep[rng.integers(0, 5, 3), rng.integers(0, 4, 3)] = False
        li, si = np.nonzero(keep)
        y = table[keep]
        fit = reml_fit(y, li, si)
        assert fit.method.startswith("profiled")
        assert fit.loglik == pytest.approx(_dense_reml_ll((fit.s2_level, fit.s2_seed, fit.s2_e), y, li, si), abs=1e-8)
        v = y.var()
        grid = np.array([0, 0.02, 0.1, 0.3, 0.6, 1.0, 2.0]) * v
        best = max(_dense_reml_ll((a, b, e), y, li, si) for a in grid for b in grid for e in grid[1:])
        assert fit.loglik >= best - 1e-9


def test_rm_anova_gg_matches_pingouin_epsilon():
    pg = pytest.importorskip("pingouin")
    rng = np.random.default_rng(5)
    table = rng.normal(0, 1, (5, 7)) * np.array([1, 1, 2, 4, 8])[:, None]
    long = pd.DataFrame({"y": table.ravel(), "level": np.repeat(np.arange(5), 7), "seed": np.tile(np.arange(7), 5)})
    eps = pg.epsilon(long, dv="y", within="level", subject="seed", correction="gg")
    assert greenhouse_geisser(table) == pytest.approx(eps, rel=1e-9)
    r = rm_anova(table)
    assert r["p_gg"] >= r["p"] and r["eps_gg"] == pytest.approx(eps, rel=1e-9)


def test_gg_p_controls_the_error_under_a_sphericity_violation():
    rng = np.random.default_rng(11)
    n_tab, n_lev, n_seed = 3000, 6, 5
    # Equal means; one level far noisier and the others correlated: sphericity badly violated.
    cov = 0.8 * np.ones((n_lev, n_lev)) + 0.2 * np.eye(n_lev)
    cov[-1, -1] = 12.0
    tables = rng.multivariate_normal(np.zeros(n_lev), cov, size=(n_tab, n_seed)).transpose(0, 2, 1)
    from initmem.stats.anova import mean_squares

    ms = mean_squares(tables)
    f = ms.ms_level / ms.ms_e
    eps = greenhouse_geisser(tables)
    p_unc = stats.f.sf(f, ms.df_level, ms.df_e)
    p_gg = stats.f.sf(f, eps * ms.df_level, eps * ms.df_e)
    rate_unc, rate_gg = float(np.mean(p_unc < 0.05)), float(np.mean(p_gg < 0.05))
    se = math.sqrt(0.05 * 0.95 / n_tab)
    print(f"\nsphericity violated: uncorrected p rejects {rate_unc:.1%}, GG p {rate_gg:.1%} of true nulls")
    assert rate_unc > 0.08 and rate_gg <= 0.05 + 2 * se


@pytest.mark.parametrize("n_seed", [3, 5])
def test_spread_interval_covers_at_three_and_five_seeds(n_seed):
    rng = np.random.default_rng(100 + n_seed)
    n_tab, n_lev = 2000, 6
    sd_a = rng.choice([0.0, 0.005, 0.01, 0.03], size=(n_tab, 1))  # from no memory to a clear one
    a = rng.normal(0, 1, (n_tab, n_lev)) * sd_a
    tables = (0.8 + a[:, :, None] + rng.normal(0, 0.01, (n_tab, 1, n_seed))
              + rng.normal(0, 0.01, (n_tab, n_lev, n_seed)))
    true = a.max(1) - a.min(1)
    _, lo, hi = spread_interval(tables)
    cover = float(np.mean((lo <= true) & (true <= hi)))
    print(f"\n{n_seed} seeds: 90% spread interval covers {cover:.1%} of {n_tab} tables")
    assert cover >= 0.85

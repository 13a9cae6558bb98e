"""The radial-memory verdict (stats/radial.py): null controls at the margin, power controls, and the
cube end to end. Rates are compared with ALPHA plus two Monte Carlo standard errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from initmem import cube
from initmem.names import ALPHA, UNDECIDED
from initmem.stats.radial import FORGETS, KEEPS, RADIAL_MARGIN, radial_verdict, radial_verdicts

LOG_SIGMA = np.log([0.25, 0.5, 1.0, 2.0, 4.0])
N_REP = 1000


def _tables(slope: float, n_seed: int, rng: np.random.Generator, *, slope_sd: float = 0.03,
            noise: float = 0.02, tails: str = "normal") -> np.ndarray:
    """(rep, sigma_w, seed) final log norms: a seed offset, a seed-specific slope around ``slope`` and
    independent run noise."""
    draw = (lambda size: rng.standard_t(3, size) / math.sqrt(3)) if tails == "t3" else rng.standard_normal
    offset = 2.0 + 0.3 * rng.standard_normal((N_REP, 1, n_seed))
    b = slope + slope_sd * draw((N_REP, 1, n_seed))
    return offset + b * LOG_SIGMA[None, :, None] + noise * draw((N_REP, len(LOG_SIGMA), n_seed))


def _rate(tables: np.ndarray, verdict: str, **kw) -> float:
    return float(np.mean([radial_verdict(t, LOG_SIGMA, **kw)["verdict"] == verdict for t in tables]))


BOUND = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / N_REP)


@pytest.mark.slow
@pytest.mark.parametrize("n_seed,tails", [(3, "normal"), (5, "normal"), (10, "normal"), (5, "t3")])
def test_false_verdicts_at_the_margin_stay_at_alpha(n_seed, tails):
    rng = np.random.default_rng(n_seed)
    at_margin = _tables(RADIAL_MARGIN, n_seed, rng, tails=tails)
    assert _rate(at_margin, KEEPS) <= BOUND      # the slope is not above the margin
    assert _rate(at_margin, FORGETS) <= BOUND    # nor inside it
    assert _rate(_tables(-RADIAL_MARGIN, n_seed, rng, tails=tails), FORGETS) <= BOUND


@pytest.mark.slow
def test_independent_seeds_use_the_pooled_slope_and_keep_alpha():
    rng = np.random.default_rng(7)
    # Runs that share nothing across levels: every run its own offset, no seed-specific slope.
    tables = (RADIAL_MARGIN * LOG_SIGMA[None, :, None] + 0.05 * rng.standard_normal((N_REP, 5, 4)))
    assert _rate(tables, KEEPS, paired=False) <= BOUND
    assert _rate(tables, FORGETS, paired=False) <= BOUND


@pytest.mark.slow
@pytest.mark.parametrize("slope,verdict", [(0.0, FORGETS), (0.8, KEEPS)])
def test_five_seeds_decide_a_forgotten_and_a_kept_scale(slope, verdict):
    """MNIST-1D's feasibility run (docs/radial-verdict.md): plain SGD keeps a slope near 0.8, L2 resets it near 0."""
    tables = _tables(slope, 5, np.random.default_rng(11))
    assert _rate(tables, verdict) >= 0.95


@pytest.mark.slow
def test_the_interval_covers_the_true_slope_at_its_nominal_rate():
    tables = _tables(0.4, 5, np.random.default_rng(3))
    res = [radial_verdict(t, LOG_SIGMA) for t in tables]
    cover = np.mean([r["q05"] <= 0.4 <= r["q95"] for r in res])
    assert abs(cover - (1 - 2 * ALPHA)) <= 3 * math.sqrt(0.09 / N_REP)


def _cube_with_norms(slopes: dict[str, float], n_seed: int = 4, *, epochs: int = 3) -> object:
    rng = np.random.default_rng(0)
    sigma = np.exp(LOG_SIGMA)
    ds = cube.empty_cube(list(slopes), sigma.tolist(), list(range(n_seed)))
    ds = ds.assign_coords({cube.EPOCH: np.arange(epochs)})
    kn = np.full((len(slopes), len(sigma), n_seed, epochs), np.nan)
    for i, b in enumerate(slopes.values()):
        kn[i, :, :, -1] = np.exp(2.0 + b * LOG_SIGMA[:, None] + 0.02 * rng.standard_normal((len(sigma), n_seed)))
        kn[i, :, :, 0] = 8.0 * sigma[:, None]  # at init the norm is exactly proportional to sigma_w
    ds[cube.KERNEL_NORM] = (cube.CURVE_DIMS, kn)
    ds[cube.STATUS] = (cube.CELL_DIMS, np.zeros(kn.shape[:3], dtype="int8"))
    return ds


def test_a_cube_gives_each_pipeline_its_verdict_from_its_last_epoch():
    ds = _cube_with_norms({"plain_sgd": 0.8, "sgd_l2": 0.0, "between": RADIAL_MARGIN})
    out = radial_verdicts(ds)
    assert out["plain_sgd"]["verdict"] == KEEPS and out["sgd_l2"]["verdict"] == FORGETS
    assert out["between"]["verdict"] == UNDECIDED == "undecided"
    assert abs(out["plain_sgd"]["slope"] - 0.8) < 0.05 and out["plain_sgd"]["n"] == 4


def test_runs_that_did_not_finish_are_left_out_and_categorical_probes_get_no_verdict():
    ds = _cube_with_norms({"p": 0.8})
    status = ds[cube.STATUS].values.copy()
    status[0, :, 0] = cube.DIVERGED  # seed 0 diverged everywhere: its slope is not counted
    ds[cube.STATUS] = (cube.CELL_DIMS, status)
    assert radial_verdicts(ds)["p"]["n"] == 3
    ds.attrs[cube.A_PROBE] = cube.PROBE_SHAPE
    assert radial_verdicts(ds) == {}

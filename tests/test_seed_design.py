"""Independent seeds (cube attribute seed_design) drop the seed effect shared across sigma_w.

Known answers: with independent seeds, relabelling the seeds within one sigma_w level changes
nothing the model sees (its log density is the same at every point), while the paired model does
change (a seed effect shared across levels is what pairing means); the seed SD is reported as 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from initmem import cube
from initmem.models.data import prepare_data
from initmem.models.designs import SMALL, log_density
from initmem.models.memory import MemoryModel
from initmem.simulate import SimPipeline, simulate_cube


def _relabel_within_level(ds, level: int):
    """Seeds reversed at one sigma_w level only (the same runs, other seed numbers)."""
    out = ds.copy(deep=True)
    for name in (cube.SELECTED_TEST_ACC, cube.SELECTED_TEST_CORRECT, cube.TEST_PRED):
        if name in out:
            v = out[name].values
            v[:, level] = v[:, level, ::-1].copy()
            out[name].values = v
    return out


def _logp(ds, design: str) -> tuple[MemoryModel, float]:
    ds = ds.assign_attrs({cube.A_SEED_DESIGN: design})
    model = MemoryModel(prepare_data(ds, None, None, gate="all", seed=0))
    point = model.model.initial_point()
    rng = np.random.default_rng(1)
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in point.items()}
    return model, float(log_density(model.model)(point))


@pytest.mark.slow
def test_independent_seeds_ignore_seed_labels_and_paired_seeds_do_not():
    ds = simulate_cube([SimPipeline("a", n_seed=4, seed_sd=0.3)], n_test=400, seed=5)
    other = _relabel_within_level(ds, 2)
    m_ind, lp_ind = _logp(ds, cube.SEED_INDEPENDENT)
    _, lp_ind_other = _logp(other, cube.SEED_INDEPENDENT)
    _, lp_pair = _logp(ds, cube.SEED_PAIRED)
    _, lp_pair_other = _logp(other, cube.SEED_PAIRED)
    assert not m_ind.paired and m_ind.data.seed_design == cube.SEED_INDEPENDENT
    np.testing.assert_allclose(lp_ind, lp_ind_other, rtol=0, atol=1e-8)
    assert abs(lp_pair - lp_pair_other) > 1e-3


@pytest.mark.slow
def test_independent_design_reports_no_seed_effect():
    # 4 pipelines x 3 levels x 3 independent seeds, compiled as the suite's other small cubes (the seed design
    # is data, not structure: designs.SMALL)
    ds = simulate_cube([SimPipeline(name, n_sigma=3, n_seed=3) for name in "abcd"], n_test=400, seed=6)
    ds = ds.assign_attrs({cube.A_SEED_DESIGN: cube.SEED_INDEPENDENT})
    model = MemoryModel(prepare_data(ds, None, None, gate="all", seed=0), slots=SMALL)
    model.fit(draws=200, tune=200, chains=2, seed=0, progress=False)
    assert float(np.abs(model.idata.posterior["seed_sd"]).max()) == 0.0
    assert float(model.idata.posterior["seed_share"].max()) == 0.0

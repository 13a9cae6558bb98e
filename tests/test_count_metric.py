"""One unit for an accuracy: the count of correct answers is refused, the accuracy is analyzed as a fraction, and
a delta that cannot be a fraction is refused (models/data.py ``choose_metric``, ``resolve_delta``).

The failure this guards against: with ``--metric selected_test_correct --delta 6`` (6 of 600 answers = 1 point)
the data were turned into fractions while delta stayed in answers, so a 5-point spread was called "forgets".
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from initmem import cube
from initmem.errors import OptionError, UserError
from initmem.models.data import DEFAULT_ACCURACY_DELTA, choose_metric, prepare_data, resolve_delta
from initmem.simulate import SimPipeline, read_truth, simulate_cube
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._compile_shape import SMALL_FLAG

N_TEST = 600


@pytest.fixture(scope="module")
def remembering_cube(tmp_path_factory):
    """One pipeline, 6 levels x 6 seeds on 600 test examples, whose true spread is about 5 points."""
    ds = simulate_cube([SimPipeline("p0", sigma_sd=0.3, n_seed=6)], n_test=N_TEST, seed=6)
    path = tmp_path_factory.mktemp("count") / "c.nc"
    cube.write_cube(ds, path)
    return path, ds


def test_the_cube_holds_a_memory_far_above_one_point(remembering_cube):
    _, ds = remembering_cube
    spread = read_truth(ds)["pipelines"]["p0"]["spread"]
    assert 0.04 < spread < 0.07                      # 4-7 points: "remembers" is the truth at delta = 1 point
    k = ds[cube.SELECTED_TEST_CORRECT].values
    assert np.array_equal(np.rint(ds[cube.SELECTED_TEST_ACC].values * N_TEST), k)   # one information, two units


def test_the_count_metric_is_refused_in_one_line_naming_the_accuracy(remembering_cube, tmp_path):
    path, _ = remembering_cube
    proc = invoke("analyze", path, "--out", tmp_path / "a", "--metric", cube.SELECTED_TEST_CORRECT,
                  "--delta", "6", *SMALL_FLAG)
    assert_user_error(proc, cube.SELECTED_TEST_CORRECT, f"--metric {cube.SELECTED_TEST_ACC}",
                      "0.01 = 1 point = 6 of 600 correct answers")
    assert not (tmp_path / "a" / "summary.json").exists()


def test_a_delta_in_answers_or_points_is_refused_for_an_accuracy(remembering_cube, tmp_path):
    path, _ = remembering_cube
    for bad in ("6", "1"):
        proc = invoke("analyze", path, "--out", tmp_path / "a", "--metric", cube.SELECTED_TEST_ACC,
                      "--delta", bad, *SMALL_FLAG)
        assert_user_error(proc, "--delta", "is ambiguous", f"--delta {bad}pt", f"--delta {int(bad) / 100:g}")


@pytest.mark.slow
def test_the_accuracy_at_one_point_remembers_the_five_point_memory(remembering_cube, tmp_path):
    """The same data as an accuracy with delta = 0.01: the verdict the truth calls for, and summary.json's delta
    and estimand in the one unit (a fraction)."""
    path, _ = remembering_cube
    proc = invoke("analyze", path, "--out", tmp_path / "a", "--metric", cube.SELECTED_TEST_ACC, "--delta", "0.01",
                  "--draws", "300", "--tune", "300", "--chains", "2", *SMALL_FLAG)
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["delta"] == 0.01 and s["metric"] == cube.SELECTED_TEST_ACC
    assert "as a fraction" in s["estimand"]
    assert s["pipelines"]["p0"]["verdict"] == "remembers"
    assert 0.02 < s["pipelines"]["p0"]["spread"]["median"] < 0.09     # fractions, not answers


def test_the_default_metric_is_the_accuracy_never_the_count(remembering_cube):
    _, ds = remembering_cube
    assert choose_metric(ds, None) == cube.SELECTED_TEST_ACC
    only_counts = ds.drop_vars([cube.SELECTED_TEST_ACC, cube.TEST_PRED, cube.TEST_LABEL])
    with pytest.raises(UserError, match="has no selected_test_acc"):
        choose_metric(only_counts, None)


def test_the_accuracy_and_its_delta_are_decided_from_the_data(remembering_cube):
    _, ds = remembering_cube
    d = prepare_data(ds, cube.SELECTED_TEST_ACC)
    assert d.likelihood == "per_example" and d.is_accuracy
    assert resolve_delta(d, None) == DEFAULT_ACCURACY_DELTA == 0.01
    with pytest.raises(OptionError, match="not a fraction"):
        resolve_delta(d, 6.0)
    counts = prepare_data(ds.drop_vars([cube.TEST_PRED, cube.TEST_LABEL]), cube.SELECTED_TEST_ACC)
    assert counts.likelihood == "counts" and counts.is_accuracy
    assert np.array_equal(counts.y[counts.used], ds[cube.SELECTED_TEST_CORRECT].values[0][counts.used[0]] / N_TEST)
    # a gaussian fit of an accuracy variable is an accuracy while its values are fractions ...
    g = prepare_data(ds, cube.SELECTED_TEST_ACC, "gaussian")
    assert g.likelihood == "gaussian" and g.is_accuracy
    # ... and not when they are not (a table in percent): then delta is in the metric's units, with no default
    pct = ds.assign({cube.SELECTED_TEST_ACC: ds[cube.SELECTED_TEST_ACC] * 100})
    gp = prepare_data(pct, cube.SELECTED_TEST_ACC, "gaussian")
    assert not gp.is_accuracy
    assert resolve_delta(gp, 1.0) == 1.0
    with pytest.raises(OptionError, match="not an accuracy"):
        resolve_delta(gp, None)

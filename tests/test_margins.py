"""The margins resolved once (results/margins.py): defaults, the one validation, and the record summary.json keeps."""

from __future__ import annotations

import click
import pytest

from initmem import cube
from initmem.cli.params import MARGIN, check_margin
from initmem.errors import OptionError
from initmem.models.data import resolve_delta
from initmem.results.margins import Margins, resolve_margins
from initmem.results.records import Summary


def test_defaults_follow_the_metric():
    acc = resolve_margins(cube.SELECTED_TEST_ACC, delta=None)
    assert (acc.delta, acc.rope, acc.draw_margin, acc.unit) == (0.01, 0.01, 0.005, "fraction")
    given = resolve_margins(cube.SELECTED_TEST_ACC, delta=0.02, rope=0.03, draw_margin=0.004)
    assert (given.delta, given.rope, given.draw_margin) == (0.02, 0.03, 0.004)
    secs = resolve_margins(cube.WALL_SECONDS, delta=5.0)
    assert (secs.delta, secs.rope, secs.draw_margin, secs.unit) == (5.0, 5.0, None, "metric units")
    # the data decide whether the metric is an accuracy where they know it
    assert resolve_margins("a_score", delta=2.0, accuracy=False).unit == "metric units"


@pytest.mark.parametrize(("metric", "options", "message"), [
    (cube.WALL_SECONDS, {"delta": None}, "metric 'wall_seconds' is not an accuracy: give delta in its units"),
    (cube.SELECTED_TEST_ACC, {"delta": 2.0}, "delta 2 is not a fraction"),
    (cube.SELECTED_TEST_ACC, {"delta": 0.01, "draw_margin": 1.0}, "draw_margin 1 is not a fraction"),
    (cube.SELECTED_TEST_ACC, {"delta": 0.0}, "delta must be a positive number (got 0.0)"),
    (cube.SELECTED_TEST_ACC, {"delta": 0.01, "rope": -1.0}, "must be a positive number (got -1.0)"),
])
def test_one_function_refuses_a_bad_margin(metric, options, message):
    with pytest.raises((OptionError, ValueError)) as exc:
        resolve_margins(metric, **options)
    assert message in str(exc.value)


def test_the_command_line_refuses_with_the_same_check():
    with pytest.raises(click.BadParameter, match="--delta 2pt for 2 points, or --delta 0.02 as a fraction"):
        check_margin(cube.SELECTED_TEST_ACC, MARGIN.convert("2", None, None), "--delta")
    with pytest.raises(click.BadParameter, match="2pt is in accuracy points, but metric 'wall_seconds'"):
        check_margin(cube.WALL_SECONDS, MARGIN.convert("2pt", None, None), "--draw-margin")
    check_margin(cube.SELECTED_TEST_ACC, MARGIN.convert("2pt", None, None), "--delta")     # 0.02: accepted
    assert resolve_delta(cube.SELECTED_TEST_ACC, None) == 0.01


def test_summary_json_keeps_the_record_whole_and_older_files_load():
    base = {"metric": "m", "family": "gaussian", "delta": 0.01, "pipelines": {}}
    m = resolve_margins(cube.SELECTED_TEST_ACC, delta=0.02)
    s = Summary.model_validate({**base, "margins": m.to_json()})
    assert s.margins == m and isinstance(s.margins, Margins)
    assert Summary.model_validate(base).margins is None

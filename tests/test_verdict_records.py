"""The verdict as typed records: a pipeline's entry is a PipelineResult from the moment it is decided, each later
step returns a new record (Record.replaced), the radial and draw verdicts are rows of the rule table, and both
option records are built by one helper."""

from __future__ import annotations

import numpy as np
import pytest

from initmem import cube
from initmem.collect.execution.options import CollectOptions
from initmem.errors import OptionError
from initmem.models.rules import READOUT, READOUTS
from initmem.models.summaries import attach_checks, checked
from initmem.results.margins import RADIAL_MARGIN
from initmem.results.records import (
    DRAW_VERDICTS,
    RADIAL_VERDICTS,
    Frequentist,
    PipelineResult,
    Quantiles,
)
from initmem.results.spec import AnalysisSpec
from initmem.stats import radial
from initmem.stats.frequentist import crosscheck, crosschecked

Q = {"median": 0.02, "q05": 0.01, "q95": 0.03}


def _entry(verdict: str = "remembers", notes: tuple[str, ...] = ("the model's note",)) -> PipelineResult:
    return PipelineResult.model_validate({
        "n_sigma": 6, "n_seed": 12, "sigma_sd": Q, "seed_sd": Q, "residual_sd": Q, "memory_share": Q, "spread": Q,
        "p_spread_gt_delta": 0.9, "verdict": verdict, "notes": list(notes)})


def _cube(tables: dict[str, np.ndarray]):
    names = list(tables)
    n_lev, n_seed = next(iter(tables.values())).shape
    ds = cube.empty_cube(names, list(np.geomspace(0.25, 8, n_lev)), list(range(n_seed)))
    vals = np.stack([tables[n] for n in names])
    ds["metric"] = (cube.CELL_DIMS, vals)
    ds["status"] = (cube.CELL_DIMS, np.full(vals.shape, cube.OK, dtype="int8"))
    return ds


def test_replaced_validates_a_new_record_and_leaves_the_old_one_as_it_was():
    entry = _entry()
    new = entry.replaced(frequentist={"verdict": "forgets", "tost": {"p": 0.01}}, notes=[*entry.notes, "more"])
    assert isinstance(new.frequentist, Frequentist) and new.frequentist.tost.p == 0.01   # typed, not a dict
    assert entry.frequentist is None and entry.notes == ["the model's note"]
    assert new.notes == ["the model's note", "more"] and new.spread == entry.spread
    assert Quantiles(**Q).replaced(q95=float("nan")).q95 is None      # as summary.json would hold it


def test_the_model_checks_on_a_record_and_on_a_plain_entry_agree():
    ppc = {"spread": {"observed": 1.0, "p_value": 0.001, "q05": 0.0, "q95": 0.5}}
    entry = _entry()
    record = checked(entry, ppc)
    plain = {"p": {"notes": list(entry.notes)}}
    attach_checks(plain, {"p": ppc})
    assert record.checks_failed == plain["p"]["checks_failed"] == ["spread"]
    assert record.notes == plain["p"]["notes"] and len(record.notes) == 2
    assert entry.checks_failed == [] and entry.ppc == {}


def test_the_cross_check_returns_new_records_with_the_same_numbers_as_the_plain_one():
    rng = np.random.default_rng(11)
    seed_fx = rng.normal(0, 0.02, (1, 12))
    ds = _cube({"remembers": 0.7 + np.linspace(0, 0.2, 6)[:, None] + seed_fx + rng.normal(0, 0.004, (6, 12)),
                "forgets": 0.7 + seed_fx + rng.normal(0, 0.002, (6, 12))})
    given = {"remembers": _entry("remembers"), "forgets": _entry("remembers")}
    out = crosschecked(ds, "metric", 0.01, given)
    plain = crosscheck(ds, "metric", 0.01, {p: e.model_dump() for p, e in given.items()})
    for pipe, entry in out.items():
        assert entry is not given[pipe] and given[pipe].frequentist is None      # the input is left as it was
        assert entry.frequentist is not None and entry.frequentist.verdict == plain[pipe]["frequentist"]["verdict"]
        assert entry.agreement == plain[pipe]["agreement"]
        assert entry.notes == ["the model's note", *plain[pipe]["notes"]]       # the model's notes first
    assert out["remembers"].frequentist.verdict == "remembers" and out["forgets"].frequentist.verdict == "forgets"
    assert out["remembers"].agreement and not out["forgets"].agreement


def test_the_radial_and_draw_verdicts_are_rows_of_the_rule_table():
    assert [r.key for r in READOUTS] == ["radial", "draw"]
    rad, draw = READOUT["radial"], READOUT["draw"]
    assert rad.margin == RADIAL_MARGIN == radial.RADIAL_MARGIN == 0.1 and rad.alpha == 0.05
    assert rad.verdicts == (radial.KEEPS, radial.FORGETS) == RADIAL_VERDICTS[:2]
    assert draw.verdicts == DRAW_VERDICTS[:2] and draw.alpha is None and draw.margin is None
    assert rad.rule() == (
        "Radial memory was decided from the slope of the log final kernel norm on log sigma_w, averaged over seeds "
        "(1 at initialization): 'keeps the initial scale' when a one-sided t test shows it above 0.1, 'forgets the "
        "scale' when two one-sided t tests show it inside +-0.1 (alpha = 0.05).")
    assert draw.rule(0.1, "a margin of 0.5 accuracy points") == (
        "A pipeline was said to keep its draw when the one-sided 90% lower confidence bound of SD_init exceeded a "
        "margin of 0.5 accuracy points, and to forget it when the upper bound fell below the margin")
    with pytest.raises(AssertionError):
        draw.rule()          # the draw verdict is decided at the analysis's alpha: it must be given


def test_both_option_records_refuse_a_misspelt_option_by_the_same_helper():
    with pytest.raises(OptionError, match="^chain is not an analysis option; did you mean chains\\?$"):
        AnalysisSpec.of(chain=2)
    with pytest.raises(OptionError, match="^forse_new is not a collect option; did you mean force_new\\?$"):
        CollectOptions.of(forse_new=True)
    spec = AnalysisSpec.of(delta=0.02)
    assert AnalysisSpec.of(spec, chains=2) == spec.model_copy(update={"chains": 2})

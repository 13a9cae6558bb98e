"""The atlas table (reports/paper_tables.py ``atlas_table``): one row per recipe with the accuracy verdict, the radial
verdict and their agreement, the forgetting time on the best clock, the seeds spent and the Holm column, on an
analysis folder whose every value the test sets."""

from __future__ import annotations

import csv

import pytest

from initmem import names as N
from initmem import results as R
from initmem.models.family import holm_verdicts, summary_rows
from initmem.plot.load import load_analysis
from initmem.reports.paper_tables import atlas_table, to_csv, to_latex, to_markdown
from initmem.results.records import EquivalenceCheck
from initmem.stats.radial import FORGETS, KEEPS
from initmem.tests._report_fixture import small_cube, write_analysis

RADIAL = {"remembering": KEEPS, "forgetting": KEEPS, "third": FORGETS}


def _edit(summary: R.Summary) -> None:
    for name, p in summary.pipelines.items():
        p.radial = R.RadialVerdict(margin=0.1, n=3, slope=0.5, q05=0.4, q95=0.6, verdict=RADIAL[name])
        p.paired_check = R.PairedCheck(p_value=0.001 if name == "remembering" else 1.0,
                                       supports_remembers=name == "remembering")
        p.equivalence_check = EquivalenceCheck(p_value=0.002 if name != "remembering" else 1.0,
                                                 supports_forgets=name != "remembering")
    summary.pipelines["remembering"].verdict = N.REMEMBERS
    summary.pipelines["forgetting"].verdict = N.FORGETS
    summary.pipelines["third"].verdict = N.UNDECIDED


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    root = tmp_path_factory.mktemp("atlas")
    return load_analysis(write_analysis(small_cube(("remembering", "forgetting", "third")), root, edit=_edit))


def test_each_recipe_gets_its_verdicts_agreement_seeds_and_holm(analysis):
    t = atlas_table(analysis)
    assert [c.name for c in t.columns] == ["recipe", "verdict", "spread", "error_ratio", "radial", "agreement",
                                           "forgetting_time", "seeds", "holm"]
    rows = {r[0]: dict(zip([c.name for c in t.columns], r, strict=True)) for r in t.rows}
    assert list(rows) == ["remembering", "forgetting", "third"]
    assert [rows[p]["radial"] for p in rows] == [KEEPS, KEEPS, FORGETS]
    # remembers + keeps agree; forgets + keeps part; an undecided accuracy verdict has no agreement
    assert [rows[p]["agreement"] for p in rows] == ["agree", "disagree", None]
    assert all(rows[p]["seeds"] == analysis.pipe(p).n_seed for p in rows)
    holm = holm_verdicts(summary_rows(analysis.summary))
    assert {p: rows[p]["holm"] for p in rows} == holm
    assert holm["third"] == N.UNDECIDED
    spread = analysis.pipe("remembering").spread
    assert rows["remembering"]["spread"].value == pytest.approx(spread.median * analysis.scale)
    assert "at most 0.10" in t.caption          # two decided rows at alpha = 0.05


def test_the_three_renderings_carry_the_same_rows(analysis):
    t = atlas_table(analysis)
    rows = list(csv.DictReader(to_csv(t).splitlines()))
    assert [r["recipe"] for r in rows] == ["remembering", "forgetting", "third"]
    assert {"spread", "spread_q05", "spread_q95"} <= set(rows[0])
    assert to_markdown(t).count("\n| ") == 5   # header, rule and three rows
    assert "disagree" in to_latex(t) and "remembering" in to_latex(t)

"""Claims a table makes: a verdict the survivorship check overturns is marked wherever the verdict is shown and is
not counted as decided; "forgets" comes with the ratio of the error rates at the extreme sigma_w levels
(results/records.py ``survivorship_overturned``, reports/tables.py ``error_ratio``, reports/paper_tables.py)."""

from __future__ import annotations

import html
import math
import re

import pytest

from initmem import names as N
from initmem import results as R
from initmem.models.family import holm_verdicts, summary_rows
from initmem.plot.load import load_analysis
from initmem.reports.paper_tables import atlas_table, to_csv, to_markdown, verdict_table
from initmem.reports.tables import SURVIVORSHIP_MARK, counts_as_decided, error_ratio
from initmem.reports.tables import summary_rows as report_rows
from initmem.reports.text import headline
from initmem.results.records import EquivalenceCheck
from initmem.tests._report_fixture import small_cube, write_analysis

PIPES = ("remembering", "forgetting", "third")
# Expected accuracy per sigma_w level (posterior medians): the error rates at the two extreme levels are 3% and
# 4.5% for "forgetting" (ratio 1.5), 2% and 10% for "remembering" (ratio 5; the smaller error at the top level).
EXPECTED = {"remembering": [0.90, 0.95, 0.97, 0.98], "forgetting": [0.97, 0.965, 0.96, 0.955],
            "third": [0.80, 0.80, 0.80, 0.80]}
SIGMA_W = [0.25, 0.5, 2.0, 4.0]


def _lost(verdict_after: str, direction: str | None, *, changes: bool = True) -> R.Missingness:
    """Survivorship: 2 runs never interpolated; put back, the verdict becomes ``verdict_after``."""
    sens = R.DivergenceSensitivity(verdict=verdict_after, spread=R.Quantiles(median=0.025, q05=0.012, q95=0.04),
                                   p_spread_gt_delta=0.6, p_spread_lt_delta=0.4, note="put back")
    return R.Missingness(n_gated=2, by_sigma_w={"4.0": 2}, p_value=0.003, depends_on_sigma_w=True,
                         verdict_changes=changes, put_back_direction=direction, warning="2 run(s) were left out",
                         sensitivity=sens)


def _edit(summary: R.Summary) -> None:
    for name, p in summary.pipelines.items():
        p.paired_check = R.PairedCheck(p_value=0.001 if name == "remembering" else 1.0,
                                       supports_remembers=name == "remembering")
        p.equivalence_check = EquivalenceCheck(p_value=0.001 if name == "forgetting" else 1.0,
                                               supports_forgets=name == "forgetting")
        p.p_spread_gt_delta, p.p_spread_lt_delta = (0.999, 0.001) if name == "remembering" else (0.001, 0.999)
        p.borderline = False
        p.expected = R.Expected(sigma_w=SIGMA_W, median=EXPECTED[name], q05=EXPECTED[name], q95=EXPECTED[name])
    summary.pipelines["remembering"].verdict = N.REMEMBERS
    summary.pipelines["forgetting"].verdict = N.FORGETS
    summary.pipelines["third"].verdict = N.FORGETS
    # forgetting: put back, the spread moves across delta and the verdict becomes undecided: overturned.
    summary.pipelines["forgetting"].missingness = _lost(N.UNDECIDED, "across")
    # remembering: put back, the spread moves further from delta (the slow runs' noise): not overturned.
    summary.pipelines["remembering"].missingness = _lost(N.UNDECIDED, "further")
    # third: the refit keeps the verdict: nothing to mark.
    summary.pipelines["third"].missingness = _lost(N.FORGETS, "towards", changes=False)


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    root = tmp_path_factory.mktemp("claims")
    return load_analysis(write_analysis(small_cube(PIPES, curves=False), root, edit=_edit))


def test_overturned_means_the_refit_changes_the_verdict_towards_or_across_delta(analysis):
    info = {p: analysis.pipe(p) for p in PIPES}
    assert [info[p].survivorship_overturned for p in PIPES] == [False, True, False]
    assert info["forgetting"].marked_verdict == f"forgets ({SURVIVORSHIP_MARK})"
    assert info["remembering"].marked_verdict == "remembers"
    assert [counts_as_decided(info[p]) for p in PIPES] == [True, False, True]
    # the direction decides: "towards" overturns as "across" does; an unknown direction counts too
    for direction, overturned in (("towards", True), ("across", True), (None, True), ("further", False)):
        entry = info["forgetting"].model_copy(update={"missingness": _lost(N.UNDECIDED, direction)})
        assert entry.survivorship_overturned is overturned
    # an undecided verdict has nothing to overturn
    assert not info["forgetting"].model_copy(update={"verdict": N.UNDECIDED}).survivorship_overturned


def test_the_overturned_verdict_is_marked_in_the_export_tables_and_not_counted(analysis):
    t = verdict_table(analysis)
    col = [c.name for c in t.columns]
    rows = {r[0]: dict(zip(col, r, strict=True)) for r in t.rows}
    assert rows["forgetting"]["verdict"] == f"forgets ({SURVIVORSHIP_MARK})"
    assert rows["remembering"]["verdict"] == "remembers" and rows["third"]["verdict"] == "forgets"
    assert SURVIVORSHIP_MARK in t.caption
    a_t = atlas_table(analysis)
    col = [c.name for c in a_t.columns]
    atlas = {r[0]: dict(zip(col, r, strict=True)) for r in a_t.rows}
    assert atlas["forgetting"]["verdict"] == f"forgets ({SURVIVORSHIP_MARK})"
    # not counted among the decided rows: two decided rows at alpha 0.05 bound the false verdicts at 0.10
    assert "over the 2 decided rows" in a_t.caption and "at most 0.10" in a_t.caption
    # Holm keeps nothing of it, though its own evidence (IUT p = 0.001) would pass at the first share
    assert atlas["forgetting"]["holm"] == N.UNDECIDED
    assert holm_verdicts(summary_rows(analysis.summary))["forgetting"] == N.FORGETS
    assert atlas["forgetting"]["agreement"] is None
    assert f"forgets ({SURVIVORSHIP_MARK})" in to_markdown(a_t) and f"forgets ({SURVIVORSHIP_MARK})" in to_csv(a_t)


def test_the_report_marks_it_and_its_first_sentence_does_not_count_it(analysis):
    from initmem.reports.html import render_html

    sentence = headline(analysis)
    assert "forgetting (forgets overturned by survivorship) is undecided" in sentence
    assert "third forgets it (memory below δ)" in sentence and "remembering remembers" in sentence
    rows = {r["name"]: r for r in report_rows(analysis)}
    assert rows["forgetting"]["mark"] == SURVIVORSHIP_MARK and rows["remembering"]["mark"] is None
    text = render_html(analysis)
    table = text.split('<table id="headline-table"', 1)[1].split("</table>", 1)[0]
    cells = dict(re.findall(r'<th scope="row" class="pipeline">(.*?)</th>(.*?)</tr>', table, re.S))
    assert f'<span class="tag bad overturned">{SURVIVORSHIP_MARK}</span>' in cells["forgetting"]
    assert "overturned" not in cells["remembering"] and "overturned" not in cells["third"]
    summary = text.split('<table class="sortable" id="summary-table"', 1)[1].split("</table>", 1)[0]
    assert summary.count(f'<span class="tag bad overturned">{SURVIVORSHIP_MARK}</span>') == 1
    assert html.unescape(text).count(sentence) >= 1


def test_the_error_ratio_is_the_extreme_levels_error_rates_larger_over_smaller(analysis):
    ratio = {p: error_ratio(analysis, analysis.pipe(p)) for p in PIPES}
    assert ratio["forgetting"] == pytest.approx(0.045 / 0.03)      # 1.5: 3% against 4.5%
    assert ratio["remembering"] == pytest.approx(0.10 / 0.02)      # 5: 10% at 1/4 against 2% at 4
    assert ratio["third"] == pytest.approx(1.0)
    for build in (verdict_table, atlas_table):
        t = build(analysis)
        col = [c.name for c in t.columns]
        assert col.index("error_ratio") == col.index("spread") + 1
        got = {r[0]: r[col.index("error_ratio")] for r in t.rows}
        assert got == pytest.approx(ratio)
        assert "| 1.50 |" in to_markdown(t) and "| 5.00 |" in to_markdown(t)
        assert "memory below delta" in t.caption
    from initmem.reports.html import render_html

    table = render_html(analysis).split('<table id="headline-table"', 1)[1].split("</table>", 1)[0]
    assert "Error ratio (extreme σ_w)" in html.unescape(table)
    assert re.findall(r'<td class="error-ratio">(.*?)</td>', table) == ["5.00", "1.50", "1.00"]


def test_the_error_ratio_needs_an_accuracy_and_a_nonzero_error(analysis):
    info = analysis.pipe("forgetting")
    perfect = info.model_copy(update={"expected": R.Expected(sigma_w=[0.25, 4.0], median=[1.0, 0.99],
                                                             q05=[1.0, 0.99], q95=[1.0, 0.99])})
    assert error_ratio(analysis, perfect) == math.inf
    both = info.model_copy(update={"expected": R.Expected(sigma_w=[0.25, 4.0], median=[1.0, 1.0],
                                                          q05=[1.0, 1.0], q95=[1.0, 1.0])})
    assert math.isnan(error_ratio(analysis, both))
    assert math.isnan(error_ratio(analysis, info.model_copy(update={"expected": None})))
    loss = analysis.summary.model_copy(update={"is_accuracy": False, "metric": "final_test_loss"})
    other = type(analysis)(dir=analysis.dir, summary=loss)
    assert math.isnan(error_ratio(other, info))


@pytest.mark.slow
def test_a_sequential_run_does_not_count_an_overturned_verdict_as_decided(tmp_path):
    # Two pipelines decided at the first look; the survivorship refit overturns sgd's "forgets". The run's
    # "decided k of n" line counts 1 of 2 and names it.
    import shutil
    from pathlib import Path

    from initmem import cube
    from initmem.analysis.run import run_all
    from initmem.tests._collect_fake import fake_train_pack
    from initmem.tests._collect_util import FAKE_GRID

    def analyze(cube_path: Path, out_dir: Path, **kw) -> R.Summary:
        ds = cube.open_cube(cube_path)

        def edit(summary: R.Summary) -> None:
            summary.pipelines["sgd"].missingness = _lost(N.UNDECIDED, "across")

        tmp = Path(out_dir).parent / "_tmp"
        write_analysis(ds, tmp, verdicts={"sgd": N.FORGETS, "adam": N.REMEMBERS}, with_curves=False,
                       write_cube=False, edit=edit)
        shutil.rmtree(out_dir, ignore_errors=True)
        shutil.move(tmp / "analysis", out_dir)
        shutil.rmtree(tmp)
        return R.load_summary(out_dir)

    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID)
    said: list[str] = []
    run_all(grid, tmp_path / "run", say=said.append, train_fn=fake_train_pack, analyze_fn=analyze, looks=[2, 4])
    line = next(s for s in said if "decided" in s and "pipelines with" in s)
    assert "decided 1 of 2 pipelines" in line
    assert f"not counted: sgd (verdict {SURVIVORSHIP_MARK})" in line


def test_the_atlas_page_does_not_count_an_overturned_verdict(analysis, tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "studies" / "atlas_page.py"
    spec = importlib.util.spec_from_file_location("atlas_page", path)
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    assert page._match(f"forgets ({SURVIVORSHIP_MARK})", N.FORGETS) == f"not decided ({SURVIVORSHIP_MARK})"
    assert page._match(N.FORGETS, N.FORGETS) == "as predicted"
    # the same analysis as the run and as its rerun: two rows decided in both, the overturned one in neither
    run = analysis.dir.parent
    text = page.rerun_section(run, run)
    row = next(line for line in text.splitlines() if line.startswith("| forgetting |"))
    assert row.startswith(f"| forgetting | forgets ({SURVIVORSHIP_MARK}) | forgets ({SURVIVORSHIP_MARK}) |")
    assert row.endswith("| not decided in both |")
    assert "Decided in both runs: 2 recipes; the same verdict in 2 of them." in text

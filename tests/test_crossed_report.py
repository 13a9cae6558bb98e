"""The report of a crossed seed design: summary.json's ``crossed`` block (typed records, absent from a plain
summary), the section "Crossed seeds: the memory of the draw" with its tables, figures, citation and escaping, the
export table, and a plain analysis's report without a trace of it."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import pytest

from initmem import plot
from initmem import results as R
from initmem.jsonio import json_safe
from initmem.plot.core import Skip
from initmem.plot.load import load_analysis
from initmem.reports.html import render_html
from initmem.reports.methods import methods_text
from initmem.reports.paper_tables import paper_tables, to_csv
from initmem.reports.references import REFERENCES
from initmem.results import records as RR
from initmem.tests._report_fixture import small_cube, write_analysis

XSS = "<script>alert(1)</script>"
PIPES = (XSS, "adamw")


def _b(est: float, lo: float, hi: float) -> RR.Bounds:
    return RR.Bounds(estimate=est, lower=lo, upper=hi)


def _post(med: float, lo: float, hi: float) -> RR.PosteriorBounds:
    return RR.PosteriorBounds(median=med, lower=lo, upper=hi)


def crossed_block() -> RR.Crossed:
    """Known numbers (accuracy fractions): the first pipeline keeps its draw, adamw forgets it."""
    keeps = RR.CrossedPipeline(
        draw_verdict="keeps its draw",
        sd_init=_b(0.0123, 0.0081, 0.0170), sd_data=_b(0.0042, 0.0011, 0.0077), sd_resid=_b(0.0031, 0.0025, 0.0040),
        init_share=_b(0.83, 0.61, 0.93),
        bayes=RR.CrossedBayes(sd_init=_post(0.0119, 0.0078, 0.0181), sd_data=_post(0.004, 0.001, 0.008),
                              sd_resid=_post(0.003, 0.0025, 0.004), init_share=_post(0.81, 0.57, 0.92),
                              p_sd_init_gt_margin=0.987),
        by_sigma_w=[RR.CrossedLevel(sigma_w=s, sd_init=_b(0.01 + 0.001 * i, 0.006, 0.02),
                                    sd_data=_b(0.004, 0.001, 0.008), sd_resid=_b(0.003, 0.002, 0.004),
                                    init_share=_b(0.8, 0.5, 0.95)) for i, s in enumerate((0.25, 1.0, 4.0))],
        init_share_curve=RR.InitShareCurve(epoch=[10, 20, 30], init_share=[0.2, 0.5, 0.83],
                                           sd_init=[0.02, 0.015, 0.0123], sd_data=[0.03, 0.01, 0.0042]))
    forgets = RR.CrossedPipeline(
        draw_verdict="forgets its draw",
        sd_init=_b(0.0007, 0.0, 0.0029), sd_data=_b(0.0051, 0.0035, 0.0080), sd_resid=_b(0.0030, 0.0024, 0.0038),
        init_share=_b(0.01, 0.0, 0.2), bayes=RR.CrossedBayes(sd_init=_post(0.0009, 0.0001, 0.0031),
                                                             p_sd_init_gt_margin=0.004))
    return RR.Crossed(margin=0.005, alpha=0.05, units="fraction", n_init=8, n_data=4,
                      pipelines={XSS: keeps, "adamw": forgets})


def _add_crossed(s: R.Summary) -> None:
    s.crossed = crossed_block()


@pytest.fixture(scope="module")
def crossed(tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("crossed")
    analysis = write_analysis(small_cube(PIPES), root, verdicts={XSS: "remembers", "adamw": "forgets"},
                              edit=_add_crossed)
    return analysis, render_html(load_analysis(analysis))


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("plain")
    analysis = write_analysis(small_cube(PIPES), root, verdicts={XSS: "remembers", "adamw": "forgets"})
    return analysis, render_html(load_analysis(analysis))


def _section(text: str) -> str:
    i = text.index('<section id="sec-crossed">')
    return text[i:text.index("</section>", i)]


def _row(section: str, table_id: str, name: str) -> str:
    table = section[section.index(f'id="{table_id}"'):]
    i = table.index(f'data-sort="{html.escape(name)}"')
    return table[i:table.index("</tr>", i)]


@pytest.mark.slow   # these use the module's fixtures, which render two whole reports
def test_the_block_round_trips_and_a_plain_summary_gains_no_key(crossed, plain):
    data = json.loads((crossed[0] / R.SUMMARY_JSON).read_text())
    assert data["crossed"]["pipelines"][XSS]["sd_init"] == {"estimate": 0.0123, "lower": 0.0081, "upper": 0.017}
    assert data["crossed"]["pipelines"]["adamw"]["init_share_curve"] is None
    back = R.load_summary(crossed[0]).crossed
    assert back == crossed_block()
    # A plain summary is the file it was before: no "crossed" key, every other key in its place.
    plain_text = (plain[0] / R.SUMMARY_JSON).read_text()
    summary = R.load_summary(plain[0])
    assert summary.crossed is None and '"crossed"' not in plain_text
    before = json_safe(summary.model_dump(mode="python", by_alias=True, exclude={"crossed"}))
    assert summary.to_json() == before and list(json.loads(plain_text)) == list(before)


def test_a_draw_verdict_outside_the_contract_is_refused():
    bad = crossed_block().to_json()
    bad["pipelines"]["adamw"]["draw_verdict"] = "forgets"
    with pytest.raises(ValueError, match="draw_verdict"):
        RR.Crossed.model_validate(bad)


@pytest.mark.slow
def test_the_section_shows_the_components_in_points_beside_the_scale_verdict(crossed):
    sec = _section(crossed[1])
    assert "Crossed seeds: the memory of the draw" in sec
    row = _row(sec, "crossed-table", XSS)
    # delta 1 point -> 1 decimal for the verdict's numbers, 2 for the SDs; fractions shown as points
    assert '1.23 <span class="ci">[0.81, 1.70]</span>' in row        # SD_init
    assert '0.42 <span class="ci">[0.11, 0.77]</span>' in row        # SD_data
    assert '0.31 <span class="ci">[0.25, 0.40]</span>' in row        # SD_resid
    assert '0.83 <span class="ci">[0.61, 0.93]</span>' in row        # init share: a fraction, not points
    assert '1.19 <span class="ci">[0.78, 1.81]</span>' in row        # Bayes SD_init
    assert ">0.987<" in row
    assert '<span class="badge badge-draw-keeps">keeps its draw</span>' in row
    assert '<span class="badge badge-remembers">remembers</span>' in row   # the scale verdict beside it
    other = _row(sec, "crossed-table", "adamw")
    assert '<span class="badge badge-draw-forgets">forgets its draw</span>' in other
    assert '0.07 <span class="ci">[0.00, 0.29]</span>' in other
    assert "margin of 0.5 points" in sec and "2002.06305" in sec and "keeps its draw</strong>" in sec
    levels = sec[sec.index('id="crossed-levels-table"'):]
    assert levels.count("<tr>") == 1 + 3          # header + the three levels of the one pipeline that has them
    assert re.search(r">4</td>\s*<td[^>]*>1\.20 <span", levels)


@pytest.mark.slow
def test_the_section_draws_both_figures_and_escapes_the_names(crossed):
    text = crossed[1]
    sec = _section(text)
    assert 'id="fig-crossed-components"' in sec and 'id="fig-init-share-curve"' in sec
    assert XSS not in text and "<script>alert" not in text.lower()
    assert html.escape(XSS, quote=False) in sec
    svg = sec[sec.index('id="fig-crossed-components"'):]
    assert html.escape(XSS, quote=False) in svg[:svg.index("</svg>")]   # matplotlib kept the name as text
    toc = text[text.index('<nav class="toc"'):text.index("</nav>")]
    assert "Crossed seeds: the memory of the draw" in toc
    # numbered in table order: after the variance decomposition
    assert re.search(r"<h2>4\. Crossed seeds: the memory of the draw</h2>", sec)
    assert re.search(r"<h2>5\. Training curves:", text)


@pytest.mark.slow
def test_a_plain_analysis_shows_no_trace_of_the_section(plain):
    text = plain[1]
    assert "sec-crossed" not in text and "Crossed seeds" not in text and "draw verdict" not in text.lower()
    assert re.search(r"<h2>4\. Training curves:", text)   # the numbers are the ones it had before
    a = load_analysis(plain[0])
    for name in ("crossed_components", "init_share_curve"):
        with pytest.raises(Skip, match="no crossed seed design"):
            getattr(plot, name)(a)
    built, skipped = paper_tables(a)
    assert "crossed" not in {t.key for t in built} and "no crossed seed design" in skipped["crossed"]
    assert not any("dodge2020finetuning" in s.cites for para in methods_text(a, {}) for s in para)


@pytest.mark.slow
def test_the_export_table_and_the_methods_cite_the_crossed_design(crossed):
    a = load_analysis(crossed[0])
    built, _ = paper_tables(a)
    t = next(t for t in built if t.key == "crossed")
    rows = {r["pipeline"]: r for r in csv.DictReader(to_csv(t).splitlines())}
    assert set(rows) == set(PIPES)
    r = rows[XSS]
    assert r["draw_verdict"] == "keeps its draw" and r["scale_verdict"] == "remembers"
    assert float(r["sd_init"]) == pytest.approx(1.23) and float(r["sd_init_q05"]) == pytest.approx(0.81)
    assert float(r["init_share"]) == pytest.approx(0.83) and float(r["p_sd_init_gt_margin"]) == pytest.approx(0.987)
    cites = {c for para in methods_text(a, {}) for s in para for c in s.cites}
    assert {"dodge2020finetuning", "graybill1980mls", "burdick1992variance"} <= cites <= set(REFERENCES)


@pytest.mark.slow
def test_without_a_margin_there_is_no_draw_verdict_and_nothing_breaks(crossed):
    """A metric other than an accuracy without --draw-margin: the block has no margin and no verdicts."""
    from initmem.plot.core import description
    from initmem.reports import tables
    from initmem.reports.text import crossed_sentence

    a = load_analysis(crossed[0])
    a.summary.crossed.margin = None
    for e in a.summary.crossed.pipelines.values():
        e.draw_verdict = None
    assert "no draw verdict, since no margin" in crossed_sentence(a)
    assert [r["draw_verdict"] for r in tables.crossed_rows(a)] == [None, None]
    t = next(t for t in paper_tables(a)[0] if t.key == "crossed")
    assert "no draw verdict" in t.caption
    assert "No margin was set" in description(plot.crossed_components(a)).caption

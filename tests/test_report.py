"""The HTML report: sections, escaping, partial analyses, failures, self-containment (no browser)."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import stat
from html.parser import HTMLParser
from pathlib import Path

import pytest

from initmem import cube as C
from initmem import names as N
from initmem import results as R
from initmem.errors import UserError
from initmem.plot.load import load_analysis
from initmem.reports import svg as S
from initmem.reports.html import build_report, render_html
from initmem.reports.text import collapse_sentence
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._report_fixture import edge_cube, small_cube, write_analysis

XSS = "<script>alert(1)</script>"
GRID_YAML = """name: tiny
dataset: {name: digits, val_fraction: 0.2, split_seed: 0, augment: none}
model: {arch: resnet_tiny, width: 8, norm: batch}
init: {scheme: kaiming_normal, scale: all_kernels}
sigma_w: [0.25, 1.0, 4.0, 8.0]
seeds: [0, 1, 2]
pipelines:
  remembering: {optimizer: sgd, lr: 0.01, batch_size: 32, epochs: 8}
  forgetting: {optimizer: adam, lr: 0.02, batch_size: 32, epochs: 8}
  edge: {optimizer: sgd, lr: 0.03, batch_size: 32, epochs: 8}
eval: {interp_threshold: 0.995, select: best_val_acc}
"""


class Doc(HTMLParser):
    """Collects what the tests look at: tags with attributes, figures, summary-table pipelines."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.stack: list[str] = []
        self.figures = 0
        self.captions: list[str] = []
        self.svg_titles: list[str] = []
        self.summary_names: list[str] = []
        self.section_ids: list[str] = []
        self._text: list[str] | None = None
        self._in_summary = False
        self._cap = False
        self._title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "section" and a.get("id"):
            self.section_ids.append(a["id"])
        if tag == "figure":
            self.figures += 1
        if tag == "figcaption":
            self._cap, self._text = True, []
        if tag == "title" and "svg" in self.stack:
            self._title, self._text = True, []
        if tag == "table" and a.get("id") == "summary-table":
            self._in_summary = True
        if tag == "th" and self._in_summary and a.get("scope") == "row":
            self._text = []
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        if tag == "figcaption" and self._cap:
            self.captions.append("".join(self._text or []))
            self._cap, self._text = False, None
        elif tag == "title" and self._title:
            self.svg_titles.append("".join(self._text or []))
            self._title, self._text = False, None
        elif tag == "th" and self._in_summary and self._text is not None:
            self.summary_names.append("".join(self._text).strip())
            self._text = None
        elif tag == "table":
            self._in_summary = False

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def parse(text: str) -> Doc:
    d = Doc()
    d.feed(text)
    return d


PIPES = ["remembering", "forgetting", "edge"]


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> tuple[Path, str, R.Summary, R.CollapseResult]:
    """Three pipelines exercising every summary/2 and collapse/2 field (see _report_fixture.edge_cube)."""
    from initmem.stats.radial import radial_verdicts

    root = tmp_path_factory.mktemp("full")
    ds = edge_cube(GRID_YAML)
    radial = radial_verdicts(ds)

    def with_radial(s: R.Summary) -> None:   # attached as initmem analyze attaches them
        for p, r in radial.items():
            s.pipelines[p].radial = R.RadialVerdict.model_validate(r)

    analysis = write_analysis(ds, root, edit=with_radial,
                              verdicts={"remembering": "remembers", "forgetting": "forgets",
                                        "edge": "undecided (borderline)"})
    out = build_report(analysis, root / "report.html", command="initmem report analysis")
    return out, out.read_text(encoding="utf-8"), R.load_summary(analysis), R.load_collapse(analysis)


@pytest.fixture(scope="module")
def full_report(full) -> tuple[Path, str]:
    return full[0], full[1]


def _section(text: str, start: str, end: str) -> str:
    """From the first ``start`` to the first ``end`` after it."""
    i = text.index(start)
    return text[i:text.index(end, i)]


@pytest.mark.slow
def test_full_report_has_every_section_and_figure(full_report):
    path, text = full_report
    doc = parse(text)
    for sec in ("summary", "metric", "variance", "training", "radial", "clocks", "frequentist", "diagnostics",
                "settings", "methods", "provenance"):
        assert f"sec-{sec}" in doc.section_ids
    # metric, shares, forest, training curves, tau, kernel norms, rho, clocks, forgetting times,
    # forgetting time against the dose, curves side by side (epochs | best clock), predictive checks
    assert doc.figures == 12
    assert len(doc.captions) == 12 and all(len(c) > 40 for c in doc.captions)
    assert len(doc.svg_titles) == 12 and all(len(t) > 20 for t in doc.svg_titles)
    assert doc.summary_names == PIPES
    assert "Section skipped" not in text
    # Clean sampler diagnostics: the only red banner entry is edge's divergence warning.
    banner = _section(text, 'class="alert alert-fail"', "</section>")
    assert banner.count("<li>") == 1 and "edge: 3 run(s) diverged, at sigma_w 8.0" in banner


@pytest.mark.slow
def test_pipeline_settings_section_lists_how_each_pipeline_trained(full_report):
    """The section from the report-section table: one row per pipeline, numbered before Methods."""
    text = full_report[1]
    sec = _section(text, 'id="sec-settings"', "</section>")
    assert "<h2>9. Pipeline settings</h2>" in sec and "<h2>10. Methods</h2>" in text
    rows = re.findall(r'<tr>\s*<th scope="row" class="pipeline" data-sort="(\w+)">.*?</tr>', sec, re.S)
    assert rows == PIPES
    cells = {name: re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
             for name, row in zip(rows, re.findall(r'<tr>\s*<th scope="row".*?</tr>', sec, re.S), strict=True)}
    assert cells["remembering"][:2] == ["SGD", "0.01"] and cells["forgetting"][:2] == ["Adam", "0.02"]
    assert cells["edge"][-1] == "9 / 12" and cells["remembering"][-1] == "12 / 12"  # edge diverged at the top sigma_w


@pytest.mark.slow
def test_verdicts_are_badges_matching_the_summary(full_report):
    _, text = full_report
    assert re.search(r'<th scope="row" class="pipeline" data-sort="remembering">remembering</th>\s*'
                     r'<td class="badge-cell" data-sort="remembers"><span class="badge badge-remembers">', text)
    assert re.search(r'data-sort="forgetting">forgetting</th>\s*<td class="badge-cell" data-sort="forgets">'
                     r'<span class="badge badge-forgets">', text)
    # borderline is a flag on an undecided verdict, shown beside its badge
    assert re.search(r'data-sort="edge">edge</th>\s*<td class="badge-cell" data-sort="undecided">'
                     r'<span class="badge badge-undecided">undecided</span> <span class="tag">borderline</span>', text)


def _header(text: str) -> str:
    return _section(text, '<header class="top">', "</header>")


@pytest.mark.slow
def test_the_top_is_one_sentence_and_the_verdict_table(full):
    """The report opens with one sentence (the verdicts, against what) and a table: pipeline, verdict, spread in
    points with its 90% interval, radial verdict; clocks and collapse are in their own section, not up here."""
    _, text, summary, _ = full
    header = _header(text)
    sentence = html.unescape(re.search(r'<p class="headline">(.*?)</p>', header, re.S).group(1))
    assert sentence == ("remembering remembers the initialization; forgetting forgets it (memory below δ); "
                        "edge (borderline) is undecided (spread of the expected selected_test_acc over σ_w, "
                        "against δ = 1 point).")
    table = _section(header, '<table id="headline-table"', "</table>")
    heads = [html.unescape(h) for h in re.findall(r'<th scope="col"[^>]*>(.*?)</th>', table)]
    assert heads == ["Pipeline", "Verdict (δ = 1 point)", "Spread (points) [90%]", "Error ratio (extreme σ_w)",
                     "Radial verdict (kernel-norm slope [90%])"]
    rows = re.findall(r'<tr>\s*<th scope="row" class="pipeline">(.*?)</th>(.*?)</tr>', table, re.S)
    assert [name for name, _ in rows] == PIPES
    for name, cells in rows:
        info = summary.pipelines[name]
        sp = info.spread
        assert f'badge-{info.verdict}">{info.verdict}</span>' in cells
        assert ('<span class="tag">borderline</span>' in cells) == bool(info.borderline)
        assert f'{100 * sp.median:.1f} <span class="ci">[{100 * sp.q05:.1f}, {100 * sp.q95:.1f}]</span>' in cells
        assert f'{info.radial.verdict} <span class="ci">slope {info.radial.slope:.2f}' in cells
    n_int = sum(summary.pipelines[p].interpolation.n_interpolated for p in PIPES)
    n_all = sum(summary.pipelines[p].interpolation.n_cells for p in PIPES)
    assert f"{n_int} of {n_all} runs interpolated; the verdicts use only those" in header
    # the collapse test and the forgetting times are in the clocks section only
    for word in ("collapse", "seed-noise floor", "Holm", "T_sgd", "forgetting time"):
        assert word not in header, word
    clocks = _section(text, 'id="sec-clocks"', "</section>")
    assert '<p class="verdict-line"><strong>Verdict:' in clocks and "Forgetting times:" in clocks
    assert "Collapse test:" not in _section(text, 'id="sec-summary"', "</section>")


@pytest.mark.slow
def test_interpolation_is_reported_before_the_verdicts(full):
    _, text, summary, _ = full
    runs = _section(text, 'id="runs-analysed"', 'id="verdicts"')
    assert text.index('id="runs-analysed"') < text.index('id="summary-table"')
    assert "gate: interpolated" in runs
    edge = summary.pipelines["edge"].interpolation
    assert edge.levels_without_interpolation == [0.25] and edge.by_sigma_w["0.25"] == 0
    # 12 cells; 3 diverged at sigma_w 8 and 3 without interpolation at 0.25 leave 6
    assert (edge.n_cells, edge.n_interpolated) == (9, 6)
    assert "σ_w levels without any interpolating run were left out: edge (0.25)." in runs
    row = runs[runs.index('data-sort="edge">edge</th>'):]
    row = row[:row.index("</tr>")]
    assert "6 / 9" in row and '<span class="bad">0.25: 0</span>' in row and "(left out)" in row
    assert "12 / 12" in runs  # remembering and forgetting: every cell interpolated


@pytest.mark.slow
def test_verdict_quality_borderline_mcse_prior_likelihood_estimand(full):
    _, text, summary, _ = full
    table = _section(text, 'id="verdict-table"', "</table>")
    edge = summary.pipelines["edge"]
    row = table[table.index('data-sort="edge">edge</th>'):]
    row = row[:row.index("</tr>")]
    assert edge.borderline and edge.verdict == N.UNDECIDED
    # the Monte Carlo errors are in Diagnostics, at three significant digits; the firmness table has none
    assert "MCSE" not in table
    mcse = _section(_section(text, 'id="sec-diagnostics"', "</section>"), 'id="mcse-table"', "</table>")
    mrow = mcse[mcse.index('data-sort="edge">edge</th>'):]
    mrow = mrow[:mrow.index("</tr>")]
    assert (f"{edge.p_spread_gt_delta:#.3g} <span class=\"ci\">± {edge.mcse.p_spread_gt_delta:#.3g}</span>"
            in mrow)
    assert '<span class="tag">borderline</span>' in mrow and '<tr class="borderline">' in mcse
    # one second prior for every pipeline: named once above the table, not in each row
    assert html.escape(edge.prior_sensitivity.prior) not in row
    assert html.escape(edge.prior_sensitivity.prior) in _section(text, 'id="verdict-quality"', "</table>")
    assert f"badge-{edge.prior_sensitivity.verdict}" in row
    assert ">counts<" in row
    assert '<span class="bad divergence-warning">' in row and "p = 0.049" in row
    assert f"badge-{edge.divergence.sensitivity.verdict}" in row and "counted at chance accuracy" in row
    assert html.escape(edge.estimand) in text and "<strong>Estimand:</strong>" in text
    assert '<tr class="borderline">' in table


@pytest.mark.slow
def test_collapse_shows_adjusted_p_and_the_unattainable_significance(full):
    _, text, _, collapse = full
    clocks = _section(text, 'id="sec-clocks"', 'id="sec-frequentist"')
    assert collapse.adjustment == "holm" and "Holm's step-down correction" in clocks
    assert collapse.min_p_possible == 0.25
    assert "With 3 pipelines no verdict can be significant: the smallest attainable p-value is 0.25" in clocks
    t_sgd = collapse.vs_epoch[C.T_SGD]
    row = clocks[clocks.index(f'data-sort="{C.T_SGD}">{C.T_SGD}'):]
    row = row[:row.index("</tr>")]
    assert f"{t_sgd.p_adjusted:.2f}" in row and "p adjusted" in clocks
    sentence = collapse_sentence(load_analysis(full[0].parent / "analysis"))
    assert f"adjusted p = {t_sgd.p_adjusted:.2f} (Holm's correction over the clocks tried)" in sentence


@pytest.mark.slow
def test_forgetting_times_figure_marks_censored_pipelines(full):
    _, text, summary, collapse = full
    fig = _section(text, 'id="fig-forgetting-times"', "</figure>")
    assert "censored" in fig and "lower bound" in fig
    ft = collapse.forgetting_times[C.T_SGD]
    assert ft.per_pipeline["remembering"].censored and ft.n_censored == 1
    assert not ft.per_pipeline["forgetting"].censored
    # analysis copies each pipeline's times into its summary entry
    assert summary.pipelines["forgetting"].forgetting_time[C.T_SGD] == ft.per_pipeline["forgetting"]
    assert f"{len(collapse.forgetting_times)} panels of forgetting times for 3 pipelines; " \
           f"{len(collapse.forgetting_times)} censored entries" in fig


@pytest.mark.slow
def test_clock_figures_show_pipelines_the_memory_model_skipped(full):
    """The collapse test runs on every pipeline with curves, the memory model only on those it could
    fit (the clocks preset's constant-rate L2 runs never interpolate): the clock figures follow the test."""
    from dataclasses import replace

    from initmem.plot.curves import curve_pipelines
    from initmem.reports.figures import report_figure

    a = load_analysis(full[0].parent / "analysis")
    kept = {k: v for k, v in a.summary.pipelines.items() if k != "remembering"}
    b = replace(a, summary=a.summary.model_copy(update={"pipelines": kept}))
    assert b.pipelines == ["forgetting", "edge"] and curve_pipelines(b) == ["forgetting", "edge", "remembering"]
    assert "for 3 pipelines" in report_figure("clock_panels", b).alt
    assert "for 3 pipelines" in report_figure("forgetting_times", b).alt
    side_by_side_paths = [report_figure("curves_side_by_side", x).svg.count("<path") for x in (b, a)]
    assert side_by_side_paths[0] >= side_by_side_paths[1]


@pytest.mark.slow
def test_report_is_self_contained(full_report):
    _, text = full_report
    doc = parse(text)
    for tag, attrs in doc.tags:
        assert "src" not in attrs, (tag, attrs)
        href = attrs.get("href") or attrs.get("xlink:href")
        if href is not None:
            assert href.startswith("#") or href == "data:,", (tag, href)
        assert tag not in ("iframe", "object", "embed", "img", "foreignobject")
    assert "@import" not in text and "url(http" not in text
    # One script, allowed by its hash in the Content-Security-Policy; nothing else may run or load.
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.DOTALL)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp


@pytest.mark.slow
def test_figure_ids_do_not_collide(full_report):
    _, text = full_report
    ids = re.findall(r'\bid="([^"]+)"', text)
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup


@pytest.mark.slow
def test_methods_and_provenance_come_from_the_grid(full_report):
    _, text = full_report
    methods = text[text.index('id="sec-methods"'):text.index('id="sec-provenance"')]
    assert "resnet_tiny" in methods and "digits" in methods
    assert "{0.25, 1, 4, 8} (4 levels), each with 3 seeds" in methods
    # the grid is read through grid.Grid: every field explicit, as in a collected cube's canonical grid
    assert "remembering (SGD, lr 0.01, batch 32, constant schedule, 8 epochs)" in methods
    prov = text[text.index('id="sec-provenance"'):]
    assert "simulated:seed=1" in prov  # the dataset fingerprint
    assert html.escape("name: tiny") in prov and "initmem report analysis" in prov


@pytest.mark.slow
def test_pipeline_names_cannot_inject_markup(tmp_path):
    ds = small_cube(names=(XSS, "plain"), curves=True)

    def strings_from_the_analysis(s: R.Summary) -> None:  # free text of summary/2 is escaped too
        plain = s.pipelines["plain"]
        plain.prior_sensitivity.prior = plain.estimand = XSS
        plain.divergence = R.Divergence(n_diverged=1, warning=XSS)

    analysis = write_analysis(ds, tmp_path, edit=strings_from_the_analysis)
    text = render_html(load_analysis(analysis))
    assert text.count(html.escape(XSS, quote=False)) >= 4
    assert XSS not in text
    assert "<script>alert" not in text.lower()
    doc = parse(text)
    assert doc.summary_names == [XSS, "plain"]  # shown as text
    # matplotlib wrote the name into the SVG as escaped text, too
    assert html.escape(XSS, quote=False) in text[text.index("<svg"):]


def test_svg_check_refuses_script_and_outside_loads():
    with pytest.raises(S.UnsafeSVG):
        S.check_svg('<svg><script>alert(1)</script></svg>')
    with pytest.raises(S.UnsafeSVG):
        S.check_svg('<svg><image xlink:href="http://example.com/x.png"/></svg>')
    with pytest.raises(S.UnsafeSVG):
        S.check_svg('<svg><g onload="x()"></g></svg>')
    S.check_svg('<svg><g clip-path="url(#p1)"><use xlink:href="#m1"/><text>&lt;script&gt; onload=</text></g></svg>')


@pytest.mark.slow
def test_partial_cube_without_curves_skips_sections_with_reasons(tmp_path):
    ds = small_cube(curves=False)
    analysis = write_analysis(ds, tmp_path)
    assert not (analysis / "curves.nc").exists() and not (analysis / "collapse.json").exists()
    text = build_report(analysis).read_text()
    doc = parse(text)
    assert doc.figures == 4  # metric vs sigma_w, shares, forest, posterior predictive checks
    # absent by design: listed once at the top, "not in this input", and neither noted as a problem nor drawn
    assert ('<strong>Not in this input:</strong> Training curves, Radial memory and Forgetting clocks (the cube has '
            'no per-epoch curves).') in _header(text)
    body = text[text.index("</style>"):]
    assert 'id="notices"' not in body and "skipped" not in body
    for sec in ("training", "radial", "clocks"):
        assert f"sec-{sec}" not in doc.section_ids and f'href="#sec-{sec}"' not in text
    assert "<h2>4. Frequentist cross-checks</h2>" in text       # numbered over the sections on the page
    assert text.count("Training curves") == 1
    assert doc.summary_names == ["remembering", "forgetting"]


def test_a_sequential_designs_untrained_seeds_are_not_missing_runs(tmp_path):
    # "forgetting" was decided at the first look (2 seeds), so the design never trained its third seed; a run of
    # "remembering" (3 seeds) that is missing among its own seeds is still reported.
    from initmem.plot.load import load_analysis
    from initmem.reports.text import data_warnings

    ds = small_cube(curves=False)
    status = ds[C.STATUS].values
    status[1, :, 2] = C.MISSING
    status[0, 1, 0] = C.MISSING
    ds[C.STATUS].values[:] = status

    def sequential(s: R.Summary) -> None:
        s.sequential = R.Sequential(looks=[2, 3], seeds_used={"remembering": 3, "forgetting": 2})

    assert data_warnings(load_analysis(write_analysis(ds, tmp_path / "fixed"))) == [
        "remembering: 1 run(s) missing.", "forgetting: 4 run(s) missing."]
    assert data_warnings(load_analysis(write_analysis(ds, tmp_path / "seq", edit=sequential))) == [
        "remembering: 1 run(s) missing."]


@pytest.mark.parametrize("direction, depends, problem", [("further", False, False), ("towards", False, True),
                                                        ("across", False, True), ("further", True, True)])
def test_a_put_back_refit_that_only_adds_noise_is_a_note_not_a_problem(tmp_path, direction, depends, problem):
    # The survivorship refit changed the verdict. Red (a problem with the fit) when the lost runs depend on sigma_w
    # or move the spread towards or across delta; a note when they only move it further from delta.
    from initmem.plot.load import load_analysis
    from initmem.reports.text import data_warnings, failures

    def lost(s: R.Summary) -> None:
        s.pipelines["remembering"].missingness = R.Missingness(
            n_gated=2, by_sigma_w={"8.0": 2}, p_value=0.01 if depends else 0.4, depends_on_sigma_w=depends,
            verdict_changes=True, put_back_direction=direction, warning="2 run(s) were left out")

    a = load_analysis(write_analysis(small_cube(curves=False), tmp_path, edit=lost))
    line = "remembering: 2 run(s) were left out"
    assert (line in failures(a)) == problem
    assert (line in data_warnings(a)) == (not problem)


@pytest.mark.slow
def test_missing_cube_still_reports_from_the_summary(tmp_path):
    analysis = write_analysis(small_cube(), tmp_path)
    (tmp_path / "cube.nc").unlink()
    text = build_report(analysis).read_text()
    assert "was not found" in text
    assert parse(text).figures >= 4  # posterior band, shares, forest, rho, clocks still apply
    # without the cube the absence is a problem, not a property of the input: noted at the top, not "not in this input"
    assert "Section “Pipeline settings” skipped: the cube records no per-pipeline settings." in text
    assert "Not in this input" not in text


@pytest.mark.slow
def test_fit_failures_are_red_at_the_top(tmp_path):
    def unchecked(s: R.Summary) -> None:
        s.diagnostics.flags = None  # an analysis that did not check: the report checks the numbers itself
        s.pipelines["forgetting"].ppc["spread"].p_value = 0.004

    analysis = write_analysis(small_cube(curves=False), tmp_path, edit=unchecked,
                              diagnostics={"max_rhat": 1.08, "min_ess_bulk": 120.0, "divergences": 7})
    text = build_report(analysis).read_text()
    banner = text[text.index('class="alert alert-fail"'):text.index('id="sec-summary"')]
    assert "R-hat 1.0800 &gt; 1.01" in banner and "bulk ESS 120 &lt; 400" in banner
    assert "7 divergent transition(s)" in banner
    assert "forgetting: posterior predictive check of the spread of the level means fails (p = 0.004)" in banner
    assert text.index('class="alert alert-fail"') < text.index('id="sec-summary"')

    # The analysis' own flags (it checks every reported quantity per pipeline) are shown verbatim.
    def flagged(s: R.Summary) -> None:
        s.diagnostics.flags = ["remembering: bulk ESS 105 < 400 on a reported quantity"]
        s.diagnostics.retried = True
        s.pipelines["forgetting"].ppc["spread"].p_value = 0.004

    analysis = write_analysis(small_cube(curves=False), tmp_path / "b", edit=flagged)
    text = build_report(analysis).read_text()
    banner = text[text.index('class="alert alert-fail"'):text.index('id="sec-summary"')]
    assert "Sampler: remembering: bulk ESS 105 &lt; 400 on a reported quantity" in banner
    assert "forgetting: posterior predictive check of the spread of the level means fails" in banner
    assert "was rerun" in text[:text.index('id="sec-summary"')]


@pytest.fixture(scope="module")
def two_pipelines(tmp_path_factory) -> Path:
    return write_analysis(small_cube(), tmp_path_factory.mktemp("two"))


def _with_collapse(analysis: Path, **changes) -> R.CollapseResult:
    c = R.load_collapse(analysis)
    for k, v in changes.items():
        setattr(c, k, v)
    return c


def _sentence(analysis: Path, collapse: R.CollapseResult) -> str:
    a = load_analysis(analysis)
    a.collapse = collapse
    return collapse_sentence(a)


@pytest.mark.parametrize("verdict,needle", [
    ("clock_better", "T_sgd collapses the memory curves better than epochs (D = 0.30, 90% interval 0.05 to 0.60"),
    ("epoch_better", "Epochs collapse the memory curves better than every clock"),
    ("no_difference", "No clock collapses the memory curves detectably better than epochs"),
    ("not_identifiable", "cannot tell the clocks apart"),
])
def test_collapse_sentence(two_pipelines, verdict, needle):
    sentence = _sentence(two_pipelines, _with_collapse(two_pipelines, verdict=verdict))
    assert needle in sentence
    # 2 pipelines: the smallest two-sided sign-flip p-value is 2^(1-2) = 0.5, and the report says so
    assert "With 2 pipelines no verdict can be significant: the smallest attainable p-value is 0.5" in sentence
    # ... but only when it is above 0.05
    assert "no verdict can be significant" not in _sentence(
        two_pipelines, _with_collapse(two_pipelines, verdict=verdict, min_p_possible=0.03))


def test_bad_analysis_folders_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such analysis folder"):
        load_analysis(tmp_path / "nope")
    with pytest.raises(UserError, match="has no summary.json"):
        load_analysis(tmp_path)
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_analysis(tmp_path)
    for schema, shown in (("initmem.summary/1", "initmem.summary/1"), (None, "missing")):
        (tmp_path / "summary.json").write_text(json.dumps({"schema": schema, "pipelines": {}}))
        with pytest.raises(UserError) as exc:
            load_analysis(tmp_path)
        assert str(exc.value) == f"{tmp_path}/summary.json is schema {shown}; this initmem reads initmem.summary/2"
    # the right schema with a field of the wrong type: one line naming the field
    (tmp_path / "summary.json").write_text(json.dumps({"schema": R.SUMMARY_SCHEMA, "metric": "m", "family": "gaussian",
                                                        "delta": "big", "pipelines": {}}))
    with pytest.raises(UserError, match=r"does not match initmem.summary/2: delta: Input should be a valid number"):
        load_analysis(tmp_path)
    # an old collapse.json beside a current summary
    analysis = write_analysis(small_cube(), tmp_path / "old")
    c = json.loads((analysis / "collapse.json").read_text())
    (analysis / "collapse.json").write_text(json.dumps({**c, "schema": "initmem.collapse/1"}))
    with pytest.raises(UserError, match="collapse.json is schema initmem.collapse/1; this initmem reads "
                                        "initmem.collapse/3"):
        load_analysis(analysis)


def test_records_round_trip_and_nan_becomes_null(tmp_path):
    analysis = write_analysis(small_cube(curves=False), tmp_path,
                              edit=lambda s: setattr(s.pipelines["forgetting"].spread, "q95", float("nan")))
    raw = (analysis / "summary.json").read_text()
    assert "NaN" not in raw and json.loads(raw)["pipelines"]["forgetting"]["spread"]["q95"] is None
    s = R.load_summary(analysis)
    assert s.pipelines["forgetting"].spread.q95 is None
    R.write_summary(tmp_path / "again", s)
    assert json.loads((tmp_path / "again" / "summary.json").read_text()) == json.loads(raw)
    assert not list(tmp_path.rglob("*.initmem-tmp"))


@pytest.mark.slow
def test_cli_report(tmp_path):
    analysis = write_analysis(small_cube(curves=False), tmp_path)
    proc = invoke("report", str(analysis), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert not list(tmp_path.glob("*.initmem-tmp"))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "r.html").stat().st_mode) == 0o666 & ~umask  # shareable, not 0600
    assert_user_error(invoke("report", str(tmp_path / "missing")), "no such analysis folder")


def test_cli_run_refuses_both_grid_and_preset(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID_YAML)
    assert_user_error(invoke("run", str(grid), "--preset", "quick"), "not both")
    assert_user_error(invoke("run", str(tmp_path / "none.yaml")), "no such grid file", "--preset NAME")
    # the README's grid path, run from a folder outside the clone: the packaged grid of that name is named
    assert_user_error(invoke("run", str(tmp_path / "configs" / "quick.yaml")), "--preset quick")


@pytest.mark.slow
def test_run_all_collects_analyzes_reports_and_resumes(tmp_path):
    """The orchestration of `initmem run`: stages in order into one folder, resumable, analysis reused.

    The trainer is the collector tests' deterministic stand-in and the analysis is replaced by the
    fixture writer (both have their own tests); what is checked here is the wiring.
    """
    from initmem.analysis.run import run_all
    from initmem.cube import open_cube
    from initmem.tests._collect_fake import fake_train_pack
    from initmem.tests._collect_util import FAKE_GRID

    calls = []

    def fake_analyze(cube_path, out_dir, **kw):
        calls.append((Path(cube_path), Path(out_dir), kw))
        write_analysis(open_cube(cube_path), Path(out_dir).parent, with_curves=False, write_cube=False)

    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID)
    said: list[str] = []
    out = tmp_path / "run"
    res = run_all(grid, out, quiet=True, say=said.append, train_fn=fake_train_pack, analyze_fn=fake_analyze,
                  analyze_options={"draws": 100})
    assert res.cube == out / "cube.nc" and res.cube.is_file()
    assert res.report == out / "report.html" and "<!DOCTYPE html>" in res.report.read_text()[:20]
    assert calls == [(out / "cube.nc", out / "analysis", {"progress": False, "draws": 100})]
    assert [s[:5] for s in said if s.startswith("[")] == ["[1/3]", "[2/3]", "[3/3]"]
    timings = json.loads((out / "timings.json").read_text())
    assert set(timings["seconds"]) == {"collect", "analyze", "report"} and timings["reused"] == {"analyze": False}
    # Second run: nothing left to train, the analysis is newer than the cube and is reused.
    said.clear()
    res2 = run_all(grid, out, quiet=True, say=said.append, train_fn=fake_train_pack, analyze_fn=fake_analyze,
                   analyze_options={"draws": 100})
    assert len(calls) == 1 and res2.reused == {"analyze": True}
    assert any("reusing it" in s for s in said)
    # Other analysis options: analyze again.
    run_all(grid, out, quiet=True, say=said.append, train_fn=fake_train_pack, analyze_fn=fake_analyze,
            analyze_options={"draws": 200})
    assert len(calls) == 2
    # --reanalyze forces a new analysis.
    run_all(grid, out, quiet=True, say=said.append, train_fn=fake_train_pack, analyze_fn=fake_analyze, reanalyze=True,
            analyze_options={"draws": 200})
    assert len(calls) == 3
    # An analysis made by another version of initmem (another model) is redone, not reused.
    state_path = out / "run_state.json"
    state = json.loads(state_path.read_text())
    state_path.write_text(json.dumps({**state, "initmem": "0.0.1"}))
    run_all(grid, out, quiet=True, say=said.append, train_fn=fake_train_pack, analyze_fn=fake_analyze,
            analyze_options={"draws": 200})
    assert len(calls) == 4


@pytest.mark.slow
def test_a_figure_without_its_data_is_skipped_with_the_reason(tmp_path):
    ds = small_cube(curves=True).drop_vars([C.TAU_INTERP, C.TAU_BEST])
    text = build_report(write_analysis(ds, tmp_path)).read_text()
    assert ("<strong>Not in this input:</strong> Training curves: tau scatter (the cube has no tau_interp and "
            "tau_best).") in text
    assert "not drawn" not in text
    assert parse(text).figures == 11  # 9 + forgetting time against the dose, curves side by side


@pytest.mark.parametrize("verdict,floor,needles,absent", [
    ("clock_better", 12.5, ["T_sgd collapses the memory curves better than epochs",
                            "still 12.5 times the seed-noise floor, so the curves do not collapse within noise on "
                            "T_sgd",
                            "Read it as: T_sgd orders forgetting better than epochs, but part of forgetting follows",
                            "try the radial memory curve ("], "on any clock tried"),
    ("no_difference", 3674.4, ["still 3,674 times the seed-noise floor, so the curves do not collapse within noise "
                               "on any clock tried",
                               "none of the clocks tried collapses the curves within noise on this grid",
                               "the forgetting times below"], "is the time axis of forgetting"),
    ("no_difference", 1.3, ["1.3 times the seed-noise floor, so on T_sgd the curves collapse within noise."],
     "Read it as"),
])
def test_collapse_sentence_reads_the_noise_floor_by_verdict(two_pipelines, verdict, floor, needles, absent):
    """On curves whose noise floor informs (here the functional curve), the sentence says what the test found
    (a clock beats epochs or not; collapsed within noise or not, in the test's numbers) and what to conclude and
    try; nothing is said without a number behind it."""
    c = _with_collapse(two_pipelines, verdict=verdict, memory="functional")
    for ax, score in c.axes.items():
        if ax not in (C.EPOCH, C.STEP):
            score.floor_ratio = max(floor, 10.0) if ax != c.best else floor
    sentence = _sentence(two_pipelines, c)
    for needle in needles:
        assert needle in sentence, (needle, sentence)
    assert absent not in sentence


@pytest.mark.parametrize("verdict", ["clock_better", "no_difference"])
def test_collapse_sentence_draws_no_conclusion_from_the_paired_radial_floor(two_pipelines, verdict):
    """With seeds paired across sigma_w the radial noise floor is tiny and every axis sits far above it
    (docs/clocks-and-collapse.md, "The score"): the ratio is stated neutrally and no conclusion is drawn."""
    c = _with_collapse(two_pipelines, verdict=verdict, memory="radial")
    c.axes[c.best].floor_ratio = 2930.2
    sentence = _sentence(two_pipelines, c)
    assert ("its held-out error is 2,930 times the seed-noise floor, but with seeds paired across σ_w that floor is "
            "tiny on radial curves and every axis sits far above it, so the ratio does not say whether the curves "
            "collapse.") in sentence, sentence
    assert "Read it as" not in sentence and "time axis of forgetting" not in sentence
    assert "do not collapse within noise" not in sentence


def test_collapse_words_not_python_values(two_pipelines):
    """No 'None' or raw enum values in the prose: a missing best axis and the adjustment are words."""
    c = _with_collapse(two_pipelines, verdict="no_difference", best=None, adjustment="max_statistic")
    sentence = _sentence(two_pipelines, c)
    assert "None" not in sentence and "no_difference" not in sentence
    assert "no clock was compared with epochs" in sentence
    c = _with_collapse(two_pipelines, verdict="no_difference", adjustment="max_statistic")
    sentence = _sentence(two_pipelines, c)
    assert "max_statistic" not in sentence
    assert "Westfall-Young max-statistic correction over the clocks tried" in sentence
    from initmem.reports.text import collapse_verdict_words
    assert collapse_verdict_words("no_difference") == "no difference"


SEQUENTIAL_RULE = ("remembers if P(spread > delta) >= 0.9634 and the seeds' paired differences carry it (ordered test: "
                   "the extreme sigma_w pair first, then the other pairs, at alpha = 0.03659; models/paired.py); "
                   "forgets if P(spread < delta) >= 0.9817 (1 - alpha/2, with at least 3 sigma_w levels) or every "
                   "pair of levels is shown inside +-delta by the seeds' paired differences (intersection-union test "
                   "at 0.8 alpha = 0.02927; the two routes share alpha); else inconclusive")


@pytest.mark.slow
def test_thresholds_come_from_the_verdict_rule(tmp_path):
    """A sequential run decides at a smaller alpha: the report, the figure caption and Methods say its thresholds."""
    from initmem.plot.load import verdict_levels
    from initmem.plot.model import spread_forest
    from initmem.reports.methods import methods_paragraphs

    def sequential(s: R.Summary) -> None:     # an analysis written before alpha was stored: the rule's text alone
        s.verdict_rule, s.alpha = SEQUENTIAL_RULE, None

    a = load_analysis(write_analysis(small_cube(), tmp_path, edit=sequential))
    lv = verdict_levels(a)
    assert (lv.alpha, lv.remembers, lv.forgets, lv.iut_alpha) == (0.03659, 0.9634, 0.9817, 0.02927)
    text = html.unescape(render_html(a))
    diag = text[text.index('id="sec-diagnostics"'):text.index('id="sec-settings"')]
    assert "(0.963 for P(spread > δ), 0.982 for P(spread < δ) at α = 0.0366)" in diag   # three significant digits
    assert "0.975 for P(spread < δ)" not in text
    caption = spread_forest(a).initmem_description.caption
    assert "P(spread > δ) ≥ 0.9634" in caption and "P(spread < δ) ≥ 0.9817" in caption and "0.95" not in caption
    methods = " ".join(methods_paragraphs(a, {}))
    assert "P(spread > delta) >= 0.9634" in methods and "P(spread < delta) >= 0.9817" in methods
    assert "(0.9634 or 0.9817)" in methods and "alpha = 0.03659" in methods


def test_thresholds_come_from_the_stored_alpha(tmp_path):
    """summary.json's alpha, where an analysis stores it, gives the thresholds without reading the rule's text."""
    from initmem.plot.load import verdict_levels

    def stored(s: R.Summary) -> None:
        s.alpha, s.verdict_rule = 0.03659, ""

    lv = verdict_levels(load_analysis(write_analysis(small_cube(), tmp_path, edit=stored)))
    assert lv.alpha == 0.03659 and lv.remembers == pytest.approx(1 - 0.03659)
    assert lv.forgets == pytest.approx(1 - 0.03659 / 2) and lv.iut_alpha == pytest.approx(0.8 * 0.03659)


@pytest.mark.slow
def test_default_thresholds_at_alpha_005(two_pipelines):
    from initmem.plot.model import spread_forest

    a = load_analysis(two_pipelines)
    caption = spread_forest(a).initmem_description.caption
    # "remembers" rests on the ordered test with the model agreeing (P >= 1/2); "forgets" on the model at 0.975
    assert "agrees (P(spread > δ) ≥ 0.5)" in caption and "P(spread < δ) ≥ 0.975" in caption
    text = html.unescape(render_html(a))
    assert "(0.5 for P(spread > δ), 0.975 for P(spread < δ) at α = 0.05)" in text[text.index('id="mcse"'):]


@pytest.mark.slow
def test_independent_seeds_methods_describe_the_fitted_model(tmp_path):
    """With independent seeds the model has no v[seed] and no b[seed]: Methods and the assumptions say so."""
    from initmem.reports.methods import methods_paragraphs

    ds = small_cube()
    ds.attrs[C.A_SEED_DESIGN] = C.SEED_INDEPENDENT
    a = load_analysis(write_analysis(ds, tmp_path))
    methods = " ".join(methods_paragraphs(a, {}))
    assert "y = alpha + u[sigma_w] + e per pipeline" in methods
    assert "v[seed] +" not in methods and "b[seed] x" not in methods and "its own drift" not in methods
    assert "no v[seed] and no b[seed]" in methods
    text = html.unescape(render_html(a))
    diag = text[text.index('id="sec-diagnostics"'):text.index('id="sec-settings"')]
    assert "each seed has its own intercept" not in diag
    assert "the seeds are independent across σ_w, so there is no seed effect and no per-seed drift" in diag
    assert "SD of seed-number means (seeds independent)" in diag


@pytest.mark.slow
def test_small_text_defects(two_pipelines):
    from initmem.reports.methods import methods_paragraphs
    from initmem.reports.text import fmt_median

    assert fmt_median(28.5) == "28.5" and fmt_median(28.0) == "28"
    a = load_analysis(two_pipelines)
    a.summary.estimand = "max - min over the sigma_w grid of the expected accuracy, as a fraction"
    a.summary.delta = 0.01
    methods = " ".join(methods_paragraphs(a, {}))
    assert "as a fraction. A pipeline remembers" in methods
    assert "delta = 1 accuracy point." in methods and "1 accuracy points" not in methods
    text = html.unescape(render_html(a))
    assert "δ = 1 points" not in text and "δ = 1.0 points" not in text

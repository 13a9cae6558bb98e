"""``initmem export`` and ``initmem.plot``: every report figure as files, tables, methods, references, reproduction.

One analysis folder with known contents (tests/_report_fixture.py) whose pipeline names carry
LaTeX's special characters, exported once through the command line; each test reads what it needs.
"""

from __future__ import annotations

import csv
import hashlib
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html import unescape
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from initmem import plot
from initmem.errors import UserError
from initmem.plot.load import load_analysis
from initmem.reports import sections
from initmem.reports.html import render_html, report_versions
from initmem.reports.methods import methods_paragraphs
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._report_fixture import small_cube, write_analysis

PIPES = ("sgd_lr_0.1", "adam_w_d", "plain.50")  # a grid allows letters, digits, _ . -
GRID_YAML = """name: tex_names
dataset: {name: digits, val_fraction: 0.2, split_seed: 0, augment: none}
model: {arch: resnet_tiny, width: 8, norm: batch}
init: {scheme: kaiming_normal, scale: all_kernels}
sigma_w: [0.25, 1.0, 4.0, 8.0]
seeds: [0, 1, 2]
pipelines:
  "sgd_lr_0.1": {optimizer: sgd, lr: 0.01, batch_size: 32, epochs: 8}
  "adam_w_d": {optimizer: adam, lr: 0.02, batch_size: 32, epochs: 8}
  "plain.50": {optimizer: sgd, lr: 0.03, batch_size: 32, epochs: 8}
eval: {interp_threshold: 0.995, select: best_val_acc}
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    analysis = write_analysis(small_cube(PIPES, grid_yaml=GRID_YAML), root)
    out = root / "paper"
    proc = invoke("export", analysis, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return analysis, out


@pytest.fixture(scope="module")
def report_html(exported) -> str:
    return render_html(load_analysis(exported[0]))


def _figure_names() -> list[str]:
    return [name for sec in sections.SECTIONS for name in sec.figures]


@pytest.mark.slow
def test_every_report_figure_in_every_format_with_its_caption(exported, report_html):
    _, out = exported
    html = report_html
    shown = set(re.findall(r'<figure id="fig-([^"]+)"', html))
    written = {p.stem for p in (out / "figures").glob("*.txt")}
    assert shown and written == shown  # the figures the report shows, no more, no fewer
    index = (out / "index.md").read_text()
    for name in _figure_names():  # drawn, or skipped with the reason the report gives too
        assert getattr(plot, name).figure_key in written or f"figure {name}: " in index, name
    page = unescape(html)
    for key in written:
        caption = (out / "figures" / f"{key}.txt").read_text().split("\n\nAlt text:")[0].strip()
        assert caption and caption in page, key  # the report's own caption
        for fmt in ("pdf", "svg", "png"):
            assert (out / "figures" / f"{key}.{fmt}").is_file(), (key, fmt)


@pytest.mark.slow
def test_pdfs_are_valid_and_sized_for_one_column(exported):
    from pypdf import PdfReader

    _, out = exported
    pdfs = sorted((out / "figures").glob("*.pdf"))
    assert len(pdfs) >= 10
    for path in pdfs:
        reader = PdfReader(path)
        assert len(reader.pages) == 1
        box = reader.pages[0].mediabox
        assert 2.5 * 72 < float(box.width) <= 3.8 * 72, (path.name, float(box.width) / 72)
    svg = ET.parse(out / "figures" / "spread-forest.svg").getroot()
    assert svg.tag.endswith("svg")
    png = (out / "figures" / "spread-forest.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def _tables(out: Path, ext: str) -> dict[str, str]:
    return {p.stem: p.read_text() for p in sorted((out / "tables").glob(f"*.{ext}"))}


@pytest.mark.slow
def test_tables_in_latex_csv_and_markdown(exported):
    analysis, out = exported
    a = load_analysis(analysis)
    tex, md, csvs = _tables(out, "tex"), _tables(out, "md"), _tables(out, "csv")
    assert set(tex) == set(md) == set(csvs) >= {"verdicts", "variance", "interpolation", "collapse", "forgetting_times"}
    assert "table exponents: " in (out / "index.md").read_text()  # what the folder lacks, with the reason
    rows = list(csv.DictReader(csvs["verdicts"].splitlines()))
    assert [r["pipeline"] for r in rows] == list(PIPES)
    for r in rows:  # numbers, in the report's units (points), equal to summary.json's
        info = a.pipe(r["pipeline"])
        assert float(r["spread"]) == pytest.approx(info.spread.median * a.scale)
        assert float(r["spread_q05"]) == pytest.approx(info.spread.q05 * a.scale)
        assert r["verdict"] == info.verdict
    assert "| sgd_lr_0.1 |" in md["verdicts"] and md["verdicts"].startswith("Table: ")

    if shutil.which("pdflatex"):
        doc = out / "tables" / "all.tex"
        doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\usepackage[T1]{fontenc}\\begin{document}\n"
                       + "".join(f"\\input{{{k}.tex}}\n\\clearpage\n" for k in tex) + "\\end{document}\n")
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"],
                              cwd=doc.parent, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-2000:]
    for key, text in tex.items():  # structurally, whether or not a TeX engine is at hand
        body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("%"))
        begins, ends = re.findall(r"\\begin\{(\w+)\}", body), re.findall(r"\\end\{(\w+)\}", body)
        assert begins == ends[::-1] == ["table", "tabular"], key
        assert all(w in body for w in ("\\toprule", "\\midrule", "\\bottomrule")), key
        caption = re.sub(r"\$\\\w+\$", "", re.search(r"\\caption\{(.*)\}$", body, flags=re.M).group(1))
        assert not re.search(r"(?<!\\)[_&%$#]", caption), (key, caption)
        rows = [ln for ln in body.splitlines() if ln.rstrip().endswith("\\\\")]
        assert len({len(re.findall(r"(?<!\\)&", ln)) for ln in rows}) == 1, key  # every row has every column
        for ln in rows:
            assert not re.search(r"(?<!\\)[_%$#]", re.sub(r"\$\\\w+\$", "", ln)), (key, ln)
    assert "sgd\\_lr\\_0.1" in tex["verdicts"] and "adam\\_w\\_d" in tex["verdicts"]


def test_latex_escapes_what_an_imported_pipeline_name_may_hold():
    from initmem.reports.paper_tables import Column, Interval, Table, latex_escape, to_latex

    name = "[x]_a&b%c$d#e{f}~g^h\\i|j<k>"
    t = Table("t", "caption with σ_w and δ", [Column("p", "Pipeline"), Column("v", "Spread")],
              [[name, Interval(1.0, 0.5, 1.5)]])
    text = to_latex(t)
    row = next(ln for ln in text.splitlines() if ln.startswith("{}"))  # "{}": a leading "[" is no option
    assert row == "{}" + latex_escape(name) + " & 1.00 [0.50, 1.50] \\\\"
    assert not re.search(r"(?<!\\)[_&%$#^~]", latex_escape(name).replace("{}", ""))
    assert "$\\sigma$\\_w" in text and "$\\delta$" in text


@pytest.mark.slow
def test_methods_share_the_reports_sentences_and_cite_what_the_bib_holds(exported):
    analysis, out = exported
    a = load_analysis(analysis)
    bib = (out / "references.bib").read_text()
    entries = set(re.findall(r"@\w+\{([^,\s]+),", bib))
    tex = (out / "methods.tex").read_text()
    cited = {k.strip() for group in re.findall(r"\\cite\{([^}]*)\}", tex) for k in group.split(",")}
    assert cited and cited <= entries
    assert {"forgetinit2026", "abril2023pymc", "seyboldt2024nutpie", "kumar2019arviz", "greenhouse1959",
            "schuirmann1987tost", "berger1982iut"} <= entries
    assert "2605.29152" in bib
    md = (out / "methods.md").read_text()
    assert {k for k in re.findall(r"@([\w.-]+)", md.split("-->", 1)[1])} <= entries
    # the same sentences as the report's Methods section, citations aside
    plain = re.sub(r" \[@[^\]]+\]", "", md.split("-->", 1)[1]).strip().split("\n\n")
    assert plain == methods_paragraphs(a, report_versions())
    assert "\\_" in tex and "sigma_w" not in tex.replace("sigma\\_w", "")


@pytest.mark.slow
def test_reproduce_block_names_versions_hashes_and_commands(exported):
    analysis, out = exported
    text = (out / "reproduce.md").read_text()
    cube_file = analysis.parent / "cube.nc"
    assert hashlib.sha256(cube_file.read_bytes()).hexdigest() in text
    assert "pyproject.toml" in text and "installed distributions" in text
    assert "grid `tex_names`: hash `" in text and (out / "grid.yaml").is_file()
    assert "initmem analyze" in text and "initmem run grid.yaml" in text
    assert f"initmem export {analysis} --out {out} --format pdf,svg,png --width single" in text


@pytest.mark.slow
def test_bad_input_is_one_line(tmp_path, exported):
    analysis, _ = exported
    (tmp_path / "empty").mkdir()
    assert_user_error(invoke("export", tmp_path / "empty", "--out", tmp_path / "o1"), "summary.json")
    assert_user_error(invoke("export", analysis, "--out", tmp_path / "o2", "--format", "pdf,gif"),
                      "unknown figure format gif", "--format")
    assert_user_error(invoke("export", analysis, "--out", tmp_path / "o3", "--width", "triple"), "--width")
    assert not any((tmp_path / d).exists() for d in ("o1", "o2", "o3"))


@pytest.mark.slow
def test_the_report_embeds_what_the_plot_functions_return(exported, monkeypatch):
    """Replace one public figure function (the others skip, to keep this fast): the report and export
    both show the replacement, so neither draws a figure of its own."""
    analysis, out = exported

    def marked(a, *, width=None, ax=None):
        from initmem.plot.core import Description

        fig, axes = plt.subplots(figsize=(width or 4, 2))
        axes.set_title("MARKER-7f3a")
        fig.initmem_description = Description("variance-shares", "replaced caption", "replaced alt")
        return fig

    def skip(a, *, width=None, ax=None):
        raise plot.Skip("skipped in this test")

    for name in _figure_names():
        monkeypatch.setattr(plot, name, marked if name == "variance_shares" else skip)
    html = render_html(load_analysis(analysis))
    assert "MARKER-7f3a" in html and "replaced caption" in html
    assert html.count("<figure ") == 1
    proc = invoke("export", analysis, "--out", out.parent / "patched", "--format", "svg")
    assert proc.returncode == 0, proc.stderr
    assert "MARKER-7f3a" in (out.parent / "patched" / "figures" / "variance-shares.svg").read_text()


@pytest.mark.slow
def test_plot_functions_take_a_path_or_an_analysis_style_and_ax(exported):
    analysis, _ = exported
    with plot.style():
        fig = plot.spread_forest(analysis, width=plot.WIDTHS["single"])
        assert plt.rcParams["font.size"] == 7 and plt.rcParams["pdf.fonttype"] == 42
    assert fig.get_size_inches()[0] == pytest.approx(3.5)
    assert plot.description(fig).key == "spread-forest" and "δ" in plot.description(fig).caption
    plt.close(fig)
    fig, ax = plt.subplots()
    assert plot.variance_shares(load_analysis(analysis), ax=ax) is fig and ax.get_xlabel()
    plt.close(fig)
    with pytest.raises(UserError, match="several panels"):
        plot.metric_vs_sigma(analysis, ax=ax)
    with pytest.raises(UserError, match="no such analysis folder"):
        plot.metric_vs_sigma(analysis / "nope")


@pytest.mark.slow
def test_the_header_says_what_the_model_does(report_html):
    meta = re.search(r'<p class="meta">(.*?)</p>', report_html, flags=re.S).group(1)
    assert "family" not in meta and "Gaussian likelihood, noise scale from the binomial bound" in meta


def test_paper_table_numbers_keep_their_digits():
    """p-values are never '0.000', small times keep significant digits, censored lower bounds round down."""
    from initmem.reports.paper_tables import Interval, cell_text, lower_bound_text

    assert cell_text(4.5e-4, 3, "p") == "<0.001" and cell_text(0.0045, 3, "p") == "0.0045"
    assert cell_text(0.703, 3, "p") == "0.703"
    assert cell_text(2.2e-4, 3, "sig") == "0.000220"
    assert cell_text(Interval(10.276, 10.3, 10.5), 3, "sig") == "10.3 [10.3, 10.5]"
    assert lower_bound_text(103.5) == "> 103" and lower_bound_text(30.0) == "> 30.0"
    assert lower_bound_text(1.5e-6) == "> 1.50e-06" and lower_bound_text(2.3456e-5) == "> 2.34e-05"  # rounded down


def test_verdict_table_says_which_route_decided(tmp_path):
    from initmem.plot.load import load_analysis
    from initmem.reports.paper_tables import to_markdown, verdict_table
    from initmem.tests._report_fixture import small_cube, write_analysis

    t = verdict_table(load_analysis(write_analysis(small_cube(), tmp_path)))
    names = [c.name for c in t.columns]
    assert "iut_p" in names and "decided_by" in names
    assert "the route that decided the verdict" in t.caption
    assert "delta = 1 point," in t.caption
    assert "| IUT p | Decided by |" in to_markdown(t)

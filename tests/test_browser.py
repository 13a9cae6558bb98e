"""The HTML report in a real browser (Debian's headless Chromium through playwright).

A small real run: a simulated cube (with a pipeline named like a script tag) is analysed by
``initmem analyze`` with few draws, and the report is opened from a localhost server. The page
must render every figure, log no console error, request nothing but itself, list every pipeline,
sort its tables, print to PDF, and show the script-tag name as text; at 1300 x 900 its first screen holds the
verdict table. Under CI=true these tests never skip: a missing Chromium or playwright is a failure.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from initmem import results as R
from initmem.models.designs import SMALL

pytestmark = [pytest.mark.browser, pytest.mark.slow]

XSS = "<script>alert(1)</script>"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(why: str):
    if IN_CI:
        pytest.fail(f"browser test cannot run under CI=true: {why}")
    pytest.skip(why)


def chromium_path() -> str:
    for cand in (os.environ.get("INITMEM_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if cand and Path(cand).exists():
            return cand
    _unavailable("no chromium executable (apt-get install chromium)")
    raise AssertionError  # unreachable


def make_real_run(root: Path, names: tuple[str, ...]) -> Path:
    """Simulated cube -> real analysis (few draws) -> analysis folder."""
    from initmem import cube
    from initmem.simulate import SimPipeline, simulate_cube

    specs = [
        SimPipeline(names[0], sigma_sd=0.6, n_sigma=4, n_seed=3, optimizer="sgd", lr=0.01, batch_size=32),
        SimPipeline(names[1], sigma_sd=0.0, n_sigma=4, n_seed=3, optimizer="adam", lr=1e-3, batch_size=32),
        SimPipeline(names[2], sigma_sd=0.05, n_sigma=4, n_seed=3, optimizer="sgd", lr=0.1, batch_size=64,
                    weight_decay=5e-4, momentum=0.9, schedule="cosine"),
    ]
    ds = simulate_cube(specs, curves=True, epochs=10, seed=3)
    cube_path = cube.write_cube(ds, root / R.CUBE_NC)
    analysis = root / R.RUN_ANALYSIS_DIR
    from initmem.analysis import analyze_cube

    analyze_cube(cube_path, analysis, draws=200, tune=200, chains=2, seed=0, progress=False, compile_shape=SMALL)
    return analysis


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """(report path, pipeline names, number of figures) from a small real run."""
    from initmem.reports.html import build_report

    root = tmp_path_factory.mktemp("browser")
    names = ("sgd_low_lr", XSS, "sgd_l2")
    analysis = make_real_run(root, names)
    out = build_report(analysis, root / "report.html", command="pytest tests/test_browser.py")
    return out, names


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(report):
    """Serve the report's folder on localhost, so network requests are real HTTP requests."""
    folder = report[0].parent
    handler = functools.partial(_QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/{report[0].name}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


def open_page(browser, url: str, width: int = 1280):
    page = browser.new_page(viewport={"width": width, "height": 900})
    events = {"console_errors": [], "requests": [], "dialogs": []}
    page.on("console", lambda m: events["console_errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: events["console_errors"].append(str(e)))
    page.on("request", lambda r: events["requests"].append(r.url))
    page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    # The page's one script has run once it made the sortable headers focusable: wait for that
    # state rather than for a fixed time (a loaded machine may take longer than any fixed wait).
    page.wait_for_function("() => document.querySelector('#summary-table thead th').tabIndex === 0")
    return page, events


def test_report_renders_offline_without_errors(browser, server, report, tmp_path):
    path, names = report
    page, ev = open_page(browser, server)
    try:
        assert ev["console_errors"] == []
        others = [u for u in ev["requests"] if u != server]
        assert others == [], f"the report requested {others}"
        assert ev["requests"] == [server]

        figs = page.locator("figure.plot-figure svg")
        n = figs.count()
        # every figure the report holds is drawn: metric, shares, forest, training curves, tau, kernel
        # norms, rho, clocks, PPC, and the forgetting-time figures when the collapse test reports them
        collapse = R.load_collapse(path.parent / R.RUN_ANALYSIS_DIR)
        assert n == path.read_text(encoding="utf-8").count('class="plot-figure"')
        assert n >= 9 + bool(collapse is not None and collapse.forgetting_times)
        for i in range(n):
            figs.nth(i).scroll_into_view_if_needed()
            box = figs.nth(i).bounding_box()
            assert box is not None and box["width"] > 50 and box["height"] > 50, (i, box)
            # the figure's drawing is really there: its axes have a non-empty painted extent
            size = figs.nth(i).evaluate("el => { const b = el.getBBox(); return [b.width, b.height]; }")
            assert size[0] > 50 and size[1] > 50, (i, size)
        captions = page.locator("figure.plot-figure figcaption").all_inner_texts()
        assert len(captions) == n and all(c.startswith("Figure ") for c in captions)
        labels = page.locator("figure.plot-figure svg").evaluate_all(
            "els => els.map(e => document.getElementById(e.getAttribute('aria-labelledby')).textContent)")
        assert all(len(t) > 20 for t in labels)

        rows = page.locator("#summary-table tbody th").all_inner_texts()
        assert rows == list(names)
        assert page.locator("#summary-table tbody .badge").count() == len(names)
    finally:
        page.close()


SCREEN = {"width": 1300, "height": 900}


def test_the_top_fits_one_screen_with_the_verdict_table(browser, server, report, tmp_path):
    """At 1300 x 900 the first screen holds the headline sentence and the whole verdict table (pipeline, verdict,
    spread, radial verdict), and no table of the summary scrolls sideways."""
    path, names = report
    page, _ = open_page(browser, server, width=SCREEN["width"])
    try:
        assert page.viewport_size == SCREEN and page.evaluate("window.scrollY") == 0
        table = page.locator("#headline-table")
        assert table.locator("tbody th").all_inner_texts() == list(names)
        assert table.locator("tbody .badge").count() == len(names)
        top = page.locator("p.headline").bounding_box()
        box = table.bounding_box()
        assert top is not None and box is not None
        assert 0 <= top["y"] < box["y"] and box["y"] + box["height"] <= SCREEN["height"], (top, box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= SCREEN["width"], box
        # the verdict table is drawn, not hidden: the browser paints its last row inside the first screen
        last = table.locator("tbody tr").last.bounding_box()
        assert last is not None and last["y"] + last["height"] <= SCREEN["height"]
        # the summary's tables fit the page width: none scrolls sideways, nor does the page
        overflow = page.evaluate("""() => Object.fromEntries(
            [...document.querySelectorAll('#sec-summary .table-wrap, #mcse-table')].map(el => {
                const w = el.closest('.table-wrap');
                return [w.querySelector('table').id, w.scrollWidth - w.clientWidth]; }))""")
        assert {"summary-table", "verdict-table", "mcse-table"} <= set(overflow), overflow
        assert all(v <= 0 for v in overflow.values()), overflow
        assert page.evaluate("document.documentElement.scrollWidth") <= SCREEN["width"]

        page.screenshot(path=str(tmp_path / "report-top.png"))   # the first screen, as a reader opens it
        assert (tmp_path / "report-top.png").stat().st_size > 10_000
    finally:
        page.close()


def test_script_named_pipeline_is_text_and_never_runs(browser, server, report):
    page, ev = open_page(browser, server)
    try:
        assert ev["dialogs"] == []
        assert page.evaluate("document.scripts.length") == 1
        cell = page.locator("#summary-table tbody th", has_text="alert(1)")
        assert cell.inner_text() == XSS
        # in the figures too, as SVG text
        svg_texts = page.locator("svg text").all_text_contents()
        assert any(XSS in t for t in svg_texts)
    finally:
        page.close()


def test_tables_sort_on_click(browser, server, report):
    page, _ = open_page(browser, server)
    try:
        def spreads():
            return [float(v) for v in page.locator("#summary-table tbody tr td:nth-child(3)").evaluate_all(
                "tds => tds.map(td => td.getAttribute('data-sort'))")]

        header = page.locator("#summary-table thead th").nth(2)
        header.click()
        asc = spreads()
        assert asc == sorted(asc)
        assert header.get_attribute("aria-sort") == "ascending"
        header.click()
        assert spreads() == sorted(asc, reverse=True)
    finally:
        page.close()


def test_report_prints_to_pdf(browser, server, report, tmp_path):
    page, _ = open_page(browser, server)
    try:
        page.emulate_media(media="print")
        assert page.locator("nav.toc").is_hidden()
        pdf = page.pdf(format="A4", print_background=True)
        assert pdf[:5] == b"%PDF-"
        assert pdf.count(b"/Type /Page\n") + pdf.count(b"/Type /Page ") + pdf.count(b"/Type/Page") >= 3
        (tmp_path / "report.pdf").write_bytes(pdf)
    finally:
        page.close()


def test_file_url_also_loads_nothing(browser, report):
    path, _ = report
    url = path.resolve().as_uri()
    page, ev = open_page(browser, url)
    try:
        assert ev["console_errors"] == []
        assert [u for u in ev["requests"] if u != url] == []
    finally:
        page.close()

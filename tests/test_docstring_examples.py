"""Every public name of ``initmem`` shows its use in an Examples section, and the examples run as written.

The examples are doctests run in an empty folder, in the order a reader meets them: a simulated cube, written
and opened again, a grid, an imported table, then the analysis of a simulated cube and what reads the analysis
folder it writes (report, export, plan). Only the lines that train (``run``, ``collect_cube``) are skipped."""

from __future__ import annotations

import doctest
import io
from pathlib import Path

import pytest

import initmem

# The order the examples run in; a public name added later runs after these, in the same folder.
ORDER = ["simulate_cube", "SimPipeline", "write_cube", "open_cube", "load_grid", "import_table", "AnalysisSpec",
         "run", "collect_cube"]
READS_AN_ANALYSIS = ["analyze", "report", "export", "plan"]   # analyze writes the folder the others read
EXEMPT = {"UserError"}                                        # an exception class: raised in the others' examples


def _public() -> list[str]:
    return [name for name in initmem._API if name not in EXEMPT]


def _examples(name: str) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder(recurse=False).find(getattr(initmem, name), name, globs={})
            if t.examples]


def _run(names: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for name in names:
        for test in _examples(name):
            runner.run(test, out=report.write)
    results = runner.summarize(verbose=False)
    assert results.attempted > 0 and results.failed == 0, report.getvalue()


@pytest.mark.parametrize("name", _public())
def test_every_public_name_has_an_examples_section(name):
    import inspect

    doc = inspect.getdoc(getattr(initmem, name)) or ""
    assert "\nExamples\n--------\n" in doc, f"{name}: add an Examples section"
    assert _examples(name), f"{name}: its Examples section has no >>> example"


def test_the_examples_that_need_no_analysis_run(tmp_path, monkeypatch):
    rest = sorted(set(_public()) - set(ORDER) - set(READS_AN_ANALYSIS))
    _run(ORDER + rest, tmp_path, monkeypatch)


@pytest.mark.slow
def test_the_analysis_examples_run(tmp_path, monkeypatch):
    """The analysis samples (short chains), and report, export and plan read the folder it wrote."""
    _run(READS_AN_ANALYSIS, tmp_path, monkeypatch)
    assert (tmp_path / "analysis" / "summary.json").is_file() and (tmp_path / "analysis" / "report.html").is_file()

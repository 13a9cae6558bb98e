"""One word per verdict state: "remembers" / "forgets" / "undecided", with "borderline" a flag on an undecided verdict.

Two checks. The retired words ("inconclusive", and "borderline" used as a verdict value) appear nowhere a user reads
a verdict: the command line's sources, the report's templates and code, the figures, the statistics' messages and
the docs; the few places that name them on purpose (to read an older summary.json) are listed below with why. And an
analysis folder written by an older initmem, whose summary.json says "inconclusive" or "borderline", still loads and
reports, with today's words.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from initmem import names as N
from initmem import results as R
from initmem.tests._cli import invoke
from initmem.tests._report_fixture import small_cube, write_analysis

ROOT = Path(__file__).resolve().parents[1]

# Where a user reads verdicts: the command line, the report (templates and the code that words it), the figures,
# the messages of the statistics and the analysis, and the docs.
SWEPT = ("cli/*.py", "reports/*.py", "reports/templates/**/*", "plot/*.py", "stats/*.py", "models/*.py",
         "analysis/*.py", "results/*.py", "docs/*.md", "docs/reference/*.md")

# The retired words named on purpose, each to read an older summary.json (file -> the text that names them).
ALLOWED = {
    "results/records.py": ('an older summary.json\'s "inconclusive" or "borderline"',
                           'current_word("inconclusive"), current_word("borderline")',
                           'wrote "borderline" as the verdict', 'data.get("verdict") == "borderline"'),
    "docs/analysis-folder.md": ("a summary.json written before this vocabulary (`inconclusive`, or `borderline` as "
                                "a verdict)",),
}

# "borderline" as a verdict value rather than a flag: quoted as a value, a badge, a verdict's predicate, or the last
# of a list of verdict words. The flag's own forms ("undecided (borderline)", `borderline: true`, "flagged
# borderline", "the borderline band") match none of these.
BORDERLINE_AS_VERDICT = (
    re.compile(r"""(==|!=|:|verdict\s*=)\s*["']borderline["']"""),
    re.compile(r"badge-borderline"),
    re.compile(r"""\b(is|are|verdict|verdicts)\s+["'`*]*borderline\b""", re.I),
    re.compile(r"""(remembers|forgets|undecided|inconclusive)["'`*]*\s*(/|\bor\b)\s*["'`*]*borderline\b""", re.I),
)


def _swept_files() -> list[Path]:
    files = {p for pattern in SWEPT for p in ROOT.glob(pattern) if p.is_file()}
    return sorted(p for p in files if p.suffix in (".py", ".md", ".j2", ".html", ".css", ".js"))


def _without_allowed(rel: str, text: str) -> str:
    flat = " ".join(text.split())               # allowed phrases may wrap across lines
    for phrase in ALLOWED.get(rel, ()):
        assert phrase in flat, f"{rel}: the allow-list's phrase is gone, drop it: {phrase!r}"
        flat = flat.replace(phrase, "")
    return flat


def test_no_retired_verdict_word_where_a_verdict_is_read():
    files = _swept_files()
    assert len(files) > 60 and any(p.name == "summary.html.j2" for p in files)    # the sweep reaches them all
    found = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        text = _without_allowed(rel, path.read_text(encoding="utf-8"))
        if re.search(r"\binconclusive\b", text, re.I):
            found.append(f"{rel}: inconclusive")
        found += [f"{rel}: borderline as a verdict ({m.group(0)!r})" for rx in BORDERLINE_AS_VERDICT
                  for m in rx.finditer(text)]
    assert not found, "retired verdict words (say 'undecided'; 'borderline' is a flag on it):\n" + "\n".join(found)


def test_the_pattern_catches_a_retired_word_and_spares_the_flag():
    caught = ['verdict == "borderline"', "<span class=\"badge badge-borderline\">", "edge is borderline",
              "`remembers` / `forgets` / `inconclusive` / `borderline`", "inconclusive or borderline"]
    spared = ["undecided (borderline)", "`borderline: true`", "flagged borderline", "the borderline band",
              '"borderline": decided.borderline', '<tr class="borderline">', "verdict_text(UNDECIDED, borderline=True)"]
    for text in caught:
        assert (re.search(r"\binconclusive\b", text) or any(rx.search(text) for rx in BORDERLINE_AS_VERDICT)), text
    for text in spared:
        assert not any(rx.search(text) for rx in BORDERLINE_AS_VERDICT), text


def test_the_vocabulary_is_three_words_and_borderline_a_flag():
    assert N.VERDICTS == ("remembers", "forgets", "undecided")
    assert N.verdict_text(N.UNDECIDED, borderline=True) == "undecided (borderline)"
    assert N.verdict_text(N.REMEMBERS, borderline=True) == "remembers"    # the flag goes with undecided only
    from initmem.stats.crossed import DRAW_VERDICTS
    from initmem.stats.radial import RADIAL_VERDICTS
    assert N.UNDECIDED in DRAW_VERDICTS and N.UNDECIDED in RADIAL_VERDICTS


def _older(folder: Path) -> dict:
    """Rewrite the folder's summary.json with the words an older initmem wrote."""
    path = folder / N.SUMMARY_JSON
    raw = json.loads(path.read_text())
    first, second = list(raw["pipelines"])[:2]
    raw["pipelines"][first].update(verdict="inconclusive", borderline=False, model_verdict="borderline")
    raw["pipelines"][first]["prior_sensitivity"]["verdict"] = "inconclusive"
    raw["pipelines"][first]["frequentist"]["verdict"] = "inconclusive"
    raw["pipelines"][first]["radial"] = {"margin": 0.1, "n": 3, "slope": 0.5, "verdict": "inconclusive"}
    raw["pipelines"][first]["looks"] = [{"look": 1, "seeds": 3, "level": 0.05, "verdict": "inconclusive"}]
    raw["pipelines"][second].update(verdict="borderline")
    raw["pipelines"][second].pop("borderline", None)
    path.write_text(json.dumps(raw))
    return {"undecided": first, "borderline": second}


def test_an_older_summary_reads_and_reports_with_todays_words(tmp_path):
    folder = write_analysis(small_cube(), tmp_path)
    which = _older(folder)
    summary = R.load_summary(folder)
    plain, flagged = summary.pipelines[which["undecided"]], summary.pipelines[which["borderline"]]
    assert (plain.verdict, bool(plain.borderline), plain.model_verdict) == ("undecided", False, "undecided")
    assert plain.prior_sensitivity.verdict == plain.frequentist.verdict == plain.radial.verdict == "undecided"
    assert [lk.verdict for lk in plain.looks] == ["undecided"]
    assert (flagged.verdict, flagged.borderline, flagged.shown_verdict) == ("undecided", True,
                                                                           "undecided (borderline)")
    assert "undecided (borderline)" in repr(summary)
    # written back, only today's words remain
    assert not re.search(r"inconclusive|\"verdict\": \"borderline\"", json.dumps(summary.to_json()))

    r = invoke("report", folder)
    assert r.returncode == 0, r.stderr
    html = (folder / N.REPORT_HTML).read_text(encoding="utf-8")
    assert "badge-undecided" in html and '<span class="tag">borderline</span>' in html
    assert "inconclusive" not in html and "badge-borderline" not in html

"""The command-line reference page (docs/hooks/pages.py generates it from click for docs/reference/cli.md): every
command with its whole summary, every option with its help and its real default; and the check that the
reference pages show no docs/ path as plain text. ``make docs`` builds the site with these hooks, warnings as
errors; these tests need neither MkDocs nor the site."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import click
import pytest

from initmem.cli.main import app

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pages():
    spec = importlib.util.spec_from_file_location("initmem_docs_pages", ROOT / "docs" / "hooks" / "pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page(pages) -> str:
    return pages.cli_markdown()


def _rows(page: str, command: str) -> dict[str, list[str]]:
    """option names -> the row's cells, in the options table of ``command``'s section."""
    section = page.split(f"{{ #{command.replace(' ', '-')} ")[1].split("\n#")[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows[cells[0]] = cells
    return rows


def test_every_command_and_option_is_on_the_page_with_help(page):
    assert "Sentinel" not in page and "N/A" not in page
    ctx = click.Context(app, info_name="initmem")
    for name in app.list_commands(ctx):
        command = app.get_command(ctx, name)
        rows = _rows(page, f"initmem {name}")
        options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
        assert len(rows) == len(options) + 1, name          # and --help
        assert all(cells[2] for cells in rows.values()), name  # every option says what it does


def test_defaults_are_the_values_a_user_gets(page):
    analyze = _rows(page, "initmem analyze")
    assert analyze["`--chains`"][3] == "`4`" and analyze["`--sampler`"][3] == "`nutpie`"
    assert analyze["`--out`, `-o`"][3] == "required"
    assert analyze["`--delta`"][3] == "–"                   # none: its help says what then holds
    assert analyze["`--force`"][3] == "off"
    assert _rows(page, "initmem collapse")["`--exponents` / `--no-exponents`"][3] == "`--exponents`"
    assert _rows(page, "initmem")["`--quiet`, `-q`"][3] == "off"


def test_command_summaries_are_whole(page, pages):
    ctx = click.Context(app, info_name="initmem")
    listed = dict(re.findall(r"^- \[`(\w+)`\]\(#initmem-\w+\): (.*)$", page, re.M))
    assert set(listed) == set(app.list_commands(ctx))
    for name, text in listed.items():
        command = app.get_command(ctx, name)
        first = " ".join(pages._help(command.help).split("\n\n")[0].split())
        assert command.short_help or text.replace("[docs/", "docs/").startswith(first.split(" (docs/")[0]), name
        assert text.endswith((".", ")")), (name, text)


def test_doc_paths_in_command_help_are_links(page):
    assert re.search(r"\[docs/import\.md\]\(\.\./import\.md\)", page)
    assert not re.search(r"(?<![\[/])docs/\w+\.md(?!\])", page)


def test_the_reference_check_finds_a_doc_path_left_as_text(pages):
    html = '<p>See docs/cube.md and <a href="../crossed.html">docs/crossed.md</a>, <code>docs/x.md</code>.</p>'
    assert pages.unlinked_doc_paths(html) == ["docs/cube.md", "docs/x.md"]


def test_every_public_name_is_on_the_api_page():
    import initmem

    page = (ROOT / "docs" / "reference" / "api.md").read_text()
    shown = set(re.findall(r"^::: initmem\.(\w+)\s*$", page, re.M))
    assert set(initmem._API) <= shown, sorted(set(initmem._API) - shown)


def test_the_collect_options_document_every_field():
    """The API page shows CollectOptions by its fields' docstrings, as AnalysisSpec: every field has one."""
    from initmem.collect.execution.options import CollectOptions

    documented = {name for name, f in CollectOptions.model_fields.items() if f.description}
    assert documented == set(CollectOptions.model_fields)

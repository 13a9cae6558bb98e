"""MkDocs hooks of the documentation site (mkdocs.yml, ``hooks:``).

- The command-line page (docs/reference/cli.md) is generated from click itself, so it cannot drift from the
  commands: every command with its whole description, its usage and a table of its options, with each option's
  real default (click leaves an unset default as a sentinel, which a generic renderer prints as
  "Sentinel.UNSET") and its help. An option without help fails the build rather than showing "N/A".
- The documentation paths in the API page's docstrings (``docs/crossed.md``), which docs/hooks/api_docstrings.py
  turns into links of the form ``initmem-docs:crossed.md``, point at the built page; a path to no page fails
  the strict build.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Iterator
from typing import Any

CLI_PAGE = "reference/cli.md"
CLI_MARKER = "<!-- the commands, generated from click (docs/hooks/pages.py) -->"
DOC_LINK = re.compile(r'href="initmem-docs:(?P<page>[^"#]+)(?P<anchor>#[^"]*)?"')
# What the reference pages must not show: a Sphinx role left as text, a docs/ path that is not a link, click's
# sentinel for an unset default, a missing help text.
RAW = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`|Sentinel\.UNSET|>N/A<")

log = logging.getLogger("mkdocs.plugins.initmem")


# --- the command-line page --------------------------------------------------------------------------------------

def _linked(text: str) -> str:
    """docs/x.md in a command's help as a link from this page (MkDocs checks that the page exists)."""
    return re.sub(r"(?<![\w/.\[])docs/([\w-]+\.md)\b", r"[docs/\1](../\1)", text)


def _cell(text: str) -> str:
    return _linked(" ".join(text.split()).replace("|", r"\|"))


def _help(text: str | None) -> str:
    """Help as click shows it: the text before ``\\f``, without ``\\b`` markers, dedented."""
    return inspect.cleandoc((text or "").split("\f")[0]).replace("\b\n", "").replace("\b", "")


def summary(command: Any) -> str:
    """A command's summary: its short help, else the whole first paragraph of its help (never cut)."""
    if command.short_help:
        return _cell(command.short_help)
    return _cell(_help(command.help).split("\n\n")[0])


def _type(option: Any) -> str:
    import click

    if option.is_flag:
        return "flag"
    kind = option.type
    if isinstance(kind, click.Choice):
        return " \\| ".join(f"`{c}`" for c in kind.choices)
    if isinstance(kind, click.IntRange | click.FloatRange):
        name = "integer" if isinstance(kind, click.IntRange) else "number"
        lo = f"≥ {kind.min}" if kind.min is not None else ""
        hi = f"≤ {kind.max}" if kind.max is not None else ""
        return " ".join(p for p in (name, lo, hi) if p)
    name = kind.name   # click's own types are words (text, path); the command line's own are metavars (MARGIN)
    return name if name.isalpha() and name.islower() else f"`{name}`"

def default(option: Any, ctx: Any) -> str:
    """The default a reader can use: the value, ``off``/``on`` for a flag, the side a ``--x/--no-x`` pair
    takes, the text of a ``show_default`` string; a dash where the option has none (its help says what
    then holds)."""
    if option.required:
        return "required"
    if option.is_eager and option.is_flag:   # --help, --version: an action, not a setting
        return "–"
    if isinstance(option.show_default, str):
        return _cell(option.show_default)
    value = option.get_default(ctx, call=False)
    if callable(value) or value is None or type(value).__name__ == "Sentinel":
        return "–"
    if option.is_flag and option.secondary_opts:
        return f"`{option.opts[-1] if value else option.secondary_opts[-1]}`"
    if option.is_flag:
        return "on" if value else "off"
    if option.multiple or isinstance(value, list | tuple):
        return ", ".join(f"`{v}`" for v in value) or "–"
    return f"`{value}`"


def _options(command: Any, ctx: Any) -> Iterator[str]:
    import click

    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option) and not p.hidden]
    missing = [p.opts[0] for p in options if not p.help]
    if missing:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"{ctx.command_path}: give {', '.join(missing)} a help text (the CLI page shows it)")
    yield "| Option | Takes | What it does | Default |"
    yield "|---|---|---|---|"
    for p in options:
        names = ", ".join(f"`{o}`" for o in p.opts)
        if p.secondary_opts:
            names += " / " + ", ".join(f"`{o}`" for o in p.secondary_opts)
        yield f"| {names} | {_type(p)} | {_cell(_help(p.help))} | {default(p, ctx)} |"
    yield ""


def command_lines(command: Any, ctx: Any, depth: int) -> Iterator[str]:
    import click

    path = ctx.command_path
    slug = path.replace(" ", "-")
    yield f"{'#' * depth} {path} {{ #{slug} data-toc-label='{ctx.info_name}' }}"
    yield ""
    yield from _linked(_help(command.help)).splitlines()
    yield ""
    yield "```text"
    yield f"{path} {' '.join(command.collect_usage_pieces(ctx))}"
    yield "```"
    yield ""
    yield from _options(command, ctx)
    if isinstance(command, click.Group):
        yield "**Commands**"
        yield ""
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield f"- [`{name}`](#{slug}-{name}): {summary(sub)}"
        yield ""
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from command_lines(sub, click.Context(sub, info_name=name, parent=ctx), depth + 1)


def cli_markdown() -> str:
    """The commands of ``initmem`` as Markdown, generated from click."""
    import click

    from initmem.cli.main import app

    return "\n".join(command_lines(app, click.Context(app, info_name="initmem"), 2))


# --- hooks -----------------------------------------------------------------------------------------------------

def on_page_markdown(markdown: str, page: Any, **_kwargs: Any) -> str:
    if page.file.src_uri != CLI_PAGE:
        return markdown
    if CLI_MARKER not in markdown:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"{CLI_PAGE} lost its marker {CLI_MARKER!r}")
    return markdown.replace(CLI_MARKER, cli_markdown())


def on_page_content(html: str, page: Any, files: Any, **_kwargs: Any) -> str:
    def link(m: re.Match[str]) -> str:
        target = files.get_file_from_path(m["page"])
        if target is None:
            log.warning("%s: a docstring names docs/%s, which is no page of the site", page.file.src_uri, m["page"])
            return m.group(0)
        return f'href="{target.url_relative_to(page.file)}{m["anchor"] or ""}"'

    html = DOC_LINK.sub(link, html)
    if page.file.src_uri.startswith("reference/"):
        for m in RAW.finditer(html):
            log.warning("%s shows %r as text: %s", page.file.src_uri, m.group(0), html[m.start() - 80:m.end() + 40])
        for path in unlinked_doc_paths(html):
            log.warning("%s shows the path %s as text, not as a link", page.file.src_uri, path)
    return html


def unlinked_doc_paths(html: str) -> list[str]:
    """The docs/x.md paths in ``html`` outside a link (the text between tags, outside ``<a>...</a>``)."""
    found, depth = [], 0
    for part in re.split(r"(<[^>]+>)", html):
        if part.startswith("<a ") or part == "<a>":
            depth += 1
        elif part == "</a>":
            depth = max(depth - 1, 0)
        elif not part.startswith("<") and depth == 0:
            found += re.findall(r"\bdocs/[\w/-]+\.md\b", part)
    return found


# --- paths named in docstrings and pages ------------------------------------------------------------------------
# A docstring or a page that names a file of the repository (``collect/execution/grid_folder.py``,
# ``initmem/results/spec.py``, ``docs/crossed.md``, ``engine.py``) must name one that exists: a module moved or
# renamed leaves no stale path behind. ``initmem/`` is the repository root (the package is the root). A path whose
# first folder is not one of the repository's (``runs/quick/cube.nc``, ``pkg/train.py``) is the reader's own and
# is not checked; nor is a file name alone that names the reader's file or one initmem writes (``my_train.py``,
# ``methods.md``), listed in OWN_FILES, nor a path in a docstring's example (``>>> load_grid("configs/none.yaml")``
# may name a missing file on purpose).

PATH_TOKEN = re.compile(r"(?<![\w./~$-])((?:[\w-]+/)*[\w-]+\.(?:py|md|yaml|toml))(?![\w/-])")
SKIP_DIRS = {".git", ".venv", "site", "build", "node_modules", "__pycache__", "initmem.egg-info", ".ci"}
# File names the docs use for the reader's own files, and the files initmem writes (export's bundle), never the
# repository's.
OWN_FILES = frozenset({"train.py", "my_train.py", "script.py", "methods.md", "reproduce.md", "KEY.md"})


def _repo_files(root: Any) -> tuple[set[str], set[str]]:
    """Every file of the repository under ``root`` as a relative path, and every file name."""
    import os

    paths: set[str] = set()
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        rel = os.path.relpath(here, root)
        for name in files:
            paths.add(name if rel == "." else f"{rel}/{name}")
    return paths, {p.rsplit("/", 1)[-1] for p in paths}


def _stale_in(text: str, paths: set[str], names: set[str], tops: set[str]) -> list[str]:
    stale = []
    for m in PATH_TOKEN.finditer(text):
        token = m.group(1)
        path = token.removeprefix("initmem/")
        if token.startswith("initmem/"):
            ok = path in paths     # the package is the repository's root: initmem/x.py is ./x.py
        elif "/" in path:
            if path.split("/", 1)[0] not in tops:
                continue   # the reader's own path (runs/..., pkg/...)
            ok = path in paths or f"docs/{path}" in paths or path.endswith(".md") and any(
                p.endswith("/" + path) for p in paths)
        else:
            if not path.endswith((".py", ".md")) or path in OWN_FILES:
                continue
            ok = path in names
        if not ok:
            stale.append(token)
    return stale


def _docstrings(source: str) -> Iterator[str]:
    """The docstrings of a module, its classes and functions, and its attributes' docstrings."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                yield _without_examples(stmt.value.value)


def _without_examples(doc: str) -> str:
    """A docstring without its doctest examples (each ``>>>`` line and the output lines after it)."""
    kept, in_example = [], False
    for line in doc.splitlines():
        stripped = line.strip()
        in_example = stripped.startswith(">>>") or (in_example and stripped != "")
        if not in_example:
            kept.append(line)
    return "\n".join(kept)


def stale_paths(root: Any) -> list[str]:
    """``file: path`` for each repository path that a docstring (of a module outside tests/) or a page under
    docs/ names and that does not exist under ``root``."""
    from pathlib import Path

    root = Path(root)
    paths, names = _repo_files(root)
    tops = {p.split("/", 1)[0] for p in paths if "/" in p}
    found = []
    for rel in sorted(paths):
        if rel.endswith(".py") and not rel.startswith(("tests/", "docs/hooks/")):
            texts = list(_docstrings((root / rel).read_text(encoding="utf-8")))
        elif rel.endswith(".md") and rel.startswith("docs/") or rel == "README.md":
            texts = [(root / rel).read_text(encoding="utf-8")]
        else:
            continue
        for text in texts:
            found += [f"{rel}: {path}" for path in _stale_in(text, paths, names, tops)]
    return found


def on_pre_build(config: Any, **_kwargs: Any) -> None:
    """A docstring or a page naming a repository path that does not exist fails the strict build."""
    from pathlib import Path

    for line in stale_paths(Path(config["docs_dir"]).parent):
        log.warning("%s names a path that does not exist", line)

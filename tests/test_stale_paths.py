"""No docstring or page names a repository path that does not exist (docs/hooks/pages.py, ``stale_paths``, which
the docs build runs before every build: ``make docs`` builds strictly, so a stale path fails it)."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pages():
    spec = importlib.util.spec_from_file_location("initmem_docs_pages_paths", ROOT / "docs" / "hooks" / "pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_docstring_or_page_names_a_path_that_does_not_exist():
    assert _pages().stale_paths(ROOT) == []


def _plant(root: Path) -> None:
    (root / "collect" / "execution").mkdir(parents=True)
    (root / "results").mkdir()
    (root / "docs").mkdir()
    (root / "results" / "spec.py").write_text('"""The spec."""\n')
    (root / "collect" / "execution" / "grid_folder.py").write_text(
        '"""The grid folder (collect/execution/grid_folder.py; the spec in initmem/results/spec.py).\n\n'
        "Moved: collect/execution/run_folder.py, initmem/spec.py and cli.py.\n\n"
        '>>> open("configs/none.yaml")   # an example may name a missing file\n'
        "runs/quick/cube.nc is the reader's, and so is my_train.py.\n"
        '"""\n\n\ndef f():\n    """Reads docs/gone.md."""\n')
    (root / "docs" / "page.md").write_text("See `results/spec.py`, [the page](page.md) and `docs/old.md`.\n")


def test_a_planted_stale_path_is_found_and_fails_the_docs_build(tmp_path, caplog):
    pages = _pages()
    _plant(tmp_path)
    assert pages.stale_paths(tmp_path) == [
        "collect/execution/grid_folder.py: collect/execution/run_folder.py",
        "collect/execution/grid_folder.py: initmem/spec.py",
        "collect/execution/grid_folder.py: cli.py",
        "collect/execution/grid_folder.py: docs/gone.md",
        "docs/page.md: docs/old.md",
    ]
    # The build's hook warns on each, under MkDocs' logger: `mkdocs build --strict` (make docs) fails on a warning.
    with caplog.at_level(logging.WARNING, logger="mkdocs"):
        pages.on_pre_build({"docs_dir": str(tmp_path / "docs")})
    warned = [r for r in caplog.records if r.name.startswith("mkdocs.") and r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warned] == [f"{line} names a path that does not exist" for line in [
        "collect/execution/grid_folder.py: collect/execution/run_folder.py",
        "collect/execution/grid_folder.py: initmem/spec.py",
        "collect/execution/grid_folder.py: cli.py",
        "collect/execution/grid_folder.py: docs/gone.md",
        "docs/page.md: docs/old.md"]]
    (tmp_path / "cli.py").write_text("")   # the path exists again: no longer stale
    assert "collect/execution/grid_folder.py: cli.py" not in pages.stale_paths(tmp_path)

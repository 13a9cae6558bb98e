"""The data sets table (grid/datasets.py) is the one place a data set is defined: the grid accepts exactly its
names, the loader and the grid's checks read its fields, and no other module spells a data set's name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from initmem.grid import DatasetSpec, load_grid
from initmem.grid.datasets import BY_NAME, DATASETS, GENERATED, NAMES, TORCHVISION, dataset

ROOT = Path(__file__).resolve().parents[1]
# Literals that are not data set definitions: the grid's default data set, the "digits" preset's name and the
# generator package's distribution name (importlib.metadata), and the report's count of decimal digits.
NOT_DEFINITIONS = {("grid/schema.py", "digits"), ("grid/file.py", "digits"),
                   ("collect/train/mnist1d_gen.py", "mnist1d"), ("reports/html.py", "digits")}


def test_the_grid_accepts_exactly_the_table_names():
    for name in NAMES:
        fields = {"name": name, "root": "/data"} if dataset(name).needs_root else {"name": name}
        assert DatasetSpec(**fields).name == name
    with pytest.raises(ValueError, match="mnist1d"):
        DatasetSpec(name="imagenet")
    with pytest.raises(KeyError, match="known: digits, cifar10"):
        dataset("imagenet")


def test_entries_are_whole():
    assert len(BY_NAME) == len(DATASETS)
    for d in DATASETS:
        assert d.classes >= 2 and d.channels >= 1 and min(d.size) >= 1
        assert (d.torchvision is not None) == (d.source == TORCHVISION) == d.needs_root
        assert d.pickles is None or d.torchvision is not None
        assert d.how_to_get and d.splits
    assert [d.name for d in DATASETS if d.sequence] == [d.name for d in DATASETS if d.source == GENERATED]


def test_a_torchvision_set_without_its_folder_is_refused_with_the_fix(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("name: g\ndataset: {name: svhn}\nmodel: {arch: resnet_tiny}\nsigma_w: [0.5, 1]\nseeds: [0, 1]\n"
                    "pipelines: {sgd: {optimizer: sgd, lr: 0.1, batch_size: 32, epochs: 1}}\n")
    with pytest.raises(Exception, match="dataset.root: svhn needs a torchvision data folder"):
        load_grid(grid)


def _literals(path: Path) -> set[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in NAMES and id(n) not in docs}


def test_no_module_but_the_table_spells_a_data_set_name():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in {".venv", "build", "tests", "studies", "benchmarks", "docs", "examples"}:
            continue
        if rel == "grid/datasets.py":
            continue
        found += [(rel, line, name) for line, name in _literals(path) if (rel, name) not in NOT_DEFINITIONS]
    assert not found

"""The public API as tools see it: the lazy names of ``initmem`` and ``initmem.plot`` are visible to type
checkers with their real signatures, listed by ``dir()``, and the same objects at run time.

mypy runs against a plain (non-editable) install of the package, as a user has it: an editable install of a
root-as-package layout is an import hook that static tools cannot follow."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import initmem
import initmem.plot

ROOT = Path(__file__).resolve().parents[1]
TYPING = Path(__file__).resolve().parent / "typing"
PACKAGES = {"initmem": ROOT / "__init__.py", "initmem.plot": ROOT / "plot" / "__init__.py"}


def _type_checking_imports(path: Path) -> dict[str, tuple[str, str]]:
    """name -> (module, attribute) of the imports under ``if TYPE_CHECKING:`` in ``path``."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                for alias in imp.names:
                    out[alias.asname or alias.name] = (imp.module, alias.name)
    return out


@pytest.mark.parametrize("package", list(PACKAGES))
def test_what_checkers_see_is_what_runs(package):
    mod = import_module(package)
    seen = _type_checking_imports(PACKAGES[package])
    assert seen == mod._API                       # one table: the checker's names are the lazy ones
    assert set(mod._API) <= set(mod.__all__) and set(mod._API) <= set(dir(mod))
    for name, (module, attr) in mod._API.items():
        assert getattr(mod, name) is getattr(import_module(module), attr)


def test_import_stays_light():
    code = ("import sys, initmem, initmem.plot; "
            "print(sorted(m for m in ('torch', 'pymc', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-compile", "--target", str(target), str(ROOT)], check=True, capture_output=True)
    assert (target / "initmem" / "py.typed").is_file()
    return target


def _mypy(script: Path, site: Path) -> subprocess.CompletedProcess:
    env = {"MYPYPATH": str(site), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--no-incremental", "--cache-dir", "/dev/null", script.name],
                          cwd=script.parent, capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_mypy_passes_a_script_that_calls_every_public_function(installed):
    res = _mypy(TYPING / "user_calls.py", installed)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_mypy_reports_every_wrong_call(installed):
    script = TYPING / "wrong_calls.py"
    wrong = {i for i, line in enumerate(script.read_text().splitlines(), 1) if line.endswith("# wrong")}
    res = _mypy(script, installed)
    reported = {int(m) for m in re.findall(rf"^{script.name}:(\d+): error", res.stdout, re.M)}
    assert wrong and reported == wrong, res.stdout + res.stderr
    called = {m for m in re.findall(r"^(?:initmem|ip)\.(\w+)\(", script.read_text(), re.M)}
    assert called == set(initmem._API) | set(initmem.plot._API) - {"Analysis", "Skip", "Description", "WIDTHS",
                                                                   "PALETTE"}

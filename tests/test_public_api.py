"""The public API as tools see it: the lazy names of ``initmem`` and ``initmem.plot`` are visible to type
checkers with their real signatures, listed by ``dir()``, and the same objects at run time; every public function
spells out its keywords and documents them; each function does what its command does, with the same options; a
renamed name still works with a DeprecationWarning.

mypy runs against a plain (non-editable) install of the package, as a user of a released wheel has it, and in the
install that ``make install`` makes: there, with nothing but the installed package to go on (no MYPYPATH, run
outside this folder), it reads initmem's real signatures, so a wrong type and a misspelt keyword in a call to
``initmem.analyze`` are errors before anything runs. An editable install through an import hook would leave mypy
with "Cannot find implementation or library stub for module named 'initmem'" and every call unchecked (the
Makefile's install target says why it installs a path). The three mypy runs share one cache."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import typing
import warnings
from importlib import import_module
from pathlib import Path

import pandas as pd
import pytest
import xarray as xr

import initmem
import initmem.plot
from initmem.errors import OptionError, UserError
from initmem.tests._cli import invoke

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


def test_a_checkout_on_the_path_knows_its_version():
    # benchmarks/gpu_checks.sh puts an uninstalled checkout on the path: no package metadata there,
    # so the version comes from pyproject.toml, and it is the one an install records.
    from initmem.version import _checkout_version

    assert _checkout_version() == initmem.__version__


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-compile", "--target", str(target), str(ROOT)], check=True, capture_output=True)
    assert (target / "initmem" / "py.typed").is_file()

    def partials(root: Path) -> list[str]:
        return sorted(p.name for p in (root / "reports" / "templates" / "sections").glob("*.j2"))

    assert partials(ROOT) and partials(target / "initmem") == partials(ROOT)   # the report's sections ship
    return target


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    """One mypy cache for this file's two runs, fresh for every test run: the second run reuses what the first
    learnt of the installed package and its dependencies (the same results; mypy's cache is keyed on every
    file it read) instead of analysing them again."""
    return tmp_path_factory.mktemp("mypy_cache")


def _mypy(script: Path, site: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {"MYPYPATH": str(site), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(cache), script.name],
                          cwd=script.parent, capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_mypy_passes_a_script_that_calls_every_public_function(installed, mypy_cache):
    res = _mypy(TYPING / "user_calls.py", installed, mypy_cache)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_mypy_reports_every_wrong_call(installed, mypy_cache):
    script = TYPING / "wrong_calls.py"
    wrong = {i for i, line in enumerate(script.read_text().splitlines(), 1) if line.endswith("# wrong")}
    res = _mypy(script, installed, mypy_cache)
    reported = {int(m) for m in re.findall(rf"^{script.name}:(\d+): error", res.stdout, re.M)}
    assert wrong and reported == wrong, res.stdout + res.stderr
    called = {m for m in re.findall(r"^(?:initmem|ip)\.(\w+)\(", script.read_text(), re.M)}
    assert called == set(initmem._API) | set(initmem.plot._API) - {"Analysis", "Skip", "Description", "WIDTHS",
                                                                   "PALETTE"}


NOTEBOOK_CELL = '''\
import initmem

initmem.analyze("c.nc", "out", delta="0.02")
initmem.analyze("c.nc", "out", chain=2)
summary = initmem.analyze("c.nc", "out", delta=0.02, chains=2)
reveal_type(summary)
'''


@pytest.mark.slow
def test_mypy_in_the_installed_environment_catches_a_wrong_call(tmp_path, mypy_cache):
    script = tmp_path / "notebook_cell.py"
    script.write_text(NOTEBOOK_CELL)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                          "--cache-dir", str(mypy_cache), "--no-error-summary", script.name],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    out = res.stdout + res.stderr
    assert "Cannot find implementation or library stub" not in out, "initmem is invisible to mypy: " + out
    errors = dict(re.findall(rf"^{script.name}:(\d+): error: (.*)$", out, re.M))
    assert set(errors) == {"3", "4"}, out
    assert 'Argument "delta"' in errors["3"] and 'incompatible type "str"' in errors["3"], out
    assert 'Unexpected keyword argument "chain"' in errors["4"] and 'did you mean "chains"' in errors["4"], out
    assert re.search(rf'^{script.name}:6: note: Revealed type is "initmem\.results\.records\.Summary"', out, re.M), out


# --- one name per thing, every keyword spelled out and documented ---------------------------------------------

def _public_functions() -> dict[str, typing.Callable]:
    return {name: getattr(initmem, name) for name in initmem._API if inspect.isfunction(getattr(initmem, name))}


def test_the_public_functions_are_one_per_command():
    assert set(_public_functions()) == {"open_cube", "write_cube", "load_grid", "analyze", "run", "collect_cube",
                                        "import_table", "report", "export", "plan", "simulate_cube", "apply_probe",
                                        "load_cell"}


@pytest.mark.parametrize("name", sorted(_public_functions()))
def test_a_public_function_spells_out_its_keywords_and_documents_them(name):
    fn = _public_functions()[name]
    for param in inspect.signature(fn).parameters.values():
        # **options only where a TypedDict types every keyword (PEP 692): a misspelt one is a type error
        assert param.kind is not param.VAR_KEYWORD or str(param.annotation).startswith("Unpack["), param
    doc = inspect.getdoc(fn) or ""
    for section in ("Parameters", "Returns", "Raises"):
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, (name, section)
    documented = set(re.findall(r"^(\w+(?:, \w+)*) :", doc, re.M))
    names = {n for line in documented for n in line.split(", ")}
    wanted = {p.name for p in inspect.signature(fn).parameters.values() if p.kind is not p.VAR_KEYWORD}
    assert wanted <= names, (name, wanted - names)


def _literal_choices(hint: object) -> set[str]:
    return {a for arg in typing.get_args(hint) for a in (typing.get_args(arg) if typing.get_origin(arg) is
                                                           typing.Literal else (arg,)) if isinstance(a, str)}


def test_the_typed_analysis_keywords_are_the_spec_fields():
    from initmem.results import spec
    from initmem.results.spec import AnalysisOptions

    hints = typing.get_type_hints(AnalysisOptions)
    assert list(hints) == list(spec.AnalysisSpec.model_fields)
    assert _literal_choices(hints["family"]) == set(spec.FAMILIES)
    assert _literal_choices(hints["sampler"]) == set(spec.SAMPLERS)
    assert _literal_choices(hints["memory"]) == set(spec.MEMORY_KINDS)
    assert _literal_choices(hints["gate"]) == set(initmem.results.GATES)


def test_collect_cube_takes_the_record_or_its_typed_fields_which_are_the_collect_options():
    from initmem.collect.execution.options import EXECUTORS, CollectFields, CollectOptions
    from initmem.collect.execution.runner import collect_cube

    hints = {name: f.annotation for name, f in CollectOptions.model_fields.items()}
    assert typing.get_type_hints(CollectFields) == hints
    assert list(typing.get_type_hints(CollectFields)) == list(hints)
    params = inspect.signature(collect_cube).parameters
    assert [(p.name, p.kind) for p in params.values()] == [
        ("grid", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("out_dir", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("options", inspect.Parameter.POSITIONAL_OR_KEYWORD), ("fields", inspect.Parameter.VAR_KEYWORD)]
    assert params["options"].default is None
    assert typing.get_type_hints(collect_cube)["fields"] == typing.Unpack[CollectFields]
    assert _literal_choices(hints["executor"]) == set(EXECUTORS)


# --- CollectOptions: one record, validated once ------------------------------------------------------------

@pytest.mark.parametrize("fields,message", [
    ({"executor": "ssh"}, "executor must be one of local, slurm (got 'ssh')"),
    ({"jobs": 0}, "jobs must be 'auto' or at least 1 (got 0)"),
    ({"jobs": "many"}, "jobs must be 'auto' or at least 1 (got 'many')"),
    ({"pack_size": 0}, "pack_size must be at least 1 (got 0)"),
    ({"checkpoint_every": 0}, "checkpoint_every must be at least 1 epoch (got 0)"),
    ({"checkpoint_minutes": 0.0}, "checkpoint_minutes must be positive (got 0.0)"),
    ({"force_new": True, "retry_failed": True}, "force_new starts a new grid folder and retry_failed=True continues"),
    ({"pack_siz": 2}, "pack_siz is not a collect option; did you mean pack_size?"),
    ({"resume": "yes"}, "resume must be true or false, not str (got 'yes')"),
    ({"jobs": "4"}, "jobs must be 'auto' or at least 1 (got '4')"),
    ({"checkpoint_minutes": "1.5"}, "checkpoint_minutes must be a number, not str (got '1.5')"),
])
def test_collect_options_refuse_a_bad_value_naming_the_option(fields, message):
    from initmem.collect.execution.options import CollectOptions

    with pytest.raises(OptionError) as exc:
        CollectOptions.of(**fields)
    assert str(exc.value).startswith(message) and exc.value.option == next(iter(fields))


def test_collect_options_replace_fields_and_convert_units():
    from initmem.collect.execution.options import CollectOptions

    base = CollectOptions(pack_size=2, checkpoint_minutes=1.5)
    opts = CollectOptions.of(base, retry_failed=True, quiet=True)
    assert opts == CollectOptions(pack_size=2, checkpoint_minutes=1.5, retry_failed=True, quiet=True)
    assert opts.checkpoint_seconds == 90.0 and opts.continues and not base.continues
    assert CollectOptions.of() == CollectOptions() and CollectOptions().checkpoint_seconds is None


def _capture(monkeypatch, module, name: str, result: object) -> list:
    calls: list = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return result

    monkeypatch.setattr(module, name, fake)
    return calls


def test_collect_cube_and_the_command_hand_the_collector_the_same_record(monkeypatch, tmp_path):
    from initmem.collect.execution import runner
    from initmem.collect.execution.options import CollectOptions

    calls = _capture(monkeypatch, runner, "collect", tmp_path / "cube.nc")
    assert initmem.collect_cube("g.yaml", tmp_path, resume=True, jobs=2, pack_size=3,
                                checkpoint_minutes=0.5) == tmp_path / "cube.nc"
    proc = invoke("collect", "g.yaml", "--out", tmp_path, "--resume", "--jobs", "2", "--pack-size", "3",
                  "--checkpoint-minutes", "0.5")
    assert proc.returncode == 0, proc.stderr
    want = CollectOptions(resume=True, jobs=2, pack_size=3, checkpoint_minutes=0.5)
    slurm = dict.fromkeys(("partition", "gpus_per_job", "time_min", "mem_gb", "cpus_per_task", "array_parallelism"))
    assert calls == [(("g.yaml", tmp_path, want), {}),
                     (("g.yaml", tmp_path, CollectOptions.of(want, slurm=slurm)), {})]
    base = CollectOptions(jobs=2, quiet=True)   # a record, its fields replaced by keywords, as initmem.analyze does
    assert initmem.collect_cube("g.yaml", tmp_path, base, jobs=3) == tmp_path / "cube.nc"
    assert calls[-1] == (("g.yaml", tmp_path, CollectOptions(jobs=3, quiet=True)), {})


# --- run: what `initmem run` does ---------------------------------------------------------------------------

def test_run_and_the_command_call_the_same_steps(monkeypatch, tmp_path):
    from initmem.grid import resolve_preset

    module = import_module("initmem.analysis.run")   # the module, not a name the package binds

    result = module.RunResult(out_dir=tmp_path, cube=tmp_path / "cube.nc", analysis_dir=tmp_path / "analysis",
                              report=tmp_path / "report.html", seconds={"collect": 1.0})
    calls = _capture(monkeypatch, module, "run_all", result)
    assert initmem.run(preset="quick", out_dir=tmp_path, spec=initmem.AnalysisSpec(draws=200, chains=2),
                       looks=[2, 4], quiet=True, command="initmem run") is result
    proc = invoke("--quiet", "run", "--preset", "quick", "--out", tmp_path, "--draws", "200", "--chains", "2",
                  "--until-decided", "--looks", "2,4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "report.html")
    (args, kw), (cli_args, cli_kw) = calls
    assert args == cli_args == (resolve_preset("quick"), tmp_path)
    # the options set, as they were given: what run_state.json records to decide whether to reanalyze
    assert kw["analyze_options"] == cli_kw["analyze_options"] == {"draws": 200, "chains": 2}
    same = ("jobs", "device", "reanalyze", "quiet", "looks", "max_seeds")
    assert {k: kw[k] for k in same} == {k: cli_kw[k] for k in same} == {
        "jobs": "auto", "device": "auto", "reanalyze": False, "quiet": True, "looks": [2, 4], "max_seeds": None}
    assert kw["command"] == "initmem run"


def test_run_refuses_what_no_run_can_do(tmp_path):
    (tmp_path / "g.yaml").write_text("name: g\n")
    with pytest.raises(UserError, match="give either GRID.yaml or preset='NAME', not both"):
        initmem.run(tmp_path / "g.yaml", preset="quick", quiet=True)
    with pytest.raises(OptionError, match="max_seeds caps a sequential run: give looks too"):
        initmem.run(preset="quick", max_seeds=8, quiet=True)
    with pytest.raises(UserError, match="no such grid file"):
        initmem.run(tmp_path / "none.yaml", quiet=True)


# --- import_table: what `initmem import` does ----------------------------------------------------------------

def _long_csv(path: Path) -> Path:
    rows = [{"pipeline": p, "sigma_w": s, "seed": k, "selected_test_acc": (100 + 7 * i) / 200, "lr": lr}
            for i, (p, lr, s, k) in enumerate((p, lr, s, k) for p, lr in (("sgd", 0.1), ("adam", 0.01))
                                              for s in (0.5, 1.0, 2.0) for k in (0, 1))]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_import_table_makes_the_cube_the_command_makes(tmp_path):
    source = _long_csv(tmp_path / "runs.csv")
    result = initmem.import_table(source, tmp_path / "api.nc", seeds="paired", n_test=200, metric_cols=["lr"])
    proc = invoke("import", source, "--out", tmp_path / "cli.nc", "--seeds", "paired", "--n-test", "200",
                  "--metric-col", "lr")
    assert proc.returncode == 0, proc.stderr
    assert result.cube == tmp_path / "api.nc"
    api, cli = initmem.open_cube(result.cube), initmem.open_cube(tmp_path / "cli.nc")
    api.attrs.pop("created", None)
    cli.attrs.pop("created", None)
    xr.testing.assert_identical(api, cli)
    xr.testing.assert_identical(result.dataset.drop_attrs(), api.drop_attrs())
    assert [f"  {n}" for n in result.notes] == proc.stdout.splitlines()[:-1]
    assert int(api["selected_test_correct"].sel(pipeline="adam", sigma_w=2.0, seed=1)) == 100 + 7 * 11


@pytest.mark.parametrize("options,message", [
    ({"format": "excel"}, "format must be one of auto, csv, wandb, mlflow, tensorboard (got 'excel')"),
    ({"metric_cols": "lr"}, "metric_cols takes a list of column names (got the string 'lr')"),
    ({"seeds": "shared"}, "seeds must be paired or independent, not 'shared'"),
])
def test_import_table_refuses_a_bad_option_naming_it(tmp_path, options, message):
    source = _long_csv(tmp_path / "runs.csv")
    with pytest.raises(UserError, match=re.escape(message)):
        initmem.import_table(source, tmp_path / "c.nc", **{"seeds": "paired", **options})
    assert not (tmp_path / "c.nc").exists()


# --- a renamed public name keeps working for one release ------------------------------------------------------

def test_the_old_collect_name_still_works_with_a_deprecation_warning(tmp_path):
    import initmem.collect
    from initmem.collect.execution import runner
    from initmem.tests._collect_fake import fake_train_pack
    from initmem.tests._collect_util import FAKE_GRID

    with pytest.warns(DeprecationWarning, match=r"initmem\.collect\.collect is deprecated .* use "
                                                r"initmem\.collect_cube"):
        old = initmem.collect.collect
    assert old is runner.collect and "collect" not in dir(initmem.collect)
    assert initmem.collect.collect_cube is initmem.collect_cube
    with pytest.warns(DeprecationWarning):                       # every use warns, not only the first
        from initmem.collect import collect
    (tmp_path / "fake.yaml").write_text(FAKE_GRID)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                           # the call itself: the old keywords, no warning
        path = collect(tmp_path / "fake.yaml", tmp_path / "run", device="cpu", progress=False, quiet=True,
                       pack_size=3, train_fn=fake_train_pack)
    assert path == tmp_path / "run" / "cube.nc"
    assert initmem.open_cube(path).sizes["seed"] == 2


def test_a_summary_reads_at_a_glance_and_as_a_tidy_frame(tmp_path):
    from initmem.results import load_summary
    from initmem.tests._report_fixture import small_cube, write_analysis

    s = load_summary(write_analysis(small_cube(), tmp_path))
    text = repr(s)
    assert len(text) < 2000 and text == str(s)
    lines = text.splitlines()
    assert lines[0].startswith("Summary: selected_test_acc, delta = 1 points") and len(lines) == 1 + len(s.pipelines)
    for name, p in s.pipelines.items():
        line = next(ln for ln in lines[1:] if ln.split()[0] == name)
        assert p.verdict in line and f"{100 * p.spread.median:.2f} [{100 * p.spread.q05:.2f}" in line  # points
    assert "<table>" in s._repr_html_() and all(name in s._repr_html_() for name in s.pipelines)
    frame = s.to_frame()
    assert list(frame.columns) == ["pipeline", "verdict", "borderline", "quantity", "median", "q05", "q95"]
    assert not frame.duplicated(["pipeline", "quantity"]).any()                     # one row per pipeline and quantity
    spread = frame[frame.quantity == "spread"].set_index("pipeline")
    assert all(spread.loc[n, "median"] == p.spread.median for n, p in s.pipelines.items())

"""Edges of ``initmem run`` and ``initmem export`` found by a user test: the reproduction block of a sequential
run, outputs that cannot be written, stale files in a reused export folder, run's own wording of collect's
errors, --looks without --until-decided, a fixed run over a sequential analysis, the interpolation gate's
share in "no pipeline can be analyzed", and a grid folder given to report/export."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from initmem import cube
from initmem import results as R
from initmem.analysis.run import SEQUENTIAL_ASIDE, run_all
from initmem.errors import UserError
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._collect_fake import fake_train_pack
from initmem.tests._collect_util import FAKE_GRID
from initmem.tests._report_fixture import small_cube, write_analysis


def _fake_analysis(decide_at: dict[str, tuple[int, str]], *, replace: bool = True):
    """An analysis stand-in: pipeline p gets verdict v once the cube holds n seeds, (n, v) = decide_at[p].
    ``replace=False`` writes its files into the folder as ``analyze_cube`` does (other files stay)."""

    def analyze(cube_path: Path, out_dir: Path, **kw) -> R.Summary:
        ds = cube.open_cube(cube_path)
        n = int((ds[cube.STATUS] == cube.OK).any((cube.PIPELINE, cube.SIGMA)).sum())
        verdicts = {p: (v if n >= at else "undecided") for p, (at, v) in decide_at.items()}
        tmp = Path(out_dir).parent / "_tmp"
        write_analysis(ds, tmp, verdicts=verdicts, with_curves=False, write_cube=False,
                       edit=lambda s: setattr(s, "command", ["initmem", "run", "fake.yaml"]))
        if replace:
            shutil.rmtree(out_dir, ignore_errors=True)
            shutil.move(tmp / "analysis", out_dir)
        else:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            for f in (tmp / "analysis").iterdir():
                shutil.copyfile(f, Path(out_dir) / f.name)
        shutil.rmtree(tmp)
        return R.load_summary(out_dir)

    return analyze


@pytest.fixture(scope="module")
def sequential_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("seq")
    grid = root / "fake.yaml"
    grid.write_text(FAKE_GRID)
    analyze = _fake_analysis({"sgd": (2, "forgets"), "adam": (4, "remembers")})
    res = run_all(grid, root / "run", quiet=True, train_fn=fake_train_pack, analyze_fn=analyze,
                  looks=[2, 4, 6], analyze_options={"draws": 200})
    return root, res


# 1. reproduce.md of a sequential run

@pytest.mark.slow
def test_reproduce_of_a_sequential_run_repeats_its_design_with_the_exported_grid(sequential_run, tmp_path):
    _, res = sequential_run
    out = tmp_path / "paper"
    proc = invoke("export", res.analysis_dir, "--out", out, "--format", "png")
    assert proc.returncode == 0, proc.stderr
    text = (out / "reproduce.md").read_text()
    assert (out / "grid.yaml").is_file()
    assert "initmem run grid.yaml --until-decided --looks 2,4,6 --draws 200" in text, text
    assert "default options" not in text
    assert "fake.yaml" not in text.replace("recorded as: initmem run fake.yaml", "")


@pytest.mark.slow
def test_reproduce_of_an_analyze_made_analysis_names_no_default_options(tmp_path):
    analysis = write_analysis(small_cube(), tmp_path / "r")
    from initmem.reports.export import export_analysis

    export_analysis(analysis, tmp_path / "paper", formats="png")
    text = (tmp_path / "paper" / "reproduce.md").read_text()
    assert "default options" not in text and "initmem analyze" in text


# 2. outputs that cannot be written

@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    return write_analysis(small_cube(), tmp_path_factory.mktemp("a") / "run")


def test_unwritable_export_folders_are_user_errors(analysis, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_user_error(invoke("export", analysis, "--out", afile / "sub", "--format", "png"), str(afile / "sub"))
    assert_user_error(invoke("export", analysis, "--out", "/proc/initmem-x", "--format", "png"), "/proc/initmem-x")


@pytest.mark.slow
def test_unwritable_report_paths_are_user_errors(analysis, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_user_error(invoke("report", analysis, "-o", afile / "x.html"), str(afile / "x.html"))


# 3. an export into a folder that holds another export

@pytest.mark.slow
def test_a_second_export_removes_the_first_ones_stale_files_but_not_the_users(analysis, tmp_path):
    out = tmp_path / "paper"
    assert invoke("export", analysis, "--out", out, "--format", "pdf").returncode == 0
    (out / "figures" / "mine.pdf").write_text("a file of the user's")
    (out / "notes.txt").write_text("mine")
    other = write_analysis(small_cube(curves=False), tmp_path / "other")   # fewer figures: no curves
    proc = invoke("export", other, "--out", out, "--format", "svg")
    assert proc.returncode == 0, proc.stderr
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert not [f for f in figures if f.endswith((".pdf", ".png")) and f != "mine.pdf"], figures
    assert "mine.pdf" in figures and (out / "notes.txt").is_file()
    index = (out / "index.md").read_text()
    listed = {line[3:-1] for line in index.splitlines() if line.startswith("- `")}
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"figures/mine.pdf", "notes.txt"}
    assert listed == on_disk
    assert "Removed" in index


# 4. collect's errors in run's words

@pytest.mark.slow
def test_a_changed_grid_suggests_another_grid_folder_not_force_new(tmp_path):
    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID)
    analyze = _fake_analysis({"sgd": (2, "forgets"), "adam": (2, "remembers")})
    run_all(grid, tmp_path / "run", quiet=True, train_fn=fake_train_pack, analyze_fn=analyze)
    changed = yaml.safe_load(FAKE_GRID)
    changed["sigma_w"] = [0.5, 1]
    grid.write_text(yaml.safe_dump(changed))
    with pytest.raises(UserError) as exc:
        run_all(grid, tmp_path / "run", quiet=True, train_fn=fake_train_pack, analyze_fn=analyze)
    assert "force_new" not in str(exc.value) and "another grid folder" in str(exc.value), str(exc.value)


# 5. --looks alone

def test_looks_without_until_decided_is_refused(tmp_path):
    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID)
    assert_user_error(invoke("run", grid, "--out", tmp_path / "r", "--looks", "2,3"), "--looks", "--until-decided")


# 6. a fixed run over a sequential analysis

@pytest.mark.slow
def test_a_fixed_run_over_a_sequential_analysis_says_so_and_sets_its_looks_aside(tmp_path):
    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID.replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3]"))
    analyze = _fake_analysis({"sgd": (2, "forgets"), "adam": (4, "remembers")}, replace=False)
    run = tmp_path / "run"
    run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze, looks=[2, 4])
    assert (run / "analysis" / "sequential.json").is_file() and (run / "analysis" / "looks").is_dir()
    said: list[str] = []
    res = run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze, say=said.append)
    notes = [m for m in said if "holds a sequential analysis" in m]
    assert len(notes) == 1 and "One design's verdicts" in notes[0], said
    left = {p.name for p in res.analysis_dir.iterdir()}
    assert not left & {"sequential.json", "look.json", "looks"}, left
    assert R.load_summary(res.analysis_dir).sequential is None
    assert (run / SEQUENTIAL_ASIDE / "sequential.json").is_file()
    said.clear()
    run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze, say=said.append)
    assert not [m for m in said if "sequential analysis" in m], said       # now fixed: reused, no note


@pytest.mark.slow
def test_a_fixed_run_with_fewer_seeds_than_the_sequential_looks_says_the_three_ways_on(tmp_path):
    grid = tmp_path / "fake.yaml"
    grid.write_text(FAKE_GRID)                                   # seeds [0, 1]; the looks go to 4
    analyze = _fake_analysis({"sgd": (2, "forgets"), "adam": (4, "remembers")}, replace=False)
    run = tmp_path / "run"
    run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze, looks=[2, 4])
    summary_before = (run / "analysis" / "summary.json").read_bytes()
    with pytest.raises(UserError) as exc:
        run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze)
    msg = str(exc.value)
    assert "added seeds 2, 3" in msg and "until_decided" in msg and "seeds: [0, 1, 2, 3]" in msg, msg
    assert "another grid folder" in msg and "removed" not in msg, msg
    assert (run / "analysis" / "summary.json").read_bytes() == summary_before      # nothing touched
    grid.write_text(FAKE_GRID.replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3]"))    # the fixed design it suggests
    res = run_all(grid, run, quiet=True, train_fn=fake_train_pack, analyze_fn=analyze)
    ds = cube.open_cube(res.cube)
    assert bool((ds[cube.STATUS] == cube.OK).all()), "every pipeline has all four seeds"


# 7. the interpolation gate excluded every run

def test_no_interpolating_run_says_the_gate_excluded_them(tmp_path):
    ds = small_cube(curves=False)
    ds[cube.TAU_INTERP][:] = np.nan
    path = cube.write_cube(ds, tmp_path / "cube.nc")
    proc = invoke("analyze", path, "--out", tmp_path / "a", "--draws", "50", "--tune", "50", "--chains", "2")
    assert_user_error(proc, "did not reach the interpolation threshold", "--gate all")


# 8. a grid folder where an analysis folder belongs

def test_report_and_export_of_a_grid_folder_name_its_analysis_folder(analysis, tmp_path):
    run = analysis.parent
    assert_user_error(invoke("report", run), f"give {run / 'analysis'}")
    assert_user_error(invoke("export", run, "--out", tmp_path / "p"), f"give {run / 'analysis'}")

"""The README's ten-line tutorial, run verbatim from an empty folder outside the clone.

The documentation site's home page (docs/index.md) shows the same lines.

The commands are read from README.md itself, so the test fails as soon as the README and the command line
drift apart. Every line runs as written but the one that trains the demo's full grid (minutes of training):
that line is checked to name a packaged grid (``--preset``), so that it too runs from any folder. The
tutorial's simulated preset promises its verdicts at the tutorial's own settings (``initmem simulate
--list-presets``); the analysis must deliver them, read against the truth stored in the cube.

Cost: the analysis line compiles the memory model's sampler for a 4 x 6 x 6 cube, the suite's small shape
(models/designs.py), which the session's compile cache shares with the other tests; alone, the test takes
about a minute, most of it that compile.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

from initmem import cube
from initmem.grid import PRESETS
from initmem.simulate import DESIGNS, read_truth

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Ten-line tutorial"


def tutorial_lines(readme: str) -> list[str]:
    """The command lines of the README tutorial's first bash block, comments and blank lines left out."""
    start = readme.index(SECTION)
    end = readme.find("\n## ", start + len(SECTION))
    section = readme[start:end if end >= 0 else None]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the tutorial has no bash block"
    return [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def words(line: str) -> list[str]:
    """The shell words of ``line`` up to its trailing comment."""
    return shlex.split(line, comments=True)


def flag_value(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def is_full_training(argv: list[str]) -> bool:
    return argv[:2] == ["initmem", "run"]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return tutorial_lines((ROOT / "README.md").read_text())


def test_the_documentation_site_shows_the_same_tutorial(lines):
    assert tutorial_lines((ROOT / "docs" / "index.md").read_text()) == lines


def test_the_training_line_names_a_packaged_grid_and_is_the_only_one_left_out(lines):
    trains = [words(ln) for ln in lines if is_full_training(words(ln))]
    assert len(trains) == 1, trains
    argv = trains[0]
    assert flag_value(argv, "--preset") in PRESETS, argv          # no grid file: it runs from any folder
    assert not [w for w in argv[2:] if w.endswith((".yaml", ".yml"))], argv
    assert not any(ln.lstrip().startswith(("source", "cd ")) for ln in lines), lines   # nothing tied to the clone


def test_the_tutorial_preset_is_run_at_the_settings_its_description_names(lines):
    argv = next(words(ln) for ln in lines if words(ln)[:2] == ["initmem", "simulate"] and "--preset" in words(ln))
    preset = flag_value(argv, "--preset")
    description = DESIGNS[preset][0]
    analyze = next(words(ln) for ln in lines if words(ln)[:2] == ["initmem", "analyze"])
    for flag, command in (("--n-test", argv), ("--delta", analyze)):
        named = re.search(rf"{flag} (\S+)", description)
        if named:
            assert flag_value(command, flag) == named.group(1), (flag, description, command)


@pytest.mark.slow
def test_the_readme_tutorial_runs_verbatim_from_an_empty_folder(lines, tmp_path):
    folder = tmp_path / "tutorial"
    folder.mkdir()
    assert ROOT not in folder.resolve().parents and not any(folder.iterdir())
    bin_dir = str(Path(sys.executable).parent)        # where the install put the `initmem` command
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "PYTHONWARNINGS": "ignore"}
    outputs = {}
    for line in lines:
        if is_full_training(words(line)):
            continue
        proc = subprocess.run(["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        outputs[line] = proc.stdout

    listed = next(out for ln, out in outputs.items() if "--list-presets" in ln)
    simulate = next(words(ln) for ln in lines if words(ln)[:2] == ["initmem", "simulate"] and "--preset" in words(ln))
    assert flag_value(simulate, "--preset") in listed

    analyze = next(words(ln) for ln in lines if words(ln)[:2] == ["initmem", "analyze"])
    cube_path, analysis = folder / analyze[2], folder / flag_value(analyze, "--out")
    with xr.open_dataset(cube_path) as ds:
        truth = read_truth(ds)["pipelines"]
    summary = json.loads((analysis / "summary.json").read_text())
    verdicts = {name: entry["verdict"] for name, entry in summary["pipelines"].items()}
    promised = {name: "forgets" if t["sigma_sd"] == 0 else "remembers" for name, t in truth.items()}
    assert verdicts == promised, (verdicts, promised)
    said = re.search(r"(\d+) remember, (\d+) forget", next(ln for ln in lines if words(ln)[:2] == analyze[:2]))
    if said:                                                      # the line's comment counts the verdicts
        counts = [sum(v == word for v in verdicts.values()) for word in ("remembers", "forgets")]
        assert counts == [int(said.group(1)), int(said.group(2))], (said.group(0), verdicts)
    assert {"remembers", "forgets"} <= set(promised.values())     # the tutorial shows both kinds of verdict
    assert (analysis / "report.html").stat().st_size > 0

    imported = next(words(ln) for ln in lines if words(ln)[:2] == ["initmem", "import"])
    table = cube.open_cube(folder / flag_value(imported, "--out"))
    assert table.sizes[cube.PIPELINE] >= 1 and int((table[cube.STATUS] == cube.OK).sum()) > 0

"""The install fits a user's environment: torch is a range, the versions tested are exact in constraints.txt.

A GPU cluster brings its own CUDA build of torch. The package must accept it (pip keeps it), while `make` and
CI install exactly what the suite ran with (constraints.txt).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def _dependencies() -> dict[str, Requirement]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    return {Requirement(d).name: Requirement(d) for d in deps}


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins every package exactly: {line!r}"
            pins[name.lower()] = version
    return pins


def test_torch_is_a_range_that_holds_the_tested_and_the_cluster_builds():
    deps, pins = _dependencies(), _constraints()
    for name in ("torch", "torchvision"):
        assert len(deps[name].specifier) == 2, f"{name} is a range, not a pin"
        assert deps[name].specifier.contains(pins[name]), name         # the suite's own version
    assert deps["torch"].specifier.contains("2.11.0+cu130", prereleases=False)   # the GPU checks' build
    assert not deps["torch"].specifier.contains("2.15.0")                          # not past what was tested


def test_this_environment_is_the_constraints_one():
    pins = _constraints()
    for name in ("torch", "torchvision", "pymc", "nutpie", "arviz", "numpy", "xarray"):
        assert metadata.version(name) == pins[name], name


@pytest.mark.slow
def test_pip_keeps_a_users_torch_in_the_range(tmp_path):
    # A venv that already holds torch 2.13.0 and its torchvision (metadata only: pip's resolver reads nothing
    # else); pip's dry run of initmem's requirements installs neither again.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    held = (("torch", "2.13.0", ""), ("torchvision", "0.28.0", "Requires-Dist: torch==2.13.0\n"))
    for name, version, requires in held:
        info = site / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}")
        (info / "INSTALLER").write_text("pip\n")
        (info / "RECORD").write_text("")
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("\n".join(str(r) for r in _dependencies().values()) + "\n")
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--dry-run", "--quiet", "--report", str(report), "-r", str(reqs)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    planned = {i["metadata"]["name"].lower(): i["metadata"]["version"]
               for i in json.loads(report.read_text())["install"]}
    assert "torch" not in planned and "torchvision" not in planned, planned
    assert "pymc" in planned          # the dry run did resolve the rest

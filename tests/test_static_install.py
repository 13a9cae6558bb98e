"""The typed API in the install that ``make install`` makes: mypy, run in that environment with nothing but the
installed package to go on (no MYPYPATH, run outside this folder), reads initmem's real signatures, so a wrong
type and a misspelt keyword in a call to ``initmem.analyze`` are errors before anything runs.

An editable install through an import hook would leave mypy with "Cannot find implementation or library stub for
module named 'initmem'" and every call unchecked (the Makefile's install target says why it installs a path)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''\
import initmem

initmem.analyze("c.nc", "out", delta="0.02")
initmem.analyze("c.nc", "out", chain=2)
summary = initmem.analyze("c.nc", "out", delta=0.02, chains=2)
reveal_type(summary)
'''


@pytest.mark.slow
def test_mypy_in_the_installed_environment_catches_a_wrong_call(tmp_path):
    script = tmp_path / "notebook_cell.py"
    script.write_text(SNIPPET)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    res = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                          "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", script.name],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    out = res.stdout + res.stderr
    assert "Cannot find implementation or library stub" not in out, "initmem is invisible to mypy: " + out
    errors = dict(re.findall(rf"^{script.name}:(\d+): error: (.*)$", out, re.M))
    assert set(errors) == {"3", "4"}, out
    assert 'Argument "delta"' in errors["3"] and 'incompatible type "str"' in errors["3"], out
    assert 'Unexpected keyword argument "chain"' in errors["4"] and 'did you mean "chains"' in errors["4"], out
    assert re.search(rf'^{script.name}:6: note: Revealed type is "initmem\.results\.records\.Summary"', out, re.M), out

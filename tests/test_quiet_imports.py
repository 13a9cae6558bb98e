"""The analysis's imports print nothing a user must read past: ArviZ's once-a-day refactor notice is filtered.

ArviZ keys that notice on a stamp file in the user's cache folder, so each check runs with a fresh, empty
cache folder (XDG_CACHE_HOME): without the filter the notice would print, as the control shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTICE = "ArviZ is undergoing a major refactor"


def _stderr(code: str, cache: Path) -> str:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONWARNINGS": "default"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=True)
    return done.stderr


def test_arviz_notice_is_filtered_once_the_models_package_is_imported(tmp_path: Path) -> None:
    if NOTICE not in _stderr("import arviz", tmp_path / "control"):
        pytest.skip("this ArviZ prints no refactor notice: nothing to filter")
    assert NOTICE not in _stderr("import initmem.models, arviz", tmp_path / "fresh")

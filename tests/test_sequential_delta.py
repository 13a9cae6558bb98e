"""delta is part of a sequential design: a rerun of a sequential folder at another delta is refused.

Every look's tests ("spread above delta", "every pair inside +-delta") were fixed with the folder's delta before
any seed was seen; re-deciding the same seeds at another delta after seeing the verdicts is a change of design
whose false-verdict rate nothing bounds (docs/sequential.md, "One design per folder")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from initmem import results as R
from initmem.analysis.sequential import SEQUENTIAL_JSON, check_same_design
from initmem.errors import OptionError
from initmem.models.sequential import SEQUENTIAL_DESIGN
from initmem.names import ALPHA


def _folder(tmp_path: Path, delta: float | None) -> Path:
    folder = tmp_path / R.RUN_ANALYSIS_DIR
    folder.mkdir(parents=True)
    record = {"design": SEQUENTIAL_DESIGN, "alpha": ALPHA, "looks": [4, 8], "max_seeds": None, "delta": delta}
    (folder / SEQUENTIAL_JSON).write_text(json.dumps(record))
    return tmp_path


def test_another_delta_is_refused_and_the_same_one_continues(tmp_path: Path) -> None:
    out = _folder(tmp_path / "two", 0.02)
    check_same_design(out, [4, 8], None, SEQUENTIAL_DESIGN, ALPHA, 0.02)          # the same design: continues
    with pytest.raises(OptionError, match=r"delta 0\.02 \(now the default\)"):
        check_same_design(out, [4, 8], None, SEQUENTIAL_DESIGN, ALPHA, None)
    with pytest.raises(OptionError, match=r"delta 0\.02 \(now 0\.01\)"):
        check_same_design(out, [4, 8], None, SEQUENTIAL_DESIGN, ALPHA, 0.01)
    default = _folder(tmp_path / "default", None)
    check_same_design(default, [4, 8], None, SEQUENTIAL_DESIGN, ALPHA, None)
    with pytest.raises(OptionError, match=r"delta the default \(now 0\.02\)"):
        check_same_design(default, [4, 8], None, SEQUENTIAL_DESIGN, ALPHA, 0.02)

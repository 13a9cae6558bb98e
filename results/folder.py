"""The analysis folder: its layout and the only code that reads or writes its JSON.

``initmem analyze`` writes an analysis folder; ``initmem report``, ``initmem plan`` and the command
line read it. What ``summary.json`` and ``collapse.json`` hold is typed in :mod:`initmem.results.records`
(re-exported here, so ``results.Summary`` keeps working); this module builds records from the
statistics' dicts, writes them atomically and reads them back. Writers validate what they are given,
so a producer that drifts fails where it writes; readers refuse an unknown schema with one line
instead of guessing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from initmem.errors import UserError, option
from initmem.jsonio import json_safe, write_json
from initmem.names import (
    COLLAPSE_JSON,
    SUMMARY_JSON,
)
from initmem.results.records import (
    COLLAPSE_SCHEMA,
    SUMMARY_SCHEMA,
    CollapseResult,
    Rec,
    Summary,
)

# Layout, curves.nc variables, verdicts and diagnostics goals are owned by initmem/names.py (imported above).
T_FIT = "T_fit"  # the collapse test's fitted clock: an axis of collapse.json, not a cube variable


# Building and reading records ---------------------------------------------------------------

def _one_line_validation(where: str, exc: ValidationError) -> UserError:
    """A pydantic error as one line: the first problem's location and message, and the count."""
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(str(x) for x in first["loc"]) or "(top level)"
    more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
    return UserError(f"{where}: {loc}: {first['msg']}{more}")


def _build(model: type[Rec], schema: str, data: dict[str, Any]) -> Rec:
    try:
        return model.model_validate({**json_safe(data), "schema": schema})
    except ValidationError as exc:  # pragma: no cover - reached only when a producer drifts
        raise ValueError(f"{model.__name__} does not match {schema}: {exc}") from exc


def build_summary(data: dict[str, Any]) -> Summary:
    """Validate an analysis's summary dict into a record; a mismatch is a bug in the producer."""
    return _build(Summary, SUMMARY_SCHEMA, data)


def build_collapse(data: dict[str, Any]) -> CollapseResult:
    """Validate a collapse-test dict (``stats.collapse.collapse_test``) into a record."""
    return _build(CollapseResult, COLLAPSE_SCHEMA, data)


def write_summary(out_dir: str | os.PathLike, summary: Summary) -> Path:
    """Write ``DIR/summary.json`` atomically (NaN -> null)."""
    return write_json(Path(out_dir) / SUMMARY_JSON, summary.to_json())


def write_collapse(out_dir: str | os.PathLike, collapse: CollapseResult) -> Path:
    """Write ``DIR/collapse.json`` atomically (NaN -> null)."""
    return write_json(Path(out_dir) / COLLAPSE_JSON, collapse.to_json())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except OSError as exc:
        raise UserError(f"{path} cannot be read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a JSON object")
    return data


def _load(path: Path, model: type[Rec], schema: str) -> Rec:
    """Read one JSON file of the folder: another schema or a mistyped field is one line."""
    data = _read_json(path)
    found = data.get("schema")
    if found != schema:
        shown = found if isinstance(found, str) and found else "missing"
        raise UserError(f"{path} is schema {shown}; this initmem reads {schema}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _one_line_validation(f"{path} does not match {schema}", exc) from None


def check_folder(analysis_dir: str | os.PathLike) -> Path:
    """The folder as a path; a missing folder or summary is a user error saying what to run."""
    d = Path(analysis_dir)
    if not d.is_dir():
        raise UserError(f"no such analysis folder: {d} (analyze a cube into it first, {option('out', str(d))})")
    if not (d / SUMMARY_JSON).is_file():
        raise UserError(f"{d} has no {SUMMARY_JSON}: analyze a cube into it first ({option('out', str(d))})")
    return d


def load_summary(analysis_dir: str | os.PathLike) -> Summary:
    """``DIR/summary.json`` as a record; bad or foreign files raise ``UserError`` with one line."""
    path = check_folder(analysis_dir) / SUMMARY_JSON
    summary = _load(path, Summary, SUMMARY_SCHEMA)
    if not summary.pipelines:
        raise UserError(f"{path} lists no pipelines")
    return summary


def load_collapse(analysis_dir: str | os.PathLike) -> CollapseResult | None:
    """``DIR/collapse.json`` as a record, or None when the cube had no curves."""
    path = Path(analysis_dir) / COLLAPSE_JSON
    return _load(path, CollapseResult, COLLAPSE_SCHEMA) if path.is_file() else None


def attach_forgetting_times(summary: Summary, collapse: CollapseResult) -> None:
    """Copy each pipeline's forgetting time per axis from the collapse test into its summary entry,
    so a reader of summary.json alone sees on which clock the pipelines forget alike."""
    for axis, times in collapse.forgetting_times.items():
        for pipe, t in times.per_pipeline.items():
            if pipe in summary.pipelines:
                summary.pipelines[pipe].forgetting_time[axis] = t.model_copy()


def sigma_key(sigma_w: float) -> str:
    """The key of a sigma_w level in ``by_sigma_w`` maps: ``repr(float(sigma_w))`` ("0.25", "1.0")."""
    return repr(float(sigma_w))



"""JSON outputs (summary.json, collapse.json): strict JSON, written atomically.

Statistics produce NaN for what they could not compute and numpy scalars everywhere; strict
JSON has neither, so every writer goes through :func:`json_safe` (NaN and infinities -> null).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from initmem.atomic import write_text


def json_safe(obj: Any) -> Any:
    """A copy of ``obj`` that ``json.dumps(..., allow_nan=False)`` accepts."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented strict JSON, atomically."""
    return write_text(path, json.dumps(json_safe(obj), indent=2, allow_nan=False) + "\n")

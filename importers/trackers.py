"""Tracker exports as long tables: W&B runs CSV exports, MLflow file stores, TensorBoard logs.

Each reader uses the tracker's own file format and, where one exists, its own reader (MLflow's
``MlflowClient`` on a ``file:`` store, TensorBoard's ``EventAccumulator``), imported only when
that source is read, so ``import initmem`` works without them; a missing reader is one error
line naming the ``trackers`` extra. The W&B export is a plain CSV that no library writes: its
run metadata columns (Name, State, ...) are dropped and State becomes the run status. A
:class:`Mapping` says which column or config key is the pipeline, sigma_w and seed
(docs/import.md); everything else then goes through the same column rules as a CSV.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from initmem import cube
from initmem.errors import UserError, option

FORMATS = ("csv", "wandb", "mlflow", "tensorboard")
EXTRA = "initmem[trackers]"
# Columns of the W&B runs table that describe the run rather than its config or results.
WANDB_META = ("Name", "State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", "ID", "Group",
              "Job Type", "Hostname", "Commit", "GitHub", "GPU Type", "GPU Count", "Runtime (s)")
WANDB_STATUS = {"finished": cube.OK, "crashed": cube.FAILED, "failed": cube.FAILED, "killed": cube.FAILED,
                "running": cube.MISSING, "pending": cube.MISSING}
MLFLOW_STATUS = {"FINISHED": cube.OK, "FAILED": cube.FAILED, "KILLED": cube.FAILED, "RUNNING": cube.MISSING,
                 "SCHEDULED": cube.MISSING}
MLFLOW_FILE_STORE_ENV = "MLFLOW_ALLOW_FILE_STORE"
MAP_KEYS = (cube.PIPELINE, cube.SIGMA, cube.SEED, cube.EPOCH)


@dataclass(frozen=True)
class Mapping:
    """Which source column (or config key, or TensorBoard folder key) holds each key of the cube."""

    pipeline: str | None = None
    sigma_w: str | None = None
    seed: str | None = None
    epoch: str | None = None
    metrics: tuple[str, ...] = ()
    ignore: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def load(cls, path: Path | None) -> Mapping:
        """From a small YAML file (keys pipeline, sigma_w, seed, epoch, metrics, ignore); empty without one."""
        if path is None:
            return cls()
        try:
            data = yaml.safe_load(Path(path).read_text())
        except OSError as exc:
            raise UserError(f"cannot read the mapping {path}: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            raise UserError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise UserError(f"{path}: the mapping must be a YAML mapping such as 'pipeline: optimizer'")
        allowed = (*MAP_KEYS, "metrics", "ignore")
        unknown = sorted(set(map(str, data)) - set(allowed))
        if unknown:
            raise UserError(f"{path}: unknown mapping key(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")

        def names(v: Any) -> tuple[str, ...]:
            return tuple(str(x) for x in ([v] if isinstance(v, str) else (v or [])))

        return cls(**{k: (str(data[k]) if data.get(k) is not None else None) for k in MAP_KEYS},
                   metrics=names(data.get("metrics")), ignore=names(data.get("ignore")))

    def override(self, *, pipeline: str | None = None, sigma_w: str | None = None, seed: str | None = None,
                 metrics: tuple[str, ...] = (), ignore: tuple[str, ...] = ()) -> Mapping:
        """Command-line options win over the file's."""
        return replace(self, pipeline=pipeline or self.pipeline, sigma_w=sigma_w or self.sigma_w,
                       seed=seed or self.seed, metrics=(*self.metrics, *metrics), ignore=(*self.ignore, *ignore))

    def apply(self, df: pd.DataFrame, source: str) -> pd.DataFrame:
        """Rename the mapped columns to the cube's key names."""
        rename = {}
        for key in MAP_KEYS:
            col = getattr(self, key)
            if col is None or col == key:
                continue
            if col not in df.columns:
                raise UserError(f"{source}: the mapping says {key} is '{col}', but there is no such column "
                                f"(columns: {', '.join(map(str, df.columns[:20]))})")
            if key in df.columns:
                raise UserError(f"{source}: both '{col}' (mapped to {key}) and '{key}' are columns; "
                                f"drop one with {option('ignore_cols', key)}")
            rename[col] = key
        return df.rename(columns=rename)


def read_source(path: Path, fmt: str, mapping: Mapping) -> tuple[pd.DataFrame, str]:
    """(long table, label for messages) of ``path`` read as ``fmt`` (``auto``: by its look)."""
    from initmem.importers.table import read_table

    path = Path(path)
    if not path.exists():
        raise UserError(f"no such table or folder: {path}")
    if fmt == "auto":
        fmt = _detect(path)
    if fmt in ("csv", "wandb"):
        df = read_table(path)
        if fmt == "wandb":
            df = wandb_frame(df, str(path))
    elif fmt == "mlflow":
        df = mlflow_frame(path)
    else:
        df = tensorboard_frame(path)
    df = df.drop(columns=[c for c in mapping.ignore if c in df.columns and c not in mapping.metrics])
    return mapping.apply(df, str(path)), str(path)


def _detect(path: Path) -> str:
    if path.is_file():
        try:
            head = pd.read_csv(path, nrows=0).columns
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
            return "csv"
        return "wandb" if {"Name", "State"} <= set(map(str, head)) else "csv"
    if next(path.rglob("events.out.tfevents.*"), None) is not None:
        return "tensorboard"
    if next(path.glob("*/meta.yaml"), None) is not None or next(path.glob("mlruns/*/meta.yaml"), None):
        return "mlflow"
    raise UserError(f"{path}: a folder with neither TensorBoard event files nor an MLflow store (meta.yaml); "
                    f"give a CSV table or {option('format')}")


def _need(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"reading {what} needs the optional readers: pip install '{EXTRA}'") from None


# W&B -----------------------------------------------------------------------------------------

def wandb_frame(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The W&B UI's runs-table export: metadata dropped, State -> status, config and summary kept."""
    if "State" not in df.columns:
        raise UserError(f"{source}: not a W&B runs export (no State column)")
    states = df["State"].astype(str).str.strip().str.lower()
    unknown = sorted(set(states) - set(WANDB_STATUS))
    if unknown:
        raise UserError(f"{source}: unknown W&B run state(s) {', '.join(unknown)}; known: {', '.join(WANDB_STATUS)}")
    out = df.drop(columns=[c for c in df.columns if c in WANDB_META or str(c).startswith("_")])
    out[cube.STATUS] = [cube.STATUS_NAMES[WANDB_STATUS[s]] for s in states]
    return out


# MLflow --------------------------------------------------------------------------------------

def mlflow_frame(path: Path) -> pd.DataFrame:
    """Every run of an MLflow file store: params as columns, metrics per step (one row per step)."""
    _need("mlflow", "an MLflow store")
    from mlflow.tracking import MlflowClient

    root = path / "mlruns" if (path / "mlruns").is_dir() else path
    # MLflow 3 keeps the file store in maintenance mode and refuses it unless opted in; reading an
    # existing mlruns/ folder is exactly what the opt-in is for (restored afterwards).
    old = os.environ.get(MLFLOW_FILE_STORE_ENV)
    os.environ[MLFLOW_FILE_STORE_ENV] = "true"
    try:
        return _mlflow_store_frame(MlflowClient(tracking_uri=root.resolve().as_uri()), path)
    finally:
        if old is None:
            os.environ.pop(MLFLOW_FILE_STORE_ENV, None)
        else:
            os.environ[MLFLOW_FILE_STORE_ENV] = old


def _mlflow_store_frame(client: Any, path: Path) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    runs_seen = 0
    for exp in client.search_experiments():
        token = None
        while True:
            page = client.search_runs([exp.experiment_id], max_results=1000, page_token=token)
            for run in page:
                runs_seen += 1
                rows += _mlflow_rows(client, run)
            token = page.token
            if not token:
                break
    if not runs_seen:
        raise UserError(f"{path}: the MLflow store holds no runs")
    return pd.DataFrame(rows)


def _mlflow_rows(client: Any, run: Any) -> list[dict[str, Any]]:
    base: dict[str, Any] = dict(run.data.params)
    base[cube.STATUS] = cube.STATUS_NAMES[MLFLOW_STATUS.get(run.info.status, cube.MISSING)]
    by_step: dict[int, dict[str, float]] = {}
    single: dict[str, float] = {}
    for key in run.data.metrics:
        hist = client.get_metric_history(run.info.run_id, key)
        steps = {m.step for m in hist}
        if len(steps) <= 1:
            single[key] = hist[-1].value if hist else math.nan
            continue
        for m in sorted(hist, key=lambda m: (m.step, m.timestamp)):
            by_step.setdefault(int(m.step), {})[key] = m.value
    if not by_step:
        return [{**base, **single}]
    return [{**base, cube.EPOCH: step, **vals, **single} for step, vals in sorted(by_step.items())]


# TensorBoard ---------------------------------------------------------------------------------

def tensorboard_frame(path: Path) -> pd.DataFrame:
    """Scalars of every run folder under ``path``; the event step is the epoch.

    A run's keys come from its folder path relative to ``path``: components (and comma-separated
    parts of them) of the form ``key=value``, e.g. ``pipeline=sgd/sigma_w=0.5/seed=0``. Tag
    separators become underscores (``val/acc`` -> ``val_acc``).
    """
    _need("tensorboard", "TensorBoard logs")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dirs = sorted({p.parent for p in path.rglob("events.out.tfevents.*")})
    if not run_dirs:
        raise UserError(f"{path}: no TensorBoard event files (events.out.tfevents.*)")
    rows: list[dict[str, Any]] = []
    for d in run_dirs:
        keys = _path_keys(d.relative_to(path), path)
        acc = EventAccumulator(str(d), size_guidance={"scalars": 0})
        acc.Reload()
        by_step: dict[int, dict[str, float]] = {}
        for tag in acc.Tags().get("scalars", []):
            name = tag.strip("/").replace("/", "_")
            for ev in acc.Scalars(tag):
                by_step.setdefault(int(ev.step), {})[name] = float(ev.value)
        rows += [{**keys, cube.EPOCH: step, **vals} for step, vals in sorted(by_step.items())]
    return pd.DataFrame(rows)


def _path_keys(rel: Path, root: Path) -> dict[str, str]:
    keys: dict[str, str] = {}
    for part in rel.parts:
        for token in part.split(","):
            if "=" not in token:
                raise UserError(f"{root}: run folder '{rel}' is not named key=value (e.g. "
                                "pipeline=sgd/sigma_w=0.5/seed=0), so its pipeline, sigma_w and seed are unknown")
            k, v = token.split("=", 1)
            keys[k.strip()] = v.strip()
    return keys

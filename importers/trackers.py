"""Tracker exports as long tables: W&B runs CSV exports, MLflow stores, TensorBoard logs.

Each reader uses the tracker's own file format and, where one exists, its own reader (MLflow's
``MlflowClient`` on a ``file:`` store, TensorBoard's ``EventAccumulator``), imported only when
that source is read, so ``import initmem`` works without them; a missing reader is one error
line naming the ``trackers`` extra. MLflow 3's default store is SQLite (``mlflow.db``); it is read
by a thin read-only reader of MLflow's documented tables (experiments, runs, params, metrics) with
the standard library's sqlite3, so reading one needs no MLflow and never migrates the user's file
(docs/import.md says why). The W&B export is a plain CSV that no library writes: its run metadata
columns (Name, State, ...) are dropped and State becomes the run status. A :class:`Mapping` says
which column or config key is the pipeline, sigma_w and seed (docs/import.md); everything else
then goes through the same column rules as a CSV.
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
SQLITE_SCHEME = "sqlite:"
SQLITE_MAGIC = b"SQLite format 3\x00"
# The tables of MLflow's SQL store that hold runs (mlflow/store/tracking/dbmodels/models.py in MLflow).
MLFLOW_TABLES = ("experiments", "runs", "params", "metrics")


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


def read_source(path: str | Path, fmt: str, mapping: Mapping) -> tuple[pd.DataFrame, str]:
    """(long table, label for messages) of ``path`` read as ``fmt`` (``auto``: by its look).

    ``path`` may also be an MLflow tracking URI ``sqlite:///FILE`` (relative) or ``sqlite:////FILE``
    (absolute)."""
    from initmem.importers.table import read_table

    label = str(path)
    if label.startswith(SQLITE_SCHEME):
        path = sqlite_uri_path(path)
        if fmt not in ("auto", "mlflow"):
            raise UserError(f"{label}: a sqlite URI is an MLflow store, not {option('format', fmt)}")
        fmt = "mlflow"
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such table or folder: {path}")
    if fmt == "auto":
        fmt = _detect(path)
    if fmt == "mlflow" and path.is_file():
        df = mlflow_sql_frame(path)
    elif fmt in ("csv", "wandb"):
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
    if path.is_file() and is_sqlite(path):
        return "mlflow"
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
    except UserError:
        raise
    except Exception as exc:  # MLflow raises MlflowException or bare Exception on a damaged store
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UserError(f"{path}: MLflow cannot read this store ({exc.__class__.__name__}: {first}); "
                        "check that the folder is an intact mlruns/ file store") from None
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
    history = {key: [(m.step, m.timestamp, m.value) for m in client.get_metric_history(run.info.run_id, key)]
               for key in run.data.metrics}
    return run_rows(dict(run.data.params), run.info.status, history)


def run_rows(params: dict[str, Any], status: str, history: dict[str, list[tuple[int, int, float]]]
             ) -> list[dict[str, Any]]:
    """One MLflow run as rows, the same for both stores: params as columns, the status mapped, a
    metric logged at several steps a curve (the step is the epoch), one logged once a per-run value.
    ``history`` maps a metric to its (step, timestamp, value) in logging order."""
    base: dict[str, Any] = dict(params)
    base[cube.STATUS] = cube.STATUS_NAMES[MLFLOW_STATUS.get(str(status), cube.MISSING)]
    by_step: dict[int, dict[str, float]] = {}
    single: dict[str, float] = {}
    for key, hist in history.items():
        steps = {step for step, _, _ in hist}
        if len(steps) <= 1:
            single[key] = hist[-1][2] if hist else math.nan
            continue
        for step, _, value in sorted(hist, key=lambda m: (m[0], m[1])):
            by_step.setdefault(int(step), {})[key] = value
    if not by_step:
        return [{**base, **single}]
    return [{**base, cube.EPOCH: step, **vals, **single} for step, vals in sorted(by_step.items())]


# MLflow SQL store (MLflow 3's default, mlflow.db) ---------------------------------------------

def sqlite_uri_path(uri: str | Path) -> Path:
    """The file of an MLflow ``sqlite:`` tracking URI.

    SQLAlchemy's form: ``sqlite:///mlflow.db`` is relative, ``sqlite:////abs/mlflow.db`` absolute.
    A ``Path`` (the command line's argument type) has collapsed the slashes to ``sqlite:/...``, so
    that form is read as absolute when that file exists, else relative to the working folder."""
    text = str(uri)[len(SQLITE_SCHEME):]
    if isinstance(uri, str):
        if not text.startswith("///"):
            raise UserError(f"{uri}: an MLflow sqlite URI reads sqlite:///relative.db or sqlite:////absolute.db")
        return Path(text[3:])
    rest = text.lstrip("/")
    absolute = Path("/" + rest)
    return absolute if absolute.exists() else Path(rest)


def is_sqlite(path: Path) -> bool:
    """Whether ``path`` is an SQLite database file (by its 16-byte header)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def mlflow_sql_frame(path: Path) -> pd.DataFrame:
    """Every active run of the active experiments of an MLflow SQL store, read-only, as
    :func:`mlflow_frame` reads a file store (same rows, same status mapping)."""
    import sqlite3

    if not is_sqlite(path):
        raise UserError(f"{path}: not an SQLite file, so not an MLflow store (mlflow.db)")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise UserError(f"{path}: cannot open the SQLite file ({exc})") from None
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [t for t in MLFLOW_TABLES if t not in tables]
        if missing:
            raise UserError(f"{path}: an SQLite file but not an MLflow store (no {', '.join(missing)} table)")
        runs = con.execute(
            "SELECT r.run_uuid, r.status FROM runs r JOIN experiments e ON r.experiment_id = e.experiment_id "
            "WHERE r.lifecycle_stage = 'active' AND e.lifecycle_stage = 'active' "
            "ORDER BY e.experiment_id, r.start_time, r.run_uuid").fetchall()
        params: dict[str, dict[str, str]] = {}
        for run, key, value in con.execute("SELECT run_uuid, key, value FROM params"):
            params.setdefault(run, {})[key] = value
        history: dict[str, dict[str, list[tuple[int, int, float]]]] = {}
        for run, key, value, ts, step, is_nan in con.execute(
                "SELECT run_uuid, key, value, timestamp, step, is_nan FROM metrics ORDER BY rowid"):
            history.setdefault(run, {}).setdefault(key, []).append(
                (int(step), int(ts), math.nan if is_nan else float(value)))
    except sqlite3.Error as exc:
        raise UserError(f"{path}: MLflow's tables cannot be read ({exc})") from None
    finally:
        con.close()
    if not runs:
        raise UserError(f"{path}: the MLflow store holds no runs")
    rows: list[dict[str, Any]] = []
    for run, status in runs:
        rows += run_rows(params.get(run, {}), status, history.get(run, {}))
    return pd.DataFrame(rows)


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

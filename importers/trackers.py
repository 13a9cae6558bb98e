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
from initmem.importers.columns import CURVE_ALIASES, RUN_ALIASES

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
# DataFrame.attrs key: the columns a reader found logged once per run (per-run values, not curves).
PER_RUN = "initmem_per_run"
# The plugin whose summary torch's SummaryWriter.add_hparams writes into a sub-folder of the run folder.
HPARAMS_PLUGIN = "hparams"


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
        return cls(**{k: _map_name(data.get(k), k, path) for k in MAP_KEYS},
                   metrics=_map_names(data.get("metrics"), "metrics", path),
                   ignore=_map_names(data.get("ignore"), "ignore", path))

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


def _shown(value: Any) -> str:
    """A YAML value as one short line for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _map_name(value: Any, key: str, path: Path) -> str | None:
    """One column name of a mapping file: YAML text (a number or a list there is a mistake, not a name)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{path}: mapping key '{key}' must be one column name (text), not {_shown(value)}")
    return value


def _map_names(value: Any, key: str, path: Path) -> tuple[str, ...]:
    """Column names of a mapping file: one name or a list of names."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) and x.strip() for x in items):
        raise UserError(f"{path}: mapping key '{key}' must be a column name or a list of column names "
                        f"(e.g. {key}: [a, b]), not {_shown(value)}")
    return tuple(items)


def read_source(path: str | Path, fmt: str, mapping: Mapping, notes: list[str] | None = None
                ) -> tuple[pd.DataFrame, str]:
    """(long table, label for messages) of ``path`` read as ``fmt`` (``auto``: by its look).

    ``path`` may also be an MLflow tracking URI ``sqlite:///FILE`` (relative) or ``sqlite:////FILE``
    (absolute). What the reader decided (a metric logged once read as a per-run value, an
    add_hparams folder merged into its run) is appended to ``notes``."""
    from initmem.importers.table import read_table

    notes = notes if notes is not None else []

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
        df = tensorboard_frame(path, notes)
    per_run = list(df.attrs.get(PER_RUN, ()))
    df = df.drop(columns=[c for c in mapping.ignore if c in df.columns and c not in mapping.metrics])
    df = _per_run_names(df, [c for c in per_run if c in df.columns and c not in mapping.metrics], str(path), notes)
    return mapping.apply(df, str(path)), str(path)


def _per_run_names(df: pd.DataFrame, per_run: list[str], source: str, notes: list[str]) -> pd.DataFrame:
    """Name the metrics logged once per run as a per-run table would when the source also has curves.

    A per-epoch table reads ``test_acc`` as a curve, so a ``test_acc`` logged once (at the end of
    training) would become a curve; it is the run's ``selected_test_acc``, as in a per-run table
    (docs/import.md). A cube curve (``train_loss``) logged once has no per-run meaning: refused."""
    if cube.EPOCH not in df.columns:
        return df  # a per-run table: the table's own aliases name them
    rename: dict[str, str] = {}
    for col in per_run:
        if col in RUN_ALIASES:
            new = RUN_ALIASES[col]
            other = next((c for c, n in rename.items() if n == new), new if new in df.columns else None)
            if other is not None:
                raise UserError(f"{source}: metrics '{other}' and '{col}' both mean '{new}' (each logged once per "
                                f"run); drop one with {option('ignore_cols', col)}")
            rename[col] = new
            notes.append(f"metric '{col}' is logged once per run: read as {new}, a per-run value")
        elif col in cube.CURVE_VARS or col in CURVE_ALIASES:
            raise UserError(f"{source}: metric '{col}' is logged once per run, but {col} is a per-epoch curve; log "
                            f"it at every epoch (the step is the epoch), or drop it with {option('ignore_cols', col)}")
    return df.rename(columns=rename)


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
    runs: list[tuple[dict[str, Any], str, History]] = []
    for exp in client.search_experiments():
        token = None
        while True:
            page = client.search_runs([exp.experiment_id], max_results=1000, page_token=token)
            for run in page:
                history = {key: [(m.step, m.timestamp, m.value)
                                 for m in client.get_metric_history(run.info.run_id, key)]
                           for key in run.data.metrics}
                runs.append((dict(run.data.params), run.info.status, history))
            token = page.token
            if not token:
                break
    if not runs:
        raise UserError(f"{path}: the MLflow store holds no runs")
    return mlflow_runs_frame(runs)


# A run's metrics as MLflow logs them: metric -> (step, timestamp, value) in logging order.
History = dict[str, list[tuple[int, int, float]]]


@dataclass
class RunLog:
    """One tracker run: its keys and settings (params or folder names, status), its curves (metric ->
    (step, value) points, the step being the epoch) and its per-run values (metrics logged once)."""

    keys: dict[str, Any]
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    once: dict[str, float] = field(default_factory=dict)


def mlflow_runs_frame(runs: list[tuple[dict[str, Any], str, History]]) -> pd.DataFrame:
    """The runs of an MLflow store (params, status, history each), the same for both stores.

    Whether a metric is a curve is decided for the whole store, not per run: a metric logged at
    several steps in any run is a curve (the step is the epoch), so a run that crashed after its
    first epoch keeps its one point at that step; a metric logged at one step in every run is a
    per-run value (its last logged value), never copied into every epoch as a flat curve."""
    curve_keys = {key for _, _, history in runs for key, hist in history.items()
                  if len({step for step, _, _ in hist}) > 1}
    logs = []
    for params, status, history in runs:
        log = RunLog({**params, cube.STATUS: cube.STATUS_NAMES[MLFLOW_STATUS.get(str(status), cube.MISSING)]})
        for key, hist in history.items():
            ordered = sorted(hist, key=lambda m: (m[0], m[1]))  # stable: logging order within a timestamp
            if key in curve_keys:
                log.curves[key] = [(int(step), value) for step, _, value in ordered]
            else:
                log.once[key] = ordered[-1][2] if ordered else math.nan
        logs.append(log)
    return runs_frame(logs)


def runs_frame(logs: list[RunLog]) -> pd.DataFrame:
    """Tracker runs as one long table: a row per run and logged epoch when any run has a curve, else a
    row per run. A run's per-run values stand in each of its rows (the table reads them as one value).
    A run without a curve point (it logged none before it stopped) is one row at the source's first
    epoch with its curves empty (an epoch it did not log), so it keeps its status and adds no epoch.
    ``attrs[PER_RUN]`` names the per-run values."""
    epochs = sorted({step for log in logs for points in log.curves.values() for step, _ in points})
    rows: list[dict[str, Any]] = []
    for log in logs:
        by_step: dict[int, dict[str, float]] = {}
        for key, points in log.curves.items():
            for step, value in points:
                by_step.setdefault(step, {})[key] = value
        if not epochs:
            rows.append({**log.keys, **log.once})
            continue
        rows += [{**log.keys, cube.EPOCH: step, **vals, **log.once}
                 for step, vals in sorted((by_step or {epochs[0]: {}}).items())]
    df = pd.DataFrame(rows)
    df.attrs[PER_RUN] = sorted({key for log in logs for key in log.once})
    return df


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
    return mlflow_runs_frame([(params.get(run, {}), status, history.get(run, {})) for run, status in runs])


# TensorBoard ---------------------------------------------------------------------------------

def tensorboard_frame(path: Path, notes: list[str] | None = None) -> pd.DataFrame:
    """Scalars of every run folder under ``path``; the event step is the epoch.

    A run's keys come from its folder path relative to ``path``: components (and comma-separated
    parts of them) of the form ``key=value``, e.g. ``pipeline=sgd/sigma_w=0.5/seed=0``. Tag
    separators become underscores (``val/acc`` -> ``val_acc``). torch's ``SummaryWriter.add_hparams``
    writes its summary into a sub-folder of the run folder named by the time (``1796197493.47``):
    such a folder (events of the hparams plugin, a name that is not key=value) belongs to its parent
    run, and its scalars (add_hparams's metric_dict, logged once) are that run's per-run values; its
    hparams are not read (the folder names give the run's keys and settings). Noted in ``notes``.
    """
    _need("tensorboard", "TensorBoard logs")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    event_dirs = sorted({p.parent for p in path.rglob("events.out.tfevents.*")})
    if not event_dirs:
        raise UserError(f"{path}: no TensorBoard event files (events.out.tfevents.*)")
    logs: dict[Path, RunLog] = {}
    merged: list[Path] = []
    for d in event_dirs:
        acc = EventAccumulator(str(d), size_guidance={"scalars": 0})
        acc.Reload()
        scalars = {tag.strip("/").replace("/", "_"): [(int(ev.step), float(ev.value)) for ev in acc.Scalars(tag)]
                   for tag in acc.Tags().get("scalars", [])}
        hparams = _is_hparams_summary(acc)
        run_dir = d.parent if hparams and d != path and not _is_key_value(d.name) else d
        log = logs.setdefault(run_dir, RunLog(_path_keys(run_dir.relative_to(path), path)))
        if hparams:
            merged += [d] if run_dir != d else []
            log.once.update({name: points[-1][1] for name, points in scalars.items() if points})
        else:
            log.curves.update(scalars)
    if merged and notes is not None:
        notes.append(f"{len(merged)} add_hparams folder(s) such as '{merged[0].relative_to(path)}' read into their run "
                     "folder: their metrics are per-run values, their hparams are not read")
    return runs_frame([log for _, log in sorted(logs.items()) if log.curves or log.once])


def _is_hparams_summary(acc: Any) -> bool:
    """Whether an event folder holds the hparams plugin's summary (what add_hparams writes)."""
    try:
        return bool(acc.PluginTagToContent(HPARAMS_PLUGIN))
    except KeyError:
        return False


def _is_key_value(name: str) -> bool:
    return all("=" in token for token in name.split(","))


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

"""What each column of an imported table means, and the checks that keep its units honest.

A table made elsewhere names things its own way and may be in other units. Every column must be
a cube variable (docs/cube.md), a known alias of one (reported on import), a pipeline setting,
a metric the user declared (``--metric-col``) or a column the user chose to drop
(``--ignore-col``); anything else is refused with the list of what is accepted, because a column
silently read as the wrong thing is worse than an error. Accuracies must be fractions in [0, 1]
(``--scale percent`` divides by 100), counts must be whole numbers of at most ``n_test``, and a
test-set size must turn every test accuracy into a whole count: each failure is one line naming
the column and the spreadsheet row (header = row 1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

import numpy as np
import pandas as pd

from initmem import cube
from initmem.errors import UserError, option

# Per-run tables: the usual names of a run's test and validation accuracy.
RUN_ALIASES = {
    cube.TEST_ACC: cube.SELECTED_TEST_ACC, "test_accuracy": cube.SELECTED_TEST_ACC,
    "accuracy": cube.SELECTED_TEST_ACC, "acc": cube.SELECTED_TEST_ACC,
    cube.VAL_ACC: cube.SELECTED_VAL_ACC, "val_accuracy": cube.SELECTED_VAL_ACC,
}
# Per-epoch tables: the same names are curves.
CURVE_ALIASES = {
    "test_accuracy": cube.TEST_ACC, "accuracy": cube.TEST_ACC, "acc": cube.TEST_ACC,
    "val_accuracy": cube.VAL_ACC, "train_accuracy": cube.TRAIN_ACC,
}
SETTING_ALIASES = {"learning_rate": "lr", "wd": "weight_decay", "bs": "batch_size"}
SETTINGS = (*cube.PIPELINE_COORDS, "nesterov", "warmup_epochs", "gamma")
# Settings the clocks may read per epoch (docs/import.md, "Clocks").
PER_EPOCH_SETTINGS = ("lr", "batch_size", "weight_decay")
STATUS_BY_NAME = {name: code for code, name in cube.STATUS_NAMES.items()}
# Test accuracies are fractions of the n_test test examples; validation accuracies are not.
TEST_ACCURACIES = (cube.SELECTED_TEST_ACC, cube.FINAL_TEST_ACC, cube.TEST_ACC)
SCALES = {"fraction": 1.0, "percent": 100.0}


def resolve(columns: Iterable[str], *, per_epoch: bool, metric_cols: Iterable[str] = (),
            ignore_cols: Iterable[str] = (), source: str = "table") -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(rename, kind by new name, notes) for the value columns of a table.

    ``kind`` is one of ``run`` (one value per run), ``curve`` (per epoch), ``setting``
    (per pipeline, or per epoch for lr / batch_size / weight_decay), ``metric`` (declared),
    ``status`` and ``n_test``.
    """
    metric_cols, ignore_cols = list(metric_cols), set(ignore_cols)
    aliases = CURVE_ALIASES if per_epoch else RUN_ALIASES
    rename: dict[str, str] = {}
    kind: dict[str, str] = {}
    notes: list[str] = []
    for col in columns:
        if col in ignore_cols:
            continue
        new, k = col, None
        if col in metric_cols:
            new, k = _declared(col, aliases, per_epoch, source)
        elif col == cube.STATUS:
            k = "status"
        elif col == cube.A_N_TEST:
            k = "n_test"
        elif col in aliases:
            new = aliases[col]
            k = "curve" if new in cube.CURVE_VARS else "run"
        elif col in SETTING_ALIASES:
            new, k = SETTING_ALIASES[col], "setting"
        elif col in SETTINGS:
            k = "setting"
        elif col in cube.RUN_VARS:
            k = "run"
        elif per_epoch and col in cube.CURVE_VARS:
            k = "curve"
        if k is None:
            why = ("a per-epoch curve, and the table has no epoch column" if col in cube.CURVE_VARS
                   else "not a cube variable, alias or setting")
            raise UserError(
                f"{source}: column '{col}' is {why}; accepted: {', '.join(accepted(per_epoch))}; "
                f"keep it as a metric with {option('metric_cols', col)} or drop it with {option('ignore_cols', col)}")
        if new in kind:
            first = next(c for c, n in rename.items() if n == new)
            raise UserError(f"{source}: columns '{first}' and '{col}' both mean '{new}'; drop one with "
                            f"{option('ignore_cols')}")
        if new != col:
            notes.append(f"column '{col}' read as {new}")
        rename[col] = new
        kind[new] = k
    if not any(k in RESULT_KINDS for k in kind.values()):
        raise UserError(_no_metric(kind, {new: old for old, new in rename.items()}, per_epoch, source))
    return rename, kind, notes


# The kinds of column that hold a result the analysis can read (a setting, a status or n_test is none).
RESULT_KINDS = ("run", "curve", "metric")


def _no_metric(kind: dict[str, str], original: dict[str, str], per_epoch: bool, source: str) -> str:
    """The refusal of a table without any result: what its columns were read as, and the names that a
    metric column may have (an accuracy under any alias first), so that renaming one column is the fix."""
    read_as = {"setting": "a setting", "status": "the runs' status", "n_test": "the test-set size"}
    held = [f"'{original[n]}' ({read_as[k]})" for n, k in kind.items()]
    what = f"its other columns are {', '.join(held)}" if held else "it holds only the key columns"
    return (f"{source}: no accuracy or other metric column ({what}); name the results column as one of: "
            f"{', '.join(metric_names(per_epoch))}; or keep a column of your own as the metric with "
            f"{option('metric_cols', 'NAME')}")


def metric_names(per_epoch: bool) -> list[str]:
    """The accepted names of a column that holds results (cube variables and their aliases): every accepted
    name (:func:`accepted`) but the settings, ``status`` and ``n_test``; test accuracies and counts first,
    then the other accuracies, then the rest."""
    aliases = CURVE_ALIASES if per_epoch else RUN_ALIASES
    not_results = {*SETTINGS, *SETTING_ALIASES, cube.A_N_TEST, cube.STATUS}
    names = [n for n in accepted(per_epoch) if n not in not_results]

    def rank(name: str) -> int:
        meant = aliases.get(name, name)
        return 0 if meant in (*TEST_ACCURACIES, cube.SELECTED_TEST_CORRECT) else 1 if is_accuracy(meant) else 2

    return sorted(names, key=rank)   # a stable sort: each rank keeps the order of accepted()


def _declared(col: str, aliases: dict[str, str], per_epoch: bool, source: str) -> tuple[str, str]:
    """(name, kind) of a declared metric. One that bears a cube variable's name or alias once '/' is '_'
    (W&B's 'val/acc' is val_acc) is that variable: a curve per epoch, a result per run; anything else is a
    metric (a curve if it varies within a run)."""
    name = variable_name(col)
    name = aliases.get(name, name)
    if name in cube.CURVE_VARS:
        if not per_epoch:
            raise UserError(f"{source}: column '{col}' would be the cube's per-epoch curve '{name}', but the table "
                            "has no epoch column: rename the column to keep it as a per-run metric")
        return name, "curve"
    return name, "run" if name in cube.RUN_VARS else "metric"


def variable_name(name: str) -> str:
    """A metric's name as a cube variable: NetCDF names cannot hold '/', which trackers use to group
    metrics (W&B's 'val/acc', TensorBoard's tags), so each becomes '_'."""
    return name.strip("/").replace("/", "_")


def accepted(per_epoch: bool) -> list[str]:
    """The column names a table may use besides its keys (cube variables, aliases, settings)."""
    names = [*cube.RUN_VARS, *RUN_ALIASES] if not per_epoch else [*cube.CURVE_VARS, *cube.RUN_VARS, *CURVE_ALIASES]
    return list(dict.fromkeys([*names, *SETTINGS, *SETTING_ALIASES, cube.A_N_TEST]))


def is_accuracy(name: str) -> bool:
    return cube.points_scale(name) != 1.0


def numeric(df: pd.DataFrame, col: str, source: str, label: str | None = None) -> pd.Series:
    """The column as floats; text that is not a number is refused with its row ('nan' and 'inf' are numbers)."""
    raw = df[col]
    values = pd.to_numeric(raw, errors="coerce")
    text = raw.astype(str).str.strip().str.lower()
    bad = values.isna() & raw.notna() & ~text.isin(["", "nan", "-nan", "none", "null"])
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise UserError(f"{source}: column '{label or col}' must be numeric (row {i + 2} holds {raw.iloc[i]!r})")
    return values.astype(float)


def check_scale(values: pd.Series, col: str, scale: str, source: str, *, curve: bool = False) -> pd.Series:
    """Accuracies as fractions: divide by 100 for ``percent``; refuse anything outside the range, and a column
    in which fractions and percentages seem mixed (a per-run result below 1% next to ones above 10%; a
    ``curve`` may start below 1%, at chance on 1,000 classes)."""
    factor = SCALES[scale]
    top = 100.0 if factor == 100.0 else 1.0
    v = values.to_numpy(dtype=float)
    finite = np.isfinite(v)
    out = finite & ((v < 0) | (v > top))
    fractions = finite & (v > 0) & (v < 1)   # what a fraction looks like; in percent, below 1 point
    percents = finite & (v > 1.5)            # what a percentage looks like (not a fraction's round-off)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        if factor == 1.0 and fractions.any() and percents.any():
            hint = (f"; the column mixes fractions (row {int(np.flatnonzero(fractions)[0]) + 2}: "
                    f"{v[fractions][0]:.10g}) and percent: give every accuracy in one unit")
        elif factor == 1.0 and percents.any() and v[finite].max() <= 100:
            hint = f"; if the table is in percent, pass {option('scale', 'percent')}"
        else:
            hint = ""
        raise UserError(f"{source}: column '{col}' holds {v[i]:.10g} in row {i + 2}, but accuracies must lie "
                        f"in [0, {top:g}]{hint}")
    if factor == 100.0 and fractions.any() and not (finite & (v > 1)).any():
        raise UserError(f"{source}: column '{col}' has no accuracy above 1 with {option('scale', 'percent')} "
                        f"(largest {v[finite].max():.10g}): it looks like fractions; drop {option('scale')}")
    if factor == 100.0 and not curve and fractions.any() and (finite & (v > 10)).any():
        i = int(np.flatnonzero(fractions)[0])
        raise UserError(f"{source}: column '{col}' holds {v[i]:.10g} in row {i + 2} next to accuracies above 10 "
                        f"with {option('scale', 'percent')}: fractions mixed into percent? (if some runs truly "
                        "scored below 1%, give the whole column as fractions instead)")
    return values / factor


def non_finite_rows(values: pd.Series) -> np.ndarray:
    return ~np.isfinite(values.to_numpy(dtype=float))


def written_nan(text: pd.Series) -> np.ndarray:
    """Rows whose text is a written 'nan' (a result, such as a diverged loss), not an empty field (not logged)."""
    if text.dtype.kind in "iufcb":  # typed by a tracker: its NaN means "not logged"
        return np.zeros(len(text), dtype=bool)
    words = text.map(lambda v: str(v).strip().lower() if isinstance(v, str) else "")
    return words.isin(["nan", "-nan", "+nan"]).to_numpy()



def decimals(v: float) -> int:
    """Decimal places of the shortest text that gives ``v`` (0.6352 -> 4): how precisely it was written."""
    v = float(v)
    if math.isfinite(v) and float(np.float32(v)) == v:  # stored as float32 (TensorBoard): its shortest text
        v_text = str(np.float32(v))
    else:
        v_text = repr(v)
    try:
        exp = Decimal(v_text).normalize().as_tuple().exponent
    except InvalidOperation:
        return 17
    return max(0, -int(exp)) if isinstance(exp, int) else 17


def counts_from_accuracy(acc: pd.Series, raw: pd.Series, n_test: int, col: str, source: str) -> pd.Series:
    """Whole counts out of ``n_test`` for test accuracies, each within the precision it was written in.

    ``raw`` holds the values as the table wrote them (before any percent scaling), so an accuracy
    rounded to four decimals may be 0.00005 off its count; an ``n_test`` that no count fits is
    refused rather than quietly dropping the counts (which would change the analysis family).
    """
    counts = acc * n_test
    for i in np.flatnonzero(np.isfinite(counts.to_numpy())):
        tol = 0.5 * 10.0 ** -decimals(raw.iloc[i]) * (acc.iloc[i] / raw.iloc[i] if raw.iloc[i] else 1.0)
        c = counts.iloc[i]
        if abs(c - round(c)) > max(tol * n_test, 1e-6):
            raise UserError(
                f"{source}: with {option('n_test', n_test)}, column '{col}' = {raw.iloc[i]:g} in row {i + 2} is "
                f"{c:.2f} correct "
                f"answers, not a whole number: the test set has another size (give the right {option('n_test')}, or "
                "leave it "
                "out to analyze the accuracy as a continuous metric)")
    return counts.round()


def check_counts(counts: pd.Series, n_test: int | None, col: str, source: str) -> pd.Series:
    """Counts of correct test answers: whole numbers between 0 and ``n_test``."""
    if n_test is None:
        raise UserError(f"{source}: column '{col}' holds counts of correct test answers; give the test-set size "
                        f"with {option('n_test')}")
    v = counts.to_numpy(dtype=float)
    fin = np.isfinite(v)
    bad = fin & ((v != np.round(v)) | (v < 0) | (v > n_test))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        why = "not a whole number" if v[i] != round(v[i]) else f"outside 0 .. n_test = {n_test}"
        raise UserError(f"{source}: column '{col}' = {v[i]:g} in row {i + 2} is {why}")
    return counts


def status_codes(col: pd.Series, source: str) -> pd.Series:
    """A status column as codes: names (ok, diverged, failed, missing) or the codes themselves."""
    out = []
    for i, v in enumerate(col.tolist()):
        key = str(v).strip().lower()
        if key in STATUS_BY_NAME:
            out.append(STATUS_BY_NAME[key])
            continue
        try:
            code = float(key)
        except ValueError:
            code = math.nan
        if code not in cube.STATUS_NAMES:
            raise UserError(f"{source}: status {v!r} in row {i + 2} is not one of "
                            f"{', '.join(STATUS_BY_NAME)} (or 0-3)")
        out.append(int(code))
    return pd.Series(out, index=col.index, dtype="int64")

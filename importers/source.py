"""``initmem import`` as one function: runs made elsewhere (a long table or a tracker's export) into a cube file.

:func:`import_table` reads the source with :mod:`.trackers`, builds the cube with :mod:`.table` and writes it
with :mod:`initmem.cube`; the command line calls it, so a script and the command make the same cube and refuse
the same tables with the same one-line messages (docs/import.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from initmem.errors import OptionError

if TYPE_CHECKING:
    import xarray as xr

SourceFormat = Literal["auto", "csv", "wandb", "mlflow", "tensorboard"]
SeedDesign = Literal["paired", "independent"]
Scale = Literal["fraction", "percent"]


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote: the cube file, the cube itself and what the readers decided on the way.

    Attributes
    ----------
    cube : pathlib.Path
        The cube file written.
    dataset : xarray.Dataset
        The cube (docs/cube.md).
    notes : tuple of str
        What was mapped, derived or read in a particular way (a column read as an alias, a metric logged once
        read as a per-run value); the command line prints them.
    """

    cube: Path
    dataset: xr.Dataset
    notes: tuple[str, ...]


def import_table(source: str | os.PathLike, out: str | os.PathLike, *, seeds: SeedDesign,
                 format: SourceFormat = "auto", n_test: int | None = None, scale: Scale = "fraction",
                 metric_cols: Sequence[str] = (), ignore_cols: Sequence[str] = (), pipeline_col: str | None = None,
                 sigma_col: str | None = None, seed_col: str | None = None, mapping: str | os.PathLike | None = None,
                 nan_as_missing: bool = False, n_train: int | None = None) -> ImportResult:
    """Turn runs made elsewhere into a cube file: what ``initmem import SOURCE --out CUBE.nc`` does.

    Parameters
    ----------
    source : str or os.PathLike
        A long CSV table (pipeline, sigma_w, seed, [epoch], metrics), a W&B runs CSV export, an MLflow
        ``mlruns/`` folder or ``sqlite:///FILE`` store, or a TensorBoard log folder.
    out : str or os.PathLike
        Where to write the cube.
    seeds : {"paired", "independent"}
        paired: one seed number gives the same initial direction and data order at every sigma_w; independent:
        each run drew its own randomness. Required: the memory model treats paired seeds as one block across
        sigma_w, which is false for runs that share nothing.
    format : {"auto", "csv", "wandb", "mlflow", "tensorboard"}, default "auto"
        The kind of source; auto: by what ``source`` looks like.
    n_test : int, optional
        Test-set size: every test accuracy must then be a whole count out of it.
    scale : {"fraction", "percent"}, default "fraction"
        The unit of the accuracy columns.
    metric_cols : sequence of str, default ()
        Columns kept as metrics beside those the importer recognizes.
    ignore_cols : sequence of str, default ()
        Columns dropped.
    pipeline_col, sigma_col, seed_col : str, optional
        The column (or config key) naming the pipeline, holding sigma_w, holding the seed; they win over
        ``mapping``'s.
    mapping : str or os.PathLike, optional
        The same mapping as a small YAML file (keys pipeline, sigma_w, seed, epoch, metrics, ignore).
    nan_as_missing : bool, default False
        Import runs whose results are NaN or infinite as missing instead of refusing the table.
    n_train : int, optional
        Training examples, for the clocks' steps per epoch when the table has no step column.

    Returns
    -------
    ImportResult
        The cube's path, the cube, and the readers' notes.

    Raises
    ------
    OptionError
        ``format`` is unknown, or ``metric_cols`` / ``ignore_cols`` is one string instead of a list of names.
    UserError
        The source cannot be read, or the table would give a confident wrong answer (units, duplicates, values);
        the message names the row or column to fix.

    Examples
    --------
    A long table, one row per run (a CSV written here with pandas):

    >>> import pandas as pd
    >>> import initmem
    >>> rows = [{"pipeline": p, "sigma_w": s, "seed": k, "selected_test_acc": 0.9 - 0.01 * k}
    ...         for p in ("sgd", "adam") for s in (0.5, 1.0, 2.0) for k in (0, 1, 2)]
    >>> pd.DataFrame(rows).to_csv("runs.csv", index=False)
    >>> result = initmem.import_table("runs.csv", "imported.nc", seeds="paired", n_test=1000)
    >>> result.cube, dict(result.dataset.sizes)
    (PosixPath('imported.nc'), {'pipeline': 2, 'sigma_w': 3, 'seed': 3})
    """
    from initmem import cube
    from initmem.importers.table import frame_to_cube
    from initmem.importers.trackers import FORMATS, Mapping, read_source

    if format != "auto" and format not in FORMATS:
        raise OptionError("format", f"{{option}} must be one of auto, {', '.join(FORMATS)} (got {format!r})")
    for name, cols in (("metric_cols", metric_cols), ("ignore_cols", ignore_cols)):
        if isinstance(cols, str):  # a string is a sequence of one-letter names: never what was meant
            raise OptionError(name, f"{{option}} takes a list of column names (got the string {cols!r})")
    names = Mapping.load(Path(mapping) if mapping is not None else None).override(
        pipeline=pipeline_col, sigma_w=sigma_col, seed=seed_col, metrics=tuple(metric_cols), ignore=tuple(ignore_cols))
    notes: list[str] = []
    df, label = read_source(source, format, names, notes)
    ds = frame_to_cube(df, seeds=seeds, n_test=n_test, source=label, scale=scale, metric_cols=names.metrics,
                       ignore_cols=names.ignore, nan_as_missing=nan_as_missing, n_train=n_train, notes=notes)
    path = cube.write_cube(ds, out)
    return ImportResult(cube=path, dataset=ds, notes=tuple(notes))

"""Shards: one small cube file per finished cell, and their deterministic merge into the cube.

A shard is a valid cube (``initmem.cube`` writes and reads it) with one pipeline, one sigma_w
and one seed. Besides the engine's data it carries, as global attributes, the grid hash it was
trained under (``shard_grid_hash``), its cell key (``shard_cell``, JSON), its status
(``shard_status``, mirrored by the ``status`` variable) and, for a failed cell, the error text
(``shard_error``, with the traceback in ``shard_traceback``).

Shards are written atomically (temporary name, then rename), so a shard that exists under its
final name was complete when written. A shard that still does not read back (a truncated copy,
a disk fault) is *corrupt*: the merge reports it by name and leaves its cell missing, and
``--resume`` moves it to ``shards/corrupt/`` and trains the cell again.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.atomic import atomic_path
from initmem.collect.execution.fault_hooks import hook
from initmem.collect.train.coords import CPU_JOIN, MACHINE_ATTRS
from initmem.errors import UserError

Cell = tuple[str, float, int]  # (pipeline, sigma_w, seed)

SHARD_SUFFIX = ".nc"
SHARD_ATTRS = ("shard_grid_hash", "shard_cell", "shard_status", "shard_error", "shard_traceback")


def all_cells(grid: Any) -> list[Cell]:
    """Every cell of a grid, pipeline by pipeline, sigma_w-major."""
    return [(p, float(s), int(k)) for p in grid.pipelines for s, k in grid.cells(p)]


def cell_label(cell: Cell) -> str:
    """'pipeline:sigma_w:seed', the format of INITMEM_FAIL_CELL and of the failure table."""
    pipe, sigma, seed = cell
    return f"{pipe}:{sigma:g}:{seed}"


def shard_name(cell: Cell) -> str:
    """File name of a cell's shard; sigma_w by ``repr`` so distinct floats never collide."""
    pipe, sigma, seed = cell
    return f"{pipe}__sw{float(sigma)!r}__seed{int(seed)}{SHARD_SUFFIX}"


def shard_path(shards_dir: str | os.PathLike, cell: Cell) -> Path:
    return Path(shards_dir) / shard_name(cell)


# Writing -----------------------------------------------------------------------------------

def write_shard(ds: xr.Dataset, shards_dir: str | os.PathLike, cell: Cell, *, grid_hash: str,
                error: str | None = None, traceback_text: str | None = None) -> Path:
    """Write one cell's single-cell cube as its shard, atomically, with the shard attributes."""
    pipe, sigma, seed = cell
    if ds.sizes.get(cube.PIPELINE) != 1 or ds.sizes.get(cube.SIGMA) != 1 or ds.sizes.get(cube.SEED) != 1:
        raise ValueError(f"a shard holds exactly one cell, got sizes {dict(ds.sizes)}")
    status = int(np.asarray(ds[cube.STATUS].values).ravel()[0])
    ds = ds.copy()
    ds.attrs = {**ds.attrs,
                "shard_grid_hash": grid_hash,
                "shard_cell": json.dumps([pipe, float(sigma), int(seed)]),
                "shard_status": status,
                "shard_error": error or "",
                "shard_traceback": traceback_text or ""}
    path = shard_path(shards_dir, cell)
    with atomic_path(path) as tmp:
        cube.write_cube(ds, tmp)
        hook("shard_write")
    hook("shard_written")
    return path


def split_pack(ds: xr.Dataset, cells: list[Cell]) -> dict[Cell, xr.Dataset]:
    """Cut a pack's cube (engine layout: one pipeline, sorted sigma_w x seed) into one per cell."""
    out: dict[Cell, xr.Dataset] = {}
    for cell in cells:
        pipe, sigma, seed = cell
        one = ds.sel({cube.PIPELINE: [pipe], cube.SIGMA: [float(sigma)], cube.SEED: [int(seed)]})
        out[cell] = one
    return out


def failed_cell(cell: Cell, *, attrs: dict[str, Any], pipeline_coords: dict[str, Any]) -> xr.Dataset:
    """The single-cell cube of a cell that raised: status failed, nothing else observed."""
    pipe, sigma, seed = cell
    ds = cube.empty_cube([pipe], [float(sigma)], [int(seed)], attrs=attrs)
    ds[cube.STATUS] = ((cube.PIPELINE, cube.SIGMA, cube.SEED), np.full((1, 1, 1), cube.FAILED, dtype="int8"))
    for name, value in pipeline_coords.items():
        ds = ds.assign_coords({name: (cube.PIPELINE, np.asarray([value], dtype=object if isinstance(value, str)
                                                                  else None))})
    return ds


# Reading -----------------------------------------------------------------------------------

class CorruptShard(Exception):
    """A shard file that does not read back as a valid single-cell shard."""


@dataclass
class ShardInfo:
    path: Path
    cell: Cell
    status: int
    grid_hash: str
    error: str
    ds: xr.Dataset | None = field(default=None, repr=False)


def read_shard(path: str | os.PathLike, *, keep_data: bool = True) -> ShardInfo:
    """Open and check a shard; raise :class:`CorruptShard` with the reason if it is unusable."""
    path = Path(path)
    try:
        ds = cube.open_cube(path, check=True)
    except UserError as exc:
        raise CorruptShard(str(exc)) from None
    except Exception as exc:
        raise CorruptShard(f"{exc.__class__.__name__}: {exc}") from None
    missing = [a for a in ("shard_grid_hash", "shard_cell", "shard_status") if a not in ds.attrs]
    if missing:
        raise CorruptShard(f"not a shard: attribute(s) {', '.join(missing)} missing")
    try:
        pipe, sigma, seed = json.loads(ds.attrs["shard_cell"])
        cell: Cell = (str(pipe), float(sigma), int(seed))
    except (ValueError, TypeError) as exc:
        raise CorruptShard(f"bad shard_cell attribute: {exc}") from None
    if cube.STATUS not in ds.data_vars or ds[cube.STATUS].size != 1:
        raise CorruptShard("no single status value")
    status = int(ds[cube.STATUS].values.ravel()[0])
    coords = (str(ds[cube.PIPELINE].values[0]), float(ds[cube.SIGMA].values[0]), int(ds[cube.SEED].values[0]))
    if coords != cell or status != int(ds.attrs["shard_status"]):
        raise CorruptShard(f"shard attributes {cell}/{ds.attrs['shard_status']} disagree with its data "
                           f"{coords}/{status}")
    if path.name != shard_name(cell):
        raise CorruptShard(f"file name does not match its cell {cell_label(cell)}")
    return ShardInfo(path=path, cell=cell, status=status, grid_hash=str(ds.attrs["shard_grid_hash"]),
                     error=str(ds.attrs.get("shard_error", "")), ds=ds if keep_data else None)


def shard_files(shards_dir: str | os.PathLike) -> list[Path]:
    """Shard files under their final names, sorted by name (temporaries are never listed)."""
    d = Path(shards_dir)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.is_file() and p.name.endswith(SHARD_SUFFIX)
                  and not p.name.startswith("."))


# Below this many shards a process pool costs more to start (an interpreter importing xarray) than it saves.
PARALLEL_MIN_SHARDS = 64


def scan_shards(shards_dir: str | os.PathLike, *, keep_data: bool = False, jobs: int = 1
                ) -> tuple[dict[Cell, ShardInfo], list[tuple[Path, str]]]:
    """Read every shard: (cell -> info for the good ones, [(path, reason)] for the corrupt).

    Reading is most of a merge and of a resume's scan (about 50 ms a shard, nearly all of it xarray's and
    HDF5's work in Python), so with ``jobs > 1`` and at least ``PARALLEL_MIN_SHARDS`` shards the files are
    read by that many processes. The result does not depend on ``jobs``: it is assembled in file-name order.
    """
    paths = shard_files(shards_dir)
    good: dict[Cell, ShardInfo] = {}
    bad: list[tuple[Path, str]] = []
    for path, got in zip(paths, _read_shards(paths, keep_data, jobs), strict=True):
        if isinstance(got, str):
            bad.append((path, got))
        else:
            good[got.cell] = got
    return good, bad


def spawnable() -> bool:
    """Whether a spawned process can start: it re-imports the parent's main script, which a program read from
    standard input (``python - < script``) does not have as a file."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


def _read_or_reason(path: Path, keep_data: bool) -> ShardInfo | str:
    """A shard's info, or the reason it is corrupt (a string travels between processes as it is)."""
    try:
        return read_shard(path, keep_data=keep_data)
    except CorruptShard as exc:
        return str(exc)


def _read_shards(paths: list[Path], keep_data: bool, jobs: int) -> list[ShardInfo | str]:
    if jobs <= 1 or len(paths) < PARALLEL_MIN_SHARDS or not spawnable():
        return [_read_or_reason(p, keep_data) for p in paths]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # spawn, as the training workers: the parent may hold torch's and OpenMP's threads, which fork does not copy
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            return list(pool.map(_read_or_reason, paths, [keep_data] * len(paths),
                                 chunksize=max(1, len(paths) // (4 * jobs))))
    except (BrokenProcessPool, OSError):
        # no process could start (a parent run from standard input cannot be spawned again, say): read here
        return [_read_or_reason(p, keep_data) for p in paths]


# Merging -----------------------------------------------------------------------------------

@dataclass
class MergeReport:
    ds: xr.Dataset
    n_shards: int
    corrupt: list[tuple[Path, str]]
    foreign: list[tuple[Path, str]]  # readable shards that do not belong to this grid / run
    missing: list[Cell]


def _var_order(names: set[str]) -> list[str]:
    known = [v for v in (*cube.CURVE_VARS, *cube.LAYER_VARS, *cube.RUN_VARS, *cube.PRED_VARS, *cube.LABEL_VARS)
             if v in names]
    return known + sorted(names - set(known))


def _on_layers(sub: np.ndarray, axis: int, positions: list[int], n_layers: int) -> np.ndarray:
    """A shard's per-layer values placed at their positions in the merged layer list (NaN elsewhere)."""
    if positions == list(range(n_layers)):
        return sub
    shape = list(sub.shape)
    shape[axis] = n_layers
    out = np.full(shape, np.nan, dtype=np.result_type(sub.dtype, np.float64))
    index: list[Any] = [slice(None)] * sub.ndim
    index[axis] = positions
    out[tuple(index)] = sub
    return out


@dataclass
class _Layout:
    """What the shards hold, surveyed before any array is allocated: the union of their epochs and
    layers, the coordinates they must share, each variable's dims and dtype, the per-pipeline coordinates."""

    epochs: set[int] = field(default_factory=set)
    layers: dict[str, int] = field(default_factory=dict)  # name -> position, in first-seen order
    fixed: dict[str, np.ndarray] = field(default_factory=dict)  # coordinates every shard must share
    var_dims: dict[str, tuple[str, ...]] = field(default_factory=dict)
    var_dtype: dict[str, np.dtype] = field(default_factory=dict)
    pipe_coords: set[str] = field(default_factory=set)


def _survey(infos: list[ShardInfo]) -> _Layout:
    """Epochs as the union; layers as the union in first-seen order (pipelines with their own
    architectures have their own kernels, docs/arms.md; a layer a pipeline lacks is NaN there);
    examples must agree, and a variable has the same dims in every shard."""
    lay = _Layout()
    for info in infos:
        ds = info.ds
        assert ds is not None
        if cube.EPOCH in ds.coords:
            lay.epochs.update(int(e) for e in ds[cube.EPOCH].values)
        if cube.LAYER in ds.coords:
            for name in ds[cube.LAYER].values.tolist():
                lay.layers.setdefault(str(name), len(lay.layers))
        if cube.EXAMPLE in ds.coords:
            vals = ds[cube.EXAMPLE].values
            known = lay.fixed.setdefault(cube.EXAMPLE, vals)
            if len(vals) != len(known) or not (vals == known).all():
                raise ValueError(f"shard {info.path.name}: its '{cube.EXAMPLE}' coordinate differs from other shards")
        for name in ds.data_vars:
            dims = tuple(ds[name].dims)
            if name in lay.var_dims and lay.var_dims[name] != dims:
                raise ValueError(f"shard {info.path.name}: variable '{name}' has dims {dims}, "
                                 f"others {lay.var_dims[name]}")
            lay.var_dims[name] = dims
            lay.var_dtype.setdefault(name, ds[name].dtype)
        lay.pipe_coords.update(c for c in ds.coords if c != cube.PIPELINE and ds[c].dims == (cube.PIPELINE,))
    return lay


def _allocate(lay: _Layout, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Every variable filled with its "no value" (NaN, or the integer fill), status missing by default."""
    arrays: dict[str, np.ndarray] = {}
    for name in _var_order(set(lay.var_dims)):
        dims = lay.var_dims[name]
        if name in cube.INT_VARS:
            dtype, fill = cube.INT_VARS[name]
            arrays[name] = np.full([sizes[d] for d in dims], fill, dtype=dtype)
        elif np.issubdtype(lay.var_dtype[name], np.floating) or name in cube.EXPECTED_DIMS:
            arrays[name] = np.full([sizes[d] for d in dims], np.nan, dtype=cube.FLOAT_DTYPE)
        else:
            raise ValueError(f"variable '{name}' of dtype {lay.var_dtype[name]} cannot be merged")
    if cube.STATUS not in arrays:
        arrays[cube.STATUS] = np.full([sizes[d] for d in cube.CELL_DIMS], cube.MISSING,
                                      dtype=cube.INT_VARS[cube.STATUS][0])
        lay.var_dims[cube.STATUS] = cube.CELL_DIMS
    return arrays


def _place(info: ShardInfo, cell: tuple[int, int, int], lay: _Layout, arrays: dict[str, np.ndarray],
           epochs: np.ndarray | None) -> None:
    """Write one shard's variables into the merged arrays at its cell (and its epochs and layers)."""
    ds = info.ds
    assert ds is not None
    at = dict(zip(cube.CELL_DIMS, cell, strict=True))
    for name, da in ds.data_vars.items():
        dims = lay.var_dims[name]
        vals = np.asarray(da.values)
        if cube.PIPELINE not in dims:  # shared by every cell (the test labels): must agree
            if name in cube.LABEL_VARS and (arrays[name] != cube.INT_VARS[name][1]).any() \
                    and not np.array_equal(arrays[name], vals.astype(arrays[name].dtype)):
                raise ValueError(f"shard {info.path.name}: '{name}' differs from other shards")
            arrays[name][...] = vals
            continue
        index = [at[d] if d in at else np.searchsorted(epochs, ds[cube.EPOCH].values) if d == cube.EPOCH
                 else slice(None) for d in dims]
        sub = vals[tuple(0 if d in cube.CELL_DIMS else slice(None) for d in dims)]
        if cube.LAYER in dims:
            sub = _on_layers(sub, [d for d in dims if d not in cube.CELL_DIMS].index(cube.LAYER),
                             [lay.layers[str(n)] for n in ds[cube.LAYER].values.tolist()], len(lay.layers))
        target = arrays[name]
        if name in cube.INT_VARS:
            sub = sub.astype(target.dtype)
        # scalars for the cell axes + an index array for epochs: one broadcast advanced index
        target[tuple(index)] = sub


def _pipeline_coord(values: list[Any], defaults: list[Any]) -> np.ndarray:
    """One per-pipeline coordinate from the shards' values, a pipeline without shards taking its default."""
    filled = [v if v is not None else d for v, d in zip(values, defaults, strict=True)]
    if any(isinstance(v, str) for v in filled):
        return np.array(["" if v is None else str(v) for v in filled], dtype=object)
    return np.array([np.nan if v is None else v for v in filled])


def merge(infos: list[ShardInfo], *, pipelines: list[str], sigma_w: list[float], seeds: list[int],
          attrs: dict[str, Any], pipeline_defaults: dict[str, dict[str, Any]],
          seed_coords: dict[str, list[int]] | None = None) -> xr.Dataset:
    """Merge single-cell shard cubes into one cube over the full grid.

    Deterministic: the result depends only on the set of shards, never on the order they are
    given in (they are sorted by cell), so the same shards give identical data variables.
    Cells without a shard get status missing and NaN / fill values. ``attrs`` become the
    global attributes; ``pipeline_defaults`` supplies per-pipeline coordinates that no shard
    of a pipeline carries (a pipeline whose every cell failed). ``seed_coords`` are the grid's coordinates
    on the seed dim (a crossed design's ``init_seed`` and ``data_seed``, one value per seed index), taken
    from the grid rather than the shards, so that a run index with no shard still has its seeds.
    """
    infos = sorted(infos, key=lambda i: (pipelines.index(i.cell[0]), i.cell[1], i.cell[2]))
    p_idx = {p: i for i, p in enumerate(pipelines)}
    s_idx = {float(s): i for i, s in enumerate(sigma_w)}
    k_idx = {int(k): i for i, k in enumerate(seeds)}
    lay = _survey(infos)
    coords: dict[str, Any] = {
        cube.PIPELINE: np.array(pipelines, dtype=object),
        cube.SIGMA: np.asarray(sigma_w, dtype="float64"),
        cube.SEED: np.asarray(seeds, dtype="int64"),
        **{name: (cube.SEED, np.asarray(values, dtype="int64")) for name, values in (seed_coords or {}).items()},
    }
    if lay.epochs:
        coords[cube.EPOCH] = np.asarray(sorted(lay.epochs), dtype="int64")
    coords.update(lay.fixed)
    if lay.layers:
        coords[cube.LAYER] = np.array(list(lay.layers), dtype=object)
    arrays = _allocate(lay, {d: len(coords[d]) for d in (*cube.CELL_DIMS, cube.EPOCH, cube.LAYER, cube.EXAMPLE)
                             if d in coords})

    pipe_values: dict[str, list[Any]] = {c: [None] * len(pipelines) for c in sorted(lay.pipe_coords)}
    for info in infos:
        pipe, sigma, seed = info.cell
        ip = p_idx[pipe]
        _place(info, (ip, s_idx[float(sigma)], k_idx[int(seed)]), lay, arrays, coords.get(cube.EPOCH))
        for c, vals in pipe_values.items():
            if c in info.ds.coords and vals[ip] is None:
                vals[ip] = cube.to_python(info.ds[c].values[0])

    out = xr.Dataset(coords=coords)
    for name, arr in arrays.items():
        out[name] = (lay.var_dims[name], arr)
    for c, vals in pipe_values.items():
        out = out.assign_coords({c: (cube.PIPELINE, _pipeline_coord(
            vals, [pipeline_defaults.get(p, {}).get(c) for p in pipelines]))})
    out.attrs = dict(attrs)
    return out


def merge_dir(shards_dir: str | os.PathLike, out_path: str | os.PathLike, *, pipelines: list[str],
              sigma_w: list[float], seeds: list[int], accepted_hashes: set[str], attrs: dict[str, Any],
              pipeline_defaults: dict[str, dict[str, Any]],
              seed_coords: dict[str, list[int]] | None = None, jobs: int = 1) -> MergeReport:
    """Read every shard under ``shards_dir`` (with ``jobs`` processes; :func:`scan_shards`), merge, and write
    the cube atomically (``seed_coords``: as :func:`merge`)."""
    good, corrupt = scan_shards(shards_dir, keep_data=True, jobs=jobs)
    wanted = {(p, float(s), int(k)) for p in pipelines for s in sigma_w for k in seeds}
    foreign: list[tuple[Path, str]] = []
    infos: list[ShardInfo] = []
    for cell, info in sorted(good.items(), key=lambda kv: kv[1].path.name):
        if cell not in wanted:
            foreign.append((info.path, f"cell {cell_label(cell)} is not in the grid"))
        elif info.grid_hash not in accepted_hashes:
            foreign.append((info.path, f"trained under grid hash {info.grid_hash[:12]}, not this run's grid"))
        else:
            infos.append(info)
    merged_attrs = dict(attrs)
    first = next((i for i in sorted(infos, key=lambda i: i.path.name) if i.status in (cube.OK, cube.DIVERGED)),
                 None)
    if first is not None and first.ds is not None:
        base = {k: v for k, v in first.ds.attrs.items() if k not in SHARD_ATTRS}
        merged_attrs = {**base, **attrs}
    devices = sorted({str(i.ds.attrs.get("device")) for i in infos if i.ds is not None and "device" in i.ds.attrs})
    if devices:
        merged_attrs["device"] = ",".join(devices)
    for name in MACHINE_ATTRS:   # every machine that trained a cell, each once (coords.py)
        seen = sorted({str(i.ds.attrs[name]) for i in infos
                       if i.ds is not None and i.status in (cube.OK, cube.DIVERGED) and name in i.ds.attrs})
        if seen:
            merged_attrs[name] = CPU_JOIN.join(seen)
    failures = [{cube.PIPELINE: i.cell[0], cube.SIGMA: i.cell[1], cube.SEED: i.cell[2], "error": i.error}
                for i in sorted(infos, key=lambda i: i.path.name) if i.status == cube.FAILED]
    merged_attrs[cube.A_FAILED_CELLS] = json.dumps(failures)
    merged_attrs[cube.A_CORRUPT_SHARDS] = json.dumps([p.name for p, _ in corrupt])
    merged_attrs[cube.A_CREATED] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    merged_attrs[cube.A_SCHEMA] = cube.SCHEMA
    ds = merge(infos, pipelines=pipelines, sigma_w=sigma_w, seeds=seeds, attrs=merged_attrs,
               pipeline_defaults=pipeline_defaults, seed_coords=seed_coords)
    with atomic_path(out_path) as tmp:
        cube.write_cube(ds, tmp)
        hook("merge")
    have = {i.cell for i in infos}
    missing = sorted(wanted - have, key=lambda c: (pipelines.index(c[0]), c[1], c[2]))
    return MergeReport(ds=ds, n_shards=len(infos), corrupt=corrupt, foreign=foreign, missing=missing)

"""Train one pack and turn its result into shards: the unit of work of every executor.

A pack is a list of cells of one pipeline that the engine trains together. This module wires
the engine to the grid folder: it resumes from the pack's checkpoint when one matches, saves
checkpoints atomically, writes one shard per cell, and isolates failures: if a pack raises,
its cells are rerun one by one so that only the culprit gets status failed (with its error
text in its shard) while the others finish.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from initmem import cube
from initmem.collect.execution import checkpoints, shards
from initmem.collect.execution.events import EventLog, cell_dict
from initmem.collect.execution.fault_hooks import hook
from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.shards import Cell
from initmem.collect.train.coords import cube_attrs, pipeline_coords
from initmem.errors import UserError

TrainFn = Callable[..., Any]
EPOCH_EVENT_SECONDS = 10.0  # an "epoch" event at most this often per pack (and at the last epoch)


@dataclass(frozen=True)
class PackTask:
    """One pack to train: its pipeline, all its cells, and the cells whose shards are wanted."""

    pipeline: str
    cells: tuple[tuple[float, int], ...]
    write: tuple[tuple[float, int], ...] = ()

    @property
    def pack_id(self) -> str:
        return checkpoints.pack_id(self.pipeline, list(self.cells))

    @property
    def wanted(self) -> tuple[tuple[float, int], ...]:
        return self.write or self.cells

    def label(self) -> str:
        return f"{self.pipeline} ({len(self.cells)} cell{'s' if len(self.cells) != 1 else ''})"


@dataclass
class PackContext:
    """What a pack needs besides its cells; built once per process."""

    folder: GridFolder
    grid: Any
    grid_hash: str
    device: str
    train_fn: TrainFn
    checkpoint_every: int = 1
    checkpoint_seconds: float | None = None
    on_progress: Callable[[str, str, int, int], None] | None = None  # (pack_id, label, done, total)
    on_cell: Callable[[Cell, int], None] | None = None
    events: EventLog = field(init=False)

    def __post_init__(self) -> None:
        self.events = EventLog(self.folder.events)


def default_train_fn() -> TrainFn:
    from initmem.collect.train.engine import train_pack  # torch: only in the process that trains

    return train_pack


def execute_pack(task: PackTask, ctx: PackContext, *, isolate: bool = True) -> list[tuple[Cell, int]]:
    """Train ``task``; write its wanted shards; return (cell, status) for each wanted cell.

    The pack's lock file is held meanwhile, so ``--status`` can tell it is in training."""
    with checkpoints.pack_lock(ctx.folder.checkpoints, task.pack_id):
        return _execute_pack(task, ctx, isolate=isolate)


def _execute_pack(task: PackTask, ctx: PackContext, *, isolate: bool) -> list[tuple[Cell, int]]:
    pid = task.pack_id
    ckpt_file = checkpoints.checkpoint_path(ctx.folder.checkpoints, pid)
    state, epochs_resumed = _matching_checkpoint(task, ctx, ckpt_file)
    cells = [(float(s), int(k)) for s, k in task.cells]
    ctx.events.emit("pack_start", pack=pid, pipeline=task.pipeline, cells=[list(c) for c in cells],
                    device=ctx.device, resumed_from_epoch=epochs_resumed)
    checkpoints.write_manifest(ctx.folder.checkpoints, pid, task.pipeline, cells)
    last = {"done": epochs_resumed or 0, "logged": 0.0}
    t0 = time.monotonic()

    def progress(done: int, total: int) -> None:
        last["done"] = int(done)
        now = time.monotonic()
        if done >= total or now - last["logged"] >= EPOCH_EVENT_SECONDS:
            ctx.events.emit("epoch", pack=pid, pipeline=task.pipeline, epochs_done=int(done), total=int(total))
            last["logged"] = now
        if ctx.on_progress is not None:
            ctx.on_progress(pid, task.label(), int(done), int(total))
        hook("epoch")

    def save_checkpoint(st: dict[str, Any]) -> None:
        epochs = _epochs_of(st, last["done"])
        checkpoints.save(ckpt_file, pipeline=task.pipeline, cells=cells, grid_hash=ctx.grid_hash,
                         epochs_done=epochs, state=st)
        ctx.events.emit("checkpoint", pack=pid, epochs_done=epochs)

    try:
        ds = ctx.train_fn(ctx.grid, task.pipeline, cells, device=ctx.device, checkpoint=save_checkpoint,
                          checkpoint_every_epochs=ctx.checkpoint_every,
                          checkpoint_every_seconds=ctx.checkpoint_seconds, resume=state, progress=progress)
    except UserError:
        raise  # bad configuration (e.g. a missing dataset) is for the user to fix, not a cell's fault
    except Exception as exc:
        err = f"{exc.__class__.__name__}: {exc}"
        tb = traceback.format_exc()
        if hasattr(exc, "traceback_text"):   # a user-code cell's own reason and traceback (or last output lines)
            err, tb = str(exc), str(exc.traceback_text)
        _free_accelerator_memory()
        checkpoints.finish(ctx.folder.checkpoints, pid)
        ctx.events.emit("pack_failed", pack=pid, pipeline=task.pipeline, error=err,
                        seconds=round(time.monotonic() - t0, 3))
        if isolate and len(cells) > 1:
            results: list[tuple[Cell, int]] = []
            for s, k in task.wanted:
                ctx.events.emit("retry", pack=pid, reason="pack raised; rerunning its cells alone",
                                cell=cell_dict(task.pipeline, s, k))
                results += execute_pack(PackTask(task.pipeline, ((s, k),)), ctx, isolate=False)
            return results
        results = []
        for s, k in task.wanted:
            cell: Cell = (task.pipeline, float(s), int(k))
            _write_failed(cell, ctx, err, tb)
            results.append((cell, cube.FAILED))
        return results

    results = []
    parts = shards.split_pack(ds, [(task.pipeline, float(s), int(k)) for s, k in task.wanted])
    for cell, part in parts.items():
        path = shards.write_shard(part, ctx.folder.shards, cell, grid_hash=ctx.grid_hash)
        status = int(part[cube.STATUS].values.ravel()[0])
        ctx.events.emit("cell", cell=cell_dict(*cell), status=cube.STATUS_NAMES.get(status, str(status)),
                        pack=pid, bytes=_size(path))
        if ctx.on_cell is not None:
            ctx.on_cell(cell, status)
        results.append((cell, status))
    checkpoints.finish(ctx.folder.checkpoints, pid)
    ctx.events.emit("pack_end", pack=pid, pipeline=task.pipeline, seconds=round(time.monotonic() - t0, 3),
                    statuses={shards.cell_label(c): cube.STATUS_NAMES.get(s, str(s)) for c, s in results})
    return results


def _matching_checkpoint(task: PackTask, ctx: PackContext, path: Any) -> tuple[dict[str, Any] | None, int | None]:
    if not path.exists():
        return None, None
    payload, why = checkpoints.load(path)
    if payload is None:
        ctx.events.emit("checkpoint_unusable", pack=task.pack_id, reason=why)
        checkpoints.remove(path)
        return None, None
    same_cells = sorted(map(tuple, payload["cells"])) == sorted((float(s), int(k)) for s, k in task.cells)
    if payload.get("pipeline") != task.pipeline or not same_cells:
        ctx.events.emit("checkpoint_unusable", pack=task.pack_id, reason="cells differ")
        return None, None
    if payload.get("grid_hash") not in ctx.folder.accepted_hashes():
        ctx.events.emit("checkpoint_unusable", pack=task.pack_id, reason="trained under another grid")
        checkpoints.remove(path)
        return None, None
    want = getattr(ctx.train_fn, "state_version", None)  # the engine's state layout, if it declares one
    state = payload.get("state")
    if want is not None and (not isinstance(state, dict) or state.get("version") != want):
        got = state.get("version") if isinstance(state, dict) else None
        ctx.events.emit("checkpoint_unusable", pack=task.pack_id,
                        reason=f"state version {got} from an older engine (now {want}); the pack starts anew")
        checkpoints.remove(path)
        return None, None
    ctx.events.emit("resume", pack=task.pack_id, epochs_done=int(payload.get("epochs_done", 0)))
    return state, int(payload.get("epochs_done", 0))


def _epochs_of(state: dict[str, Any], fallback: int) -> int:
    v = state.get("epochs_done") if isinstance(state, dict) else None
    return v if isinstance(v, int) else int(fallback)


def _write_failed(cell: Cell, ctx: PackContext, err: str, tb: str) -> None:
    spec = ctx.grid.pipelines[cell[0]]
    # No data is loaded here: n_test and the dataset fingerprint come from finished shards at merge.
    if spec.is_user_code:   # the code's identity (collect/custom/user_runner.py), the attributes of user code
        from initmem.collect.custom.user_runner import user_attrs

        coords: dict[str, Any] = ctx.train_fn.pipeline_coords(cell[0])
        attrs = user_attrs(ctx.grid, ctx.device)
    else:
        coords = pipeline_coords(spec, ctx.grid.model_of(cell[0]) if ctx.grid.mixed_models else None)
        attrs = cube_attrs(ctx.grid, ctx.device)
    ds = shards.failed_cell(cell, attrs=attrs, pipeline_coords=coords)
    path = shards.write_shard(ds, ctx.folder.shards, cell, grid_hash=ctx.grid_hash, error=err, traceback_text=tb)
    ctx.events.emit("cell", cell=cell_dict(*cell), status="failed", error=err, bytes=_size(path))
    if ctx.on_cell is not None:
        ctx.on_cell(cell, cube.FAILED)


def _size(path: Any) -> int | None:
    """A shard's size as written, logged so that ``--status`` spots a truncated shard with one stat."""
    try:
        return int(path.stat().st_size)
    except OSError:
        return None


def _free_accelerator_memory() -> None:
    try:
        import torch  # already loaded wherever a pack trained

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass

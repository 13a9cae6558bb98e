"""``initmem collect --status DIR``: how far a (possibly submitted) grid has come.

Reads only the grid folder: the grid, the shard files (their names say which cells are done;
the event log says ok / diverged / failed and each shard's size as written, a shard is opened
only when its log line is missing or its size changed since, e.g. truncated by a failed copy;
a shard the last merge found corrupt counts as corrupt), the event log (packs started and
their last epoch, requeues), the packs' lock files (held while a process trains the pack: a
started pack whose lock nobody holds was interrupted) and, for Slurm runs, the job states
Slurm reports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from initmem import cube
from initmem.collect.execution import checkpoints
from initmem.collect.execution.events import read_events
from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.shards import Cell, CorruptShard, all_cells, read_shard, shard_files, shard_name
from initmem.collect.execution.slurm_executor import pack_progress, squeue_states
from initmem.errors import option


def folder_status(folder_dir: str | os.PathLike) -> dict[str, Any]:
    folder = GridFolder(Path(folder_dir))
    rec = folder.read_record()
    grid = folder.load_grid()
    cells = all_cells(grid)
    accepted = set(rec.get("grid_hashes", []))
    present = {p.name: p for p in shard_files(folder.shards)}
    logged = _logged_statuses(folder, {shard_name(c): c for c in cells})
    corrupt: list[str] = []
    counts = {name: 0 for name in cube.STATUS_NAMES.values()}
    per_pipe: dict[str, dict[str, int]] = {p: dict(counts) for p in grid.pipelines}
    for c in cells:
        name = "missing"
        path = present.get(shard_name(c))
        if path is not None:
            name, size, flagged = logged.get(c, ("", None, False))
            if not name or flagged or (size is not None and _size(path) != size):
                # no log line (a kill between rename and log), not the shard that was written (truncated
                # by a failed copy, say) or the last merge could not read it: open it
                try:
                    info = read_shard(path, keep_data=False)
                    name = cube.STATUS_NAMES[info.status] if info.grid_hash in accepted else "missing"
                except CorruptShard:
                    corrupt.append(path.name)
                    name = "missing"
        counts[name] += 1
        per_pipe[c[0]][name] += 1
    packs = pack_progress(folder)
    active = {pid: p for pid, p in packs.items() if not p["ended"]}
    for pid, p in active.items():
        if not p["total"] and p["pipeline"] in grid.pipelines:
            p["total"] = int(grid.pipelines[p["pipeline"]].epochs or 0)
        p["running"] = checkpoints.pack_running(folder.checkpoints, pid)
        p["checkpoint_file"] = checkpoints.checkpoint_path(folder.checkpoints, pid).exists()
    jobs = rec.get("slurm_jobs", [])
    return {
        "run": str(folder.root), "grid": grid.name, "cells": len(cells), "counts": counts, "pipelines": per_pipe,
        "packs_in_progress": active, "requeues": sum(p["requeues"] for p in packs.values()),
        "corrupt_shards": corrupt, "slurm_jobs": jobs,
        "job_states": _job_states(rec) if jobs else {},
        "cube": str(folder.cube) if folder.cube.exists() else None,
    }


def _logged_statuses(folder: GridFolder, by_name: dict[str, Cell]) -> dict[Cell, tuple[str, int | None, bool]]:
    """Per cell, the last word of the event log (cheap: no shard is opened): the status its shard was
    written with, the shard's size then, and whether a merge since could not read it."""
    out: dict[Cell, tuple[str, int | None, bool]] = {}
    for ev in read_events(folder.events):
        kind = ev.get("event")
        if kind == "cell" and isinstance(ev.get("cell"), dict):
            c = ev["cell"]
            size = ev.get("bytes")
            out[(str(c[cube.PIPELINE]), float(c[cube.SIGMA]), int(c[cube.SEED]))] = (
                str(ev.get(cube.STATUS, "")), int(size) if isinstance(size, int) else None, False)
        elif kind == "merge" and isinstance(ev.get("corrupt"), list):
            bad = {str(name) for name in ev["corrupt"]}
            for name, cell in by_name.items():
                if cell in out or name in bad:
                    status, size, _ = out.get(cell, ("", None, False))
                    out[cell] = (status, size, name in bad)
    return out


def _size(path: Path) -> int | None:
    try:
        return int(path.stat().st_size)
    except OSError:
        return None


def _job_states(rec: dict[str, Any]) -> dict[str, str]:
    """Slurm's view of the submitted jobs via squeue (real Slurm only); jobs gone from the queue
    are reported as ENDED (their shards tell whether they finished)."""
    if rec.get("slurm_cluster") != "slurm":
        return {}
    states = squeue_states()
    if states is None:
        return {}
    return {str(j["job_id"]): states.get(str(j["job_id"]), "ENDED") for j in rec.get("slurm_jobs", [])}


def _pack_line(pid: str, p: dict[str, Any]) -> str:
    """One started, unfinished pack: in training (a live process holds its lock), requeued by Slurm
    (waiting for its task to start again), or interrupted (nobody trains it: --resume continues it)."""
    of = f"/{p['total']}" if p["total"] else ""
    requeued = f", requeued {p['requeues']}x" if p["requeues"] else ""
    if p.get("running") is False and p.get("requeued"):
        return f"  pack {pid}: requeued at epoch {p['done']}{of}, waiting for Slurm to start it again{requeued}"
    if p.get("running") is False:
        ck = p.get("checkpoint", p["done"])
        since = ""
        if 0 < ck < p["done"]:
            since = f", last checkpoint at epoch {ck}"
        elif ck == 0 < p["done"] and not p.get("checkpoint_file"):  # (a file but no log line: killed between)
            since = ", no checkpoint yet"
        return (f"  pack {pid}: interrupted at epoch {p['done']}{of}{since} "
                f"(resume with {option('resume', True)}){requeued}")
    return f"  in training: pack {pid}: epoch {p['done']}{of}{requeued}"


def render_status(st: dict[str, Any]) -> str:
    c = st["counts"]
    finished = c["ok"] + c["diverged"] + c["failed"]
    lines = [f"{st['run']}: grid {st['grid']}: {finished}/{st['cells']} cells finished "
             f"({c['ok']} ok, {c['diverged']} diverged, {c['failed']} failed, {c['missing']} to go)"]
    for pipe, pc in st["pipelines"].items():
        lines.append(f"  {pipe}: {pc['ok'] + pc['diverged'] + pc['failed']}/{sum(pc.values())} finished")
    for pid, p in sorted(st["packs_in_progress"].items()):
        lines.append(_pack_line(pid, p))
    if st["slurm_jobs"]:
        states = st["job_states"]
        if states:
            summary: dict[str, int] = {}
            for s in states.values():
                summary[s] = summary.get(s, 0) + 1
            lines.append("  slurm jobs: " + ", ".join(f"{n} {s}" for s, n in sorted(summary.items())))
        else:
            lines.append(f"  slurm jobs submitted: {len(st['slurm_jobs'])}")
    if st["requeues"]:
        lines.append(f"  requeues so far: {st['requeues']}")
    if st["corrupt_shards"]:
        lines.append(f"  corrupt shards (rerun with {option('resume', True)}): {', '.join(st['corrupt_shards'])}")
    lines.append(f"  cube: {st['cube'] or 'not merged yet (merge it with ' + option('merge', 'DIR') + ')'}")
    return "\n".join(lines)

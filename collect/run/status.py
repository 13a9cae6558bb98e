"""``initmem collect --status DIR``: how far a (possibly submitted) grid has come.

Reads only the run folder: the grid, the shard files (their names say which cells are done;
the event log says ok / diverged / failed, a shard is opened only when its log line is
missing), the event log (packs in training and
their last epoch, requeues) and, for Slurm runs, the job states Slurm reports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from initmem import cube
from initmem.collect.run.events import read_events
from initmem.collect.run.run_folder import RunDir
from initmem.collect.run.shards import Cell, CorruptShard, all_cells, read_shard, shard_files, shard_name
from initmem.collect.run.slurm_executor import pack_progress, squeue_states
from initmem.errors import option


def run_status(run_dir: str | os.PathLike) -> dict[str, Any]:
    run = RunDir(Path(run_dir))
    rec = run.read_record()
    grid = run.load_grid()
    cells = all_cells(grid)
    accepted = set(rec.get("grid_hashes", []))
    present = {p.name for p in shard_files(run.shards)}
    logged = _logged_statuses(run)
    corrupt: list[str] = []
    counts = {name: 0 for name in cube.STATUS_NAMES.values()}
    per_pipe: dict[str, dict[str, int]] = {p: dict(counts) for p in grid.pipelines}
    for c in cells:
        name = "missing"
        if shard_name(c) in present:
            name = logged.get(c, "")
            if not name:  # no log line for it (a kill between rename and log): open the shard
                try:
                    info = read_shard(run.shards / shard_name(c), keep_data=False)
                    name = cube.STATUS_NAMES[info.status] if info.grid_hash in accepted else "missing"
                except CorruptShard:
                    corrupt.append(shard_name(c))
                    name = "missing"
        counts[name] += 1
        per_pipe[c[0]][name] += 1
    packs = pack_progress(run)
    active = {pid: p for pid, p in packs.items() if not p["ended"]}
    jobs = rec.get("slurm_jobs", [])
    return {
        "run": str(run.root), "grid": grid.name, "cells": len(cells), "counts": counts, "pipelines": per_pipe,
        "packs_in_progress": active, "requeues": sum(p["requeues"] for p in packs.values()),
        "corrupt_shards": corrupt, "slurm_jobs": jobs,
        "job_states": _job_states(rec) if jobs else {},
        "cube": str(run.cube) if run.cube.exists() else None,
    }


def _logged_statuses(run: RunDir) -> dict[Cell, str]:
    """The last status the event log records per cell (cheap: no shard is opened)."""
    out: dict[Cell, str] = {}
    for ev in read_events(run.events):
        if ev.get("event") == "cell" and isinstance(ev.get("cell"), dict):
            c = ev["cell"]
            out[(str(c[cube.PIPELINE]), float(c[cube.SIGMA]), int(c[cube.SEED]))] = str(ev.get(cube.STATUS, ""))
    return out


def _job_states(rec: dict[str, Any]) -> dict[str, str]:
    """Slurm's view of the submitted jobs via squeue (real Slurm only); jobs gone from the queue
    are reported as ENDED (their shards tell whether they finished)."""
    if rec.get("slurm_cluster") != "slurm":
        return {}
    states = squeue_states()
    if states is None:
        return {}
    return {str(j["job_id"]): states.get(str(j["job_id"]), "ENDED") for j in rec.get("slurm_jobs", [])}


def render_status(st: dict[str, Any]) -> str:
    c = st["counts"]
    finished = c["ok"] + c["diverged"] + c["failed"]
    lines = [f"{st['run']}: grid {st['grid']}: {finished}/{st['cells']} cells finished "
             f"({c['ok']} ok, {c['diverged']} diverged, {c['failed']} failed, {c['missing']} to go)"]
    for pipe, pc in st["pipelines"].items():
        lines.append(f"  {pipe}: {pc['ok'] + pc['diverged'] + pc['failed']}/{sum(pc.values())} finished")
    for pid, p in sorted(st["packs_in_progress"].items()):
        of = f"/{p['total']}" if p["total"] else ""
        lines.append(f"  in training: pack {pid}: epoch {p['done']}{of}"
                     + (f", requeued {p['requeues']}x" if p["requeues"] else ""))
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

"""End-to-end time of ``make demo`` (``initmem run --preset quick --until-decided --looks 4,8,12,16 --delta 0.02``)
from a cold start, per stage, over fresh runs.

Cold start: a fresh interpreter (imports are counted), an empty run folder (nothing to resume, no
analysis to reuse) and, unless ``--warm-caches``, empty caches: the generated data set and the
compiled sampler (``INITMEM_CACHE_DIR``), PyTensor's compile folder and torch's inductor cache all
point into the run's temporary folder, as on a fresh clone. Prints the seconds of each stage
(collect, analyze, report, from the run's timings.json) and the wall time of each run, then the
minimum / median / maximum over ``--repeat`` runs and their ratio to the 6-minute goal, and where each
analysis's sampler came from ("disk": compiled by the run's background warm-up). Run it with
``ATEN_CPU_CAPABILITY=avx2`` to time torch's AVX2 kernels on an AVX-512 machine (the cube records which ran).

    python benchmarks/end_to_end.py [--repeat 3] [--jobs N] [--keep DIR] [--preset quick | --grid GRID.yaml]
                                    [--looks 4,8,12,16 | none] [--delta 0.02 | none]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 360.0


def cold_env(root: Path) -> dict[str, str]:
    """Environment for one run whose caches all start empty under ``root``."""
    return {
        "INITMEM_CACHE_DIR": str(root / "initmem-cache"),
        "PYTENSOR_FLAGS": f"compiledir={root / 'pytensor'}",
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
    }


def one_run(target: list[str], out: Path, jobs: str, env: dict[str, str]) -> float | None:
    """Run the command once into ``out``; print its stages; return its wall seconds (None: failed)."""
    cmd = [sys.executable, "-m", "initmem.cli", "run", *target, "--out", str(out), "--jobs", jobs]
    print("command:", " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, text=True, capture_output=True, env={**os.environ, "PYTHONWARNINGS": "ignore", **env})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
        print(f"initmem run failed with exit status {proc.returncode} after {wall:.1f} s", file=sys.stderr)
        return None
    timings = json.loads((out / "timings.json").read_text())["seconds"]
    staged = sum(timings.values())
    print(f"{'stage':<10}{'seconds':>10}{'share':>9}")
    for stage, sec in timings.items():
        print(f"{stage:<10}{sec:>10.1f}{sec / wall:>9.0%}")
    print(f"{'startup':<10}{wall - staged:>10.1f}{(wall - staged) / wall:>9.0%}   (interpreter, imports, I/O)")
    print(f"{'total':<10}{wall:>10.1f}")
    print_samplers(out)
    print("report:", proc.stdout.strip().splitlines()[-1], flush=True)
    return wall


def print_samplers(out: Path) -> None:
    """Per analysis (each look of a sequential run): where its sampler came from and what it cost, so that a
    compile the run's background warm-up missed shows (``compile_cache.source`` "compiled")."""
    looks = sorted((out / "analysis" / "looks").glob("*-seeds/summary.json"), key=lambda p: int(p.parent.name[:-6]))
    for path in looks or [out / "analysis" / "summary.json"]:
        diag = json.loads(path.read_text()).get("diagnostics", {})
        cache = diag.get("compile_cache", {})
        source, seconds = cache.get("source", "?"), diag.get("compile_seconds", 0.0)
        print(f"analysis {path.parent.name}: sampler {source} in {seconds:.1f} s, "
              f"sampling {diag.get('sampling_seconds', 0.0):.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--grid", default=None, help="a grid file instead of --preset")
    ap.add_argument("--jobs", default="auto", help="N or auto (the command line default)")
    ap.add_argument("--repeat", type=int, default=1, help="fresh runs, one after another")
    ap.add_argument("--warm-caches", action="store_true", help="keep the user's data and compile caches")
    ap.add_argument("--keep", default=None, help="run into this folder and keep it (default: a temp folder)")
    ap.add_argument("--looks", default="4,8,12,16",
                    help="the sequential looks of make demo (--until-decided); 'none' for a fixed design")
    ap.add_argument("--delta", default="0.02", help="make demo's delta; 'none' for the analysis default")
    args = ap.parse_args(argv)

    target = [args.grid] if args.grid else ["--preset", args.preset]
    if args.looks != "none":
        target += ["--until-decided", "--looks", args.looks]
    if args.delta != "none":
        target += ["--delta", args.delta]
    print(f"cpus: {os.cpu_count()}, load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    walls: list[float] = []
    for i in range(args.repeat):
        tmp = Path(tempfile.mkdtemp(prefix="initmem-e2e-"))
        out = Path(args.keep) if args.keep else tmp / "run"
        if out.exists():
            shutil.rmtree(out)
        try:
            print(f"--- run {i + 1} of {args.repeat}", flush=True)
            wall = one_run(target, out, str(args.jobs), {} if args.warm_caches else cold_env(tmp))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if wall is None:
            return 1
        walls.append(wall)
    med = statistics.median(walls)
    print(f"wall seconds over {len(walls)} run(s): min {min(walls):.1f}, median {med:.1f}, max {max(walls):.1f}; "
          f"load average at end: {os.getloadavg()[0]:.2f}")
    print(f"goal {GOAL_SECONDS:.0f} s: max / goal = {max(walls) / GOAL_SECONDS:.2f} "
          f"({'met' if max(walls) <= GOAL_SECONDS else 'missed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

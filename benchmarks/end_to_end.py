"""End-to-end time of ``initmem run --preset quick`` from a cold start, per stage.

Cold start: a fresh interpreter (imports are counted) and an empty run folder (nothing to resume,
no analysis to reuse). Prints the seconds of each stage (collect, analyze, report, from the run's
timings.json), the wall time of the whole command, and its ratio to the 5-minute goal.

    python benchmarks/end_to_end.py [--jobs N] [--keep DIR] [--preset quick | --grid GRID.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 300.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--grid", default=None, help="a grid file instead of --preset")
    ap.add_argument("--jobs", default="auto", help="N or auto (the command line default)")
    ap.add_argument("--keep", default=None, help="run into this folder and keep it (default: a temp folder)")
    args = ap.parse_args(argv)

    tmp = None
    if args.keep:
        out = Path(args.keep)
        if out.exists():
            shutil.rmtree(out)
    else:
        tmp = tempfile.mkdtemp(prefix="initmem-e2e-")
        out = Path(tmp) / "run"
    target = [args.grid] if args.grid else ["--preset", args.preset]
    cmd = [sys.executable, "-m", "initmem.cli", "run", *target, "--out", str(out), "--jobs", str(args.jobs)]
    print("command:", " ".join(cmd), flush=True)
    print(f"cpus: {os.cpu_count()}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, text=True, capture_output=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - t0
    try:
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
            print(f"initmem run failed with exit status {proc.returncode} after {wall:.1f} s", file=sys.stderr)
            return 1
        timings = json.loads((out / "timings.json").read_text())["seconds"]
        staged = sum(timings.values())
        print(f"{'stage':<10}{'seconds':>10}{'share':>9}")
        for stage, sec in timings.items():
            print(f"{stage:<10}{sec:>10.1f}{sec / wall:>9.0%}")
        print(f"{'startup':<10}{wall - staged:>10.1f}{(wall - staged) / wall:>9.0%}   (interpreter, imports, I/O)")
        print(f"{'total':<10}{wall:>10.1f}")
        print(f"goal {GOAL_SECONDS:.0f} s: total / goal = {wall / GOAL_SECONDS:.2f} "
              f"({'met' if wall <= GOAL_SECONDS else 'missed'})")
        print("report:", proc.stdout.strip().splitlines()[-1])
        return 0
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

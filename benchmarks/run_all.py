"""Every speed benchmark once, with small settings, and one table of what each measured.

    python benchmarks/run_all.py [--only collapse_speed,holm_gc] [--timeout 240]

Each script runs in a fresh interpreter (so its imports are timed as a user meets them) with settings small
enough that the whole finishes in well under ten minutes on two shared cores; the figures are therefore
smoke-sized, not the documented measurements: docs/benchmarks.md gives each script's full command and
its measured figures. A script that needs a GPU, an argument or far longer than the budget is listed as
skipped with the reason. The table: script, what it measured, the headline figure (the line of its
output that carries it), and the seconds the script took. The exit status is 1 when any script failed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Bench:
    """One speed script: its small settings, what it measures, and the output line that carries the figure."""

    script: str
    measures: str
    args: tuple[str, ...] = ()
    figure: str = ""            # regex of the headline line; the last line of output when empty
    skip: str = ""              # why the script is not run here


BENCHES = (
    Bench("holm_gc.py", "Holm's cost: statsmodels vs pingouin, with live objects",
          ("--calls", "2", "--heap", "0,1000000"), r"^\| 1,000,000"),
    Bench("cube_size.py", "paper cube size, raw and compressed",
          ("--epochs", "200", "--seeds", "2", "--n-test", "2000"), r"^epochs"),
    Bench("merge_shards.py", "merge time of single-cell shards",
          ("--pipelines", "2", "--sigma", "4", "--seeds", "5", "--epochs", "20", "--n-test", "1000"), r"^merge \(1\)"),
    Bench("collapse_speed.py", "collapse test with bootstrap, paper-scale cube",
          ("--n-boot", "20"), r"bootstrap replicates"),
    Bench("conv_ceiling.py", "convolutions alone: utilisation ceiling at pack size G",
          ("--G", "4", "--seconds", "0.1"), r"convolutions alone"),
    Bench("train_throughput.py", "packed training throughput, G models vs one",
          ("--G", "1,4", "--seconds", "1"), r"packed-over-single"),
    Bench("measure_cost.py", "cost of the measured clocks per training step",
          ("--G", "1", "--steps", "3", "--rounds", "3"), r"^G="),
    Bench("paper_cost.py", "paper preset cost from a measured throughput",
          ("--steps", "2"), r"whole grid"),
    Bench("recipe_cost.py", "CPU seconds per run of each training recipe, quick preset net",
          ("--epochs", "3"), r"^sgd\+sam"),
    Bench("analyze_speed.py", "initmem analyze, quick-preset cube, cold and warm",
          ("--only", "quick"), r"initmem analyze"),
    Bench("end_to_end.py", "make demo (the quick preset, sequential) from a cold start",
          skip="5.5-6.5 minutes alone: python benchmarks/end_to_end.py"),
    Bench("suite_timing.py", "wall time of the test suite per file",
          skip="runs the whole test suite: python benchmarks/suite_timing.py"),
    Bench("gpu_checks.sh", "throughput and clocks' cost on CUDA",
          skip="needs a CUDA GPU: bash benchmarks/gpu_checks.sh"),
)


def _figure(bench: Bench, out: str) -> str:
    """The headline line of a script's output: the last line matching ``bench.figure``, else the last line."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    if bench.figure:
        hits = [ln for ln in lines if re.search(bench.figure, ln)]
        if hits:
            return hits[-1]
    return lines[-1] if lines else ""


def run(bench: Bench, timeout: float) -> tuple[str, float, bool]:
    """Run one script in a fresh interpreter; (figure or reason, seconds, ok)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(HERE / bench.script), *bench.args], capture_output=True,
                              text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"FAILED: over the {timeout:.0f} s limit", time.perf_counter() - t0, False
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        return f"FAILED (exit {proc.returncode}): {err[-1] if err else ''}", seconds, False
    return _figure(bench, proc.stdout), seconds, True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated script names (without .py) to run")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds allowed to one script")
    args = ap.parse_args()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    rows, failed = [], False
    for bench in BENCHES:
        name = bench.script.rsplit(".", 1)[0]
        if only and name not in only:
            continue
        if bench.skip:
            rows.append((bench.script, bench.measures, f"skipped: {bench.skip}", ""))
            continue
        print(f"running {bench.script} {' '.join(bench.args)}", file=sys.stderr, flush=True)
        figure, seconds, ok = run(bench, args.timeout)
        failed |= not ok
        rows.append((bench.script, bench.measures, figure, f"{seconds:.1f}"))
    print("| script | what it measured | figure | seconds |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(c.replace("|", "/") for c in row) + " |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

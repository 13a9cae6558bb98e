"""Wall time of `make test` and the time spent in each test file, from one run of the suite.

    python benchmarks/suite_timing.py            # runs pytest as `make test` does, with --durations=0

Per file: the sum of its tests' setup, call and teardown durations (a file runs on one worker, so this is
the file's share of that worker's time). The table goes into docs/benchmarks.md. Then the slowest tests
(setup, call and teardown summed per test), which say where a file's time goes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+((tests/[\w/]+\.py)::\S+)")
SLOWEST = 25
WORKER = re.compile(r"^\[(gw\d+)\].*?(?:PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (tests/[\w/]+\.py)::")


def main() -> int:
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
           "--no-loadscope-reorder",
           "--durations=0", *sys.argv[1:]]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    per: dict[str, float] = defaultdict(float)
    per_test: dict[str, float] = defaultdict(float)
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m:
            per[m.group(4)] += float(m.group(1))
            per_test[m.group(3)] += float(m.group(1))
    summary = [ln for ln in proc.stdout.splitlines() if " passed" in ln or " failed" in ln]
    print(f"wall {wall:.0f} s; {summary[-1] if summary else 'no summary'}")
    for line in proc.stdout.splitlines():          # a failure is named here, with pytest's short reason
        if line.startswith(("FAILED ", "ERROR ")):
            print(line)
    print("| test file | seconds |\n|---|---|")
    for f, s in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"| {f} | {s:.1f} |")
    print(f"| (sum over files; 2 workers) | {sum(per.values()):.0f} |")
    print(f"\nthe {SLOWEST} slowest tests (setup + call + teardown):")
    for t, s in sorted(per_test.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        print(f"  {s:6.1f} s  {t}")
    worker = {m.group(2): m.group(1) for m in map(WORKER.match, proc.stdout.splitlines()) if m}
    load: dict[str, float] = defaultdict(float)
    for f, s in per.items():
        load[worker.get(f, "?")] += s
    print("per worker (the wall is about the larger sum plus collection): "
          + ", ".join(f"{w} {s:.0f} s" for w, s in sorted(load.items())))
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())

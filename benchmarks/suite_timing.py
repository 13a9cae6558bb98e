"""Wall time of `make test` and the time spent in each test file, from one run of the suite.

    python benchmarks/suite_timing.py            # runs pytest as `make test` does, with --durations=0
    python benchmarks/suite_timing.py -m "not slow and not browser"    # the tests `make test-fast` runs
    python benchmarks/suite_timing.py --ab-threads [--repeats 2] [tests...]
    python benchmarks/suite_timing.py --ab-holm [--repeats 2] [tests...]
    python benchmarks/suite_timing.py --ab-autoload [--repeats 2] [tests...]

``--ab-threads``: whether two workers on two cores lose time to oversubscribed thread pools. The given tests
(default: four of the heaviest files) on two workers, alternately with each library's default thread count
(a thread per core, as `make test` runs them) and with one thread per worker (OMP_NUM_THREADS = cores /
workers); wall and CPU seconds (user + sys of the whole pytest process tree) of every run, so both sides come
from one run of this script. Measured: no difference (docs/benchmarks.md), so `make test` keeps the defaults.

``--ab-holm``: the given tests (default: every file) alternately with statsmodels' Holm put back
(benchmarks/_statsmodels_holm.py, a pytest plugin: it calls ``gc.collect()`` on every Holm call) and with
pingouin's, which stats/frequentist.py uses; wall and CPU seconds of every run, both sides in one run.

``--ab-autoload``: the given tests (default: every file) alternately with pytest loading every installed
plugin (hypothesis, zarr, anyio and platformdirs ship one; pytest then assertion-rewrites every module of
those packages that a worker imports) and with plugins by name, as `make test` runs pytest.

Per file: the sum of its tests' setup, call and teardown durations (a file runs on one worker, so this is
the file's share of that worker's time). The table goes into docs/benchmarks.md. Then the slowest tests
(setup, call and teardown summed per test), which say where a file's time goes.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+((tests/[\w/]+\.py)::\S+)")
SLOWEST = 25
WORKER = re.compile(r"^\[(gw\d+)\].*?(?:PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (tests/[\w/]+\.py)::")


AB_FILES = ("tests/test_demo_contrast.py", "tests/test_runner.py", "tests/test_memory_model.py", "tests/test_engine.py")


def _cpu_of_children() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


# As `make test` runs pytest: plugins by name (the Makefile's PYTEST), two workers, whole files per worker.
PYTEST = [sys.executable, "-m", "pytest", "-p", "xdist", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
          "--no-loadscope-reorder"]
PYTEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def ab_runs(sides: dict[str, tuple[list[str], dict[str, str]]], tests: list[str], repeats: int) -> int:
    """Each side (extra pytest arguments, extra environment) in turn, ``repeats`` times: wall and CPU seconds."""
    base = [*PYTEST, "-q"]
    print("| side | wall s | CPU s (user + sys) | result |\n|---|---|---|---|")
    rc = 0
    for _ in range(repeats):
        for name, (extra, env) in sides.items():
            cpu0, t0 = _cpu_of_children(), time.perf_counter()
            proc = subprocess.run([*base, *extra, *tests], cwd=ROOT, capture_output=True, text=True,
                                  env={**os.environ, **PYTEST_ENV, **env})
            wall, cpu = time.perf_counter() - t0, _cpu_of_children() - cpu0
            tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "no output"
            print(f"| {name} | {wall:.1f} | {cpu:.1f} | {tail.strip('= ')} |", flush=True)
            rc = rc or proc.returncode
    return rc


def ab_threads(tests: list[str], repeats: int) -> int:
    cores = os.cpu_count() or 1
    one = str(max(1, cores // 2))
    return ab_runs({f"library default ({cores} threads a worker)": ([], {"OMP_NUM_THREADS": str(cores)}),
                    f"one thread per worker ({one})": ([], {"OMP_NUM_THREADS": one})},
                   tests or list(AB_FILES), repeats)


def ab_holm(tests: list[str], repeats: int) -> int:
    plugin = {"PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
    return ab_runs({"statsmodels' Holm (gc.collect per call)": (["-p", "_statsmodels_holm"], plugin),
                    "pingouin's Holm (as shipped)": ([], {})}, tests, repeats)


def ab_autoload(tests: list[str], repeats: int) -> int:
    return ab_runs({"every installed plugin autoloaded": ([], {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": ""}),
                    "plugins by name (make test)": ([], {})}, tests, repeats)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ab-threads", action="store_true", help="compare thread counts per worker (above)")
    ap.add_argument("--ab-holm", action="store_true", help="statsmodels' Holm against pingouin's (above)")
    ap.add_argument("--ab-autoload", action="store_true",
                    help="pytest's plugin autoload against plugins by name, as `make test` runs (above)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each side of an --ab-* comparison")
    args, rest = ap.parse_known_args()
    if args.ab_threads:
        return ab_threads(rest, args.repeats)
    if args.ab_holm:
        return ab_holm(rest, args.repeats)
    if args.ab_autoload:
        return ab_autoload(rest, args.repeats)
    cmd = [*PYTEST, "-v", "--durations=0", *rest]
    cpu0, t0 = _cpu_of_children(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **PYTEST_ENV})
    wall, cpu = time.perf_counter() - t0, _cpu_of_children() - cpu0
    per: dict[str, float] = defaultdict(float)
    per_test: dict[str, float] = defaultdict(float)
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m:
            per[m.group(4)] += float(m.group(1))
            per_test[m.group(3)] += float(m.group(1))
    summary = [ln for ln in proc.stdout.splitlines() if " passed" in ln or " failed" in ln]
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (user + sys of every process of the run: the figure a machine "
          f"loaded by other work changes least); {summary[-1] if summary else 'no summary'}")
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

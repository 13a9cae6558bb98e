"""Verdicts on held-out count imports, through the user's own path: CSV -> ``initmem import`` -> ``initmem analyze``.

The rule-level and model-level calibration (studies/calibration.py) works on tables in outcome units.
A user who brings runs from elsewhere brings counts: test accuracies that are whole counts out of
n_test, which make the analysis use the binomial likelihood and noise bound. This benchmark draws such
tables from designs the rules were not built on -- a binomial test set (``--n-test``, 719 like the
digits demo, at about 97% accuracy), seed effects, a seed x level interaction and a level effect of known size -- writes
them as the CSV of docs/import.md, imports them (``--seeds paired``) and analyzes them with the
defaults, ``--batches`` analyses of ``--pipelines`` pipelines per design:

- ``ramp2``: a 2-point linear ramp across 5 sigma_w levels, 10 seeds ("remembers" is right);
- ``null16``: no memory, 16 seeds ("forgets" is right);
- ``ramp16``: a linear ramp of exactly delta, 16 seeds (both verdicts are false);
- ``null_large``: no memory, 10,000 test examples, 5 seeds ("forgets" is right);
- held out from the rule's own studies: ``step2`` (a 2-point step at the grid's middle) and ``peak2`` (a 2-point
  tent peaking at the middle level), 5 levels, 10 seeds; ``ramp2_7`` (7 levels) and ``ramp2_6`` (6 seeds); and at
  exactly delta, where both verdicts are false: ``step1`` and ``peak1`` at 10 seeds.

Beside each design's verdicts: how often the rule before the current one (the model's P(spread > delta) >= 0.95 as
well as the ordered test) would have said "remembers" on the same fits, read from the same summaries.

    python studies/count_import_calibration.py [--designs ramp2,null16,ramp16,null_large] [--batches 2]
        [--accuracy 0.97] [--interaction 0.002]

Prints the verdict counts per design with 95% Wilson intervals (docs/memory-model.md, "Calibration").
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from initmem.models.designs import wilson

DESIGNS = {  # spread in points, levels, seeds, n_test; the shape is the name's prefix (ramp, step, peak, null)
    "ramp2": (2.0, 5, 10, 719),
    "null16": (0.0, 5, 16, 719),
    "ramp16": (1.0, 5, 16, 719),
    "null_large": (0.0, 5, 5, 10_000),
    "step2": (2.0, 5, 10, 719),
    "peak2": (2.0, 5, 10, 719),
    "ramp2_7": (2.0, 7, 10, 719),
    "ramp2_6": (2.0, 5, 6, 719),
    "step1": (1.0, 5, 10, 719),
    "peak1": (1.0, 5, 10, 719),
}


def profile(design: str, n_lev: int) -> np.ndarray:
    """The memory's shape over ``n_lev`` levels with max - min = 1 (a ramp, a step at the middle, a tent)."""
    i, mid = np.arange(n_lev), n_lev // 2
    if design.startswith("step"):
        return (i >= mid).astype(float)
    if design.startswith("peak"):
        return 1.0 - np.abs(i - mid) / mid
    return i / (n_lev - 1)
BASE_ACC, SEED_SD, INTERACTION_SD = 0.97, 0.005, 0.002   # accuracy, seed SD, seed x level SD (fractions)


def write_counts(path: Path, design: str, n_pipe: int, rng: np.random.Generator, base_acc: float = BASE_ACC,
                 interaction_sd: float = INTERACTION_SD) -> None:
    """One CSV of ``n_pipe`` pipelines drawn from ``design``: accuracies that are whole counts."""
    spread, n_lev, n_seed, n_test = DESIGNS[design]
    sigma_w = np.geomspace(0.25, 4.0, n_lev)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["pipeline", "sigma_w", "seed", "test_acc"])
        for p in range(n_pipe):
            ramp = spread / 100 * profile(design, n_lev)
            ramp = ramp[:: rng.choice([-1, 1])] if design.startswith(("ramp", "null")) else ramp
            seed_eff = rng.normal(0.0, SEED_SD, n_seed)
            for i, s_w in enumerate(sigma_w):
                acc = np.clip(base_acc + ramp[i] + seed_eff + rng.normal(0.0, interaction_sd, n_seed), 0, 1)
                counts = rng.binomial(n_test, acc)
                for s in range(n_seed):
                    w.writerow([f"p{p:02d}", f"{s_w:g}", s, f"{counts[s] / n_test:.10f}"])


def run_batch(tmp: Path, design: str, batch: int, n_pipe: int, seed: int, **noise: float) -> list[str]:
    rng = np.random.default_rng([seed, batch, list(DESIGNS).index(design)])
    src, cube, out = tmp / f"{design}-{batch}.csv", tmp / f"{design}-{batch}.nc", tmp / f"{design}-{batch}-analysis"
    write_counts(src, design, n_pipe, rng, **noise)
    n_test = DESIGNS[design][3]
    for args in (["import", str(src), "-o", str(cube), "--n-test", str(n_test), "--seeds", "paired"],
                 ["analyze", str(cube), "--out", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "initmem.cli", *args], text=True, capture_output=True)
        if proc.returncode != 0:
            raise SystemExit(f"initmem {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return [(entry["verdict"], _before(entry)) for entry in summary["pipelines"].values() if isinstance(entry, dict)]


def _before(entry: dict) -> str:
    """The verdict the rule before the current one gave: "remembers" also needed P(spread > delta) >= 0.95."""
    if entry["verdict"] == "remembers" and entry["p_spread_gt_delta"] < 0.95:
        return "undecided"
    return entry["verdict"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--designs", default=",".join(DESIGNS))
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--pipelines", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--accuracy", type=float, default=BASE_ACC, help="mean accuracy (fraction)")
    ap.add_argument("--interaction", type=float, default=INTERACTION_SD, help="seed x level SD (fraction)")
    args = ap.parse_args(argv)
    noise = {"base_acc": args.accuracy, "interaction_sd": args.interaction}
    print("| design | pipelines | remembers (95% Wilson) | forgets | undecided (borderline or not) "
          "| remembers, the rule before |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="initmem-counts-") as t:
        for design in args.designs.split(","):
            pairs = [v for b in range(args.batches)
                     for v in run_batch(Path(t), design, b, args.pipelines, args.seed, **noise)]
            verdicts, before = [v for v, _ in pairs], [b for _, b in pairs]
            n = len(verdicts)

            def rate(name: str, vs=verdicts, n=n) -> str:
                k = sum(v == name for v in vs)
                lo, hi = wilson(k, n)
                return f"{k}/{n} = {k / n:.2f} ({lo:.2f}-{hi:.2f})"

            rest = sum(v not in ("remembers", "forgets") for v in verdicts)
            print(f"| {design} | {n} | {rate('remembers')} | {rate('forgets')} | {rest}/{n} | "
                  f"{rate('remembers', before)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

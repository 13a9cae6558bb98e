"""The sequential design of ``initmem run --until-decided`` against the fixed design, at the rule level
(docs/sequential.md): per simulated pipeline, a 16-seed table is drawn once; each look k uses its first
n_k seeds and decides at its level alpha_k (the O'Brien-Fleming-type spending of analysis/sequential.py),
the model's probabilities evaluated by the planner's quadrature (models/plan.py) and the seeds' ordered
and intersection-union tests at alpha_k; the first decision stands. The fixed design decides once, at
16 seeds and alpha = 0.05. Reported: each verdict's rate with its 95% Wilson interval, the expected and
largest seeds spent per pipeline.

    python benchmarks/sequential_calibration.py [--n 600] [--looks 4,8,12,16]
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from initmem.models.plan import rule_decisions, sequential_decisions
from initmem.models.sequential import look_levels
from initmem.names import ALPHA
from tests._memory_designs import RULE_DESIGNS, SCALES, noise_sd, rule_tables, wilson

DELTA = 0.01
# (design, scale): the sequential targets (nulls at the demo's scale) and the false-verdict designs at delta.
CASES = [("null", "demo"), ("null", "paper"), ("ramp", "demo"), ("slopes_at_delta", "demo"), ("step", "demo"),
         ("noisy_at_delta", "demo"), ("ramp2", "demo")]


def run_case(kind: str, scale: str, n: int, looks: list[int]) -> dict:
    rng = np.random.default_rng(zlib.crc32(f"seq-{kind}-{scale}".encode()))
    tables = rule_tables(kind, scale, n, rng, n_seed=looks[-1], delta=DELTA)
    tables = tables[~np.isnan(tables).any(axis=(1, 2))]
    sig, n_lev = noise_sd(SCALES[scale]["n_test"]), tables.shape[1]
    std, sigma_w = (tables - 0.9) / sig, np.geomspace(0.25, 8.0, n_lev)
    verdict, seeds = sequential_decisions(std, DELTA / sig, looks, rng, sigma_w)
    fixed = rule_decisions(std, DELTA / sig, ALPHA, rng, sigma_w)
    m = tables.shape[0]

    def rate(v: np.ndarray, which: int) -> str:
        k = int((v == which).sum())
        lo, hi = wilson(k, m)
        return f"{k}/{m} = {k / m:.1%} [{100 * lo:.1f}, {100 * hi:.1f}]"

    return {"design": kind, "scale": scale, "doc": RULE_DESIGNS[kind]["doc"], "false": RULE_DESIGNS[kind]["false"],
            "seq_remembers": rate(verdict, 1), "seq_forgets": rate(verdict, -1),
            "fixed_remembers": rate(fixed, 1), "fixed_forgets": rate(fixed, -1),
            "seeds_mean": float(seeds.mean()), "seeds_max": int(seeds.max())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600, help="simulated pipelines per design")
    ap.add_argument("--looks", default="4,8,12,16")
    args = ap.parse_args()
    looks = [int(x) for x in args.looks.split(",")]
    print(f"looks {looks}, levels {[round(x, 5) for x in look_levels(looks)]}")
    print("| design | scale | sequential: remembers | sequential: forgets | seeds (mean / max) "
          "| fixed 16: remembers | fixed 16: forgets |\n|---|---|---|---|---|---|---|")
    for kind, scale in CASES:
        r = run_case(kind, scale, args.n, looks)
        print(f"| {kind} ({r['doc']}; false: {', '.join(r['false'])}) | {scale} | {r['seq_remembers']} "
              f"| {r['seq_forgets']} | {r['seeds_mean']:.1f} / {r['seeds_max']} | {r['fixed_remembers']} "
              f"| {r['fixed_forgets']} |", flush=True)


if __name__ == "__main__":
    main()

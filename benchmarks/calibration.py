"""Calibration of the memory verdict on designs the model does not describe (real NUTS fits).

For each design (tests/_memory_designs.py: seed-specific slopes, one sigma_w level 10-20x
noisier, step / ramp / single-level memory exactly at delta, 3 levels x 3 seeds at delta, slopes
and a noisy level with memory at delta, a compound-symmetric null, and a 2-point memory at 10
seeds) and each scale (the demo's: 720 examples, 6 levels, 3-5 seeds; the paper's: 10,000
examples, 7 levels, 5 seeds) it refits ``--fits`` batches of 24 pipelines on one compiled sampler
(default settings: 4 chains x 1,000 draws; ``--chains 2 --draws 500`` on a shared machine) and
prints, per design, the rates of "remembers" and "forgets" (final verdict, and the model's alone
before the paired check) with 95% Wilson intervals, the rate of failed model checks, and the
sampler's health: divergences, the largest R-hat, the smallest bulk ESS. The calibration table of
docs/memory-model.md comes from here.

    python benchmarks/calibration.py [--fits 2] [--designs slopes,step] [--scales demo,paper]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from initmem.models.summaries import attach_checks
from tests._memory_designs import DESIGNS, SCALES, compiled_model, design_tables, wilson

DEFAULT = {"draws": 1000, "tune": 1000, "chains": 4, "progress": False}


def _rate(verdicts: list[str], which: str) -> dict:
    k, n = verdicts.count(which), len(verdicts)
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n, "lo": lo, "hi": hi}


def run(designs: list[str], scales: list[str], fits: int, seed: int = 0, fit: dict | None = None) -> list[dict]:
    base = compiled_model(10, **(fit or DEFAULT))
    rows = []
    for kind in designs:
        for scale in scales:
            rng = np.random.default_rng(zlib.crc32(f"{kind}-{scale}-{seed}".encode()))
            final, model, checked, div, rhat, ess, t0 = [], [], 0, 0, 1.0, np.inf, time.perf_counter()
            for f in range(fits):
                d, _ = design_tables(kind, scale, rng)
                m = base.refit(d, seed=seed + f)
                diag = m.diagnostics()
                div += diag["divergences"]
                rhat, ess = max(rhat, diag["max_rhat"]), min(ess, diag["min_ess_bulk"])
                out = m.summarize(0.01)
                attach_checks(out, m.ppc(seed=f))
                final += [e["verdict"] for e in out.values()]
                model += [e["model_verdict"] for e in out.values()]
                checked += sum(bool(e["checks_failed"]) for e in out.values())
            row = {"design": kind, "scale": scale, "n": len(final),
                   "remembers": _rate(final, "remembers"), "forgets": _rate(final, "forgets"),
                   "model_remembers": _rate(model, "remembers"), "model_forgets": _rate(model, "forgets"),
                   "checks_failed": checked / len(final), "divergences": div, "max_rhat": rhat,
                   "min_ess_bulk": ess, "seconds": time.perf_counter() - t0}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def _cell(r: dict) -> str:
    return f"{r['rate']:.3f} ({r['k']}/{r['n']}; {r['lo']:.3f}-{r['hi']:.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fits", type=int, default=2, help="refits of 24 pipelines per design and scale")
    ap.add_argument("--designs", default=",".join(DESIGNS))
    ap.add_argument("--scales", default=",".join(SCALES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=1000, help="draws and tuning steps per chain")
    args = ap.parse_args()
    fit = {"draws": args.draws, "tune": args.draws, "chains": args.chains, "progress": False}
    rows = run(args.designs.split(","), args.scales.split(","), args.fits, args.seed, fit)
    print("\n| design | scale | remembers (95% Wilson) | forgets | model alone: remembers | model alone: forgets "
          "| checks failed | divergences | max R-hat | min bulk ESS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['design']} | {r['scale']} | {_cell(r['remembers'])} | {_cell(r['forgets'])} | "
              f"{r['model_remembers']['rate']:.3f} | {r['model_forgets']['rate']:.3f} | {r['checks_failed']:.2f} | "
              f"{r['divergences']} | {r['max_rhat']:.4f} | {r['min_ess_bulk']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The sequential design of ``initmem run --until-decided`` against the fixed design, at the rule level
(docs/sequential.md): per simulated pipeline, a 16-seed table is drawn once; each look k uses its first
n_k seeds and decides at its level (models/sequential.py), the model's probabilities evaluated by the
planner's quadrature (models/plan.py) and the seeds' ordered and intersection-union tests at that level;
the first decision stands. The designs side by side on the same tables (``--designs``): the union bound's
levels (the spending increments, summing to alpha), the exact group-sequential levels of the canonical joint
distribution, and those levels recomputed for the seeds' paired t tests on nested seeds (the analysis's
design). The fixed design decides once, at 16 seeds and alpha = 0.05.
Reported: each verdict's rate with its 95% Wilson interval, the mean and largest seeds spent per pipeline.

    python studies/sequential_calibration.py [--n 600] [--looks 4,8,12,16] [--cases ramp:demo,null:paper]
        [--designs union,exact,paired-t]
    python studies/sequential_calibration.py --tests-only 100000
    python studies/sequential_calibration.py --n 600 --looks 3,4,5,6 --designs paired-t --simulator 16
    python studies/sequential_calibration.py --n 2000 --designs paired-t --mixed --cases two_levels:paper

``--tests-only N``: the seeds' paired tests alone (no model), on N tables per design, where they are
nearly exact: two levels at delta (the intersection-union test is a TOST at its boundary) and a ramp
at delta at the paper's scale.

``--mixed``: what reporting two designs' verdicts would cost (docs/sequential.md, "One design's verdicts"):
a fixed analysis of the first look's seeds at alpha, its verdict kept where it decided and the sequential
design's verdict taken for the rest. Each design alone keeps alpha; the mix spends it twice.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib

import numpy as np

from initmem.models.designs import RULE_DESIGNS, SCALES, noise_sd, rule_tables, simulator_memories, wilson
from initmem.models.paired import forgets_bounds, remembers_at
from initmem.models.plan import rule_decisions, sequential_decisions
from initmem.models.sequential import DESIGNS, design_levels
from initmem.names import ALPHA

DELTA = 0.01
# (design, scale): the nulls (the seeds the design saves), the false-verdict designs at delta it was first
# measured on, a 2-point ramp (power), and held-out designs at delta: one level, two levels (the TOST alone
# decides "forgets"), three levels, t3 noise, and the paper's scale where the IUT at 16 seeds is nearly exact.
CASES = [("null", "demo"), ("null", "paper"), ("ramp", "demo"), ("slopes_at_delta", "demo"), ("step", "demo"),
         ("noisy_at_delta", "demo"), ("ramp2", "demo"), ("single", "demo"), ("two_levels", "demo"),
         ("three_levels", "demo"), ("t3_at_delta", "demo"), ("t3", "demo"), ("ramp", "paper"),
         ("slopes_at_delta", "paper"), ("two_levels", "paper")]


def rate(v: np.ndarray, which: int) -> str:
    k, m = int((v == which).sum()), v.size
    lo, hi = wilson(k, m)
    return f"{k}/{m} = {k / m:.1%} [{100 * lo:.1f}, {100 * hi:.1f}]"


def run_case(kind: str, scale: str, n: int, looks: list[int], designs: list[str], mixed: bool = False) -> dict:
    rng = np.random.default_rng(zlib.crc32(f"seq-{kind}-{scale}".encode()))
    tables = rule_tables(kind, scale, n, rng, n_seed=looks[-1], delta=DELTA)
    tables = tables[~np.isnan(tables).any(axis=(1, 2))]
    sig, n_lev = noise_sd(SCALES[scale]["n_test"]), tables.shape[1]
    std, sigma_w = (tables - 0.9) / sig, np.geomspace(0.25, 8.0, n_lev)
    out = {"design": kind, "scale": scale, "doc": RULE_DESIGNS[kind]["doc"], "false": RULE_DESIGNS[kind]["false"]}
    verdicts = {}
    for name in designs:
        verdicts[name], seeds = sequential_decisions(std, DELTA / sig, looks, rng, sigma_w, design=DESIGNS[name])
        out[name] = {"remembers": rate(verdicts[name], 1), "forgets": rate(verdicts[name], -1),
                     "seeds_mean": float(seeds.mean()), "seeds_max": int(seeds.max())}
    fixed = rule_decisions(std, DELTA / sig, ALPHA, rng, sigma_w)
    out["fixed"] = {"remembers": rate(fixed, 1), "forgets": rate(fixed, -1)}
    if mixed:       # a fixed analysis of the first look at alpha, then the (first) sequential design for the rest
        first = rule_decisions(std[:, :, : looks[0]], DELTA / sig, ALPHA, rng, sigma_w)
        mix = np.where(first != 0, first, verdicts[designs[0]])
        out["mixed"] = {f"fixed {looks[0]}": {"remembers": rate(first, 1), "forgets": rate(first, -1)},
                        "mixed": {"remembers": rate(mix, 1), "forgets": rate(mix, -1)}}
    return out


def simulator_case(n_cubes: int, looks: list[int], designs: list[str]) -> dict:
    """Power in the same run as the false verdicts: the simulator's exchangeable memories of 12 points or more
    (models/designs.py, ``simulator_memories``; 6 levels, about 1.3 points of run noise), each decided
    on its own noise scale, sequentially and at the fixed design of the last look and of the first."""
    rng = np.random.default_rng(zlib.crc32(b"seq-simulator"))
    rows = list(simulator_memories(n_cubes, looks[-1]))
    out = {"design": "simulator_12", "scale": "simulator", "doc": "simulator's exchangeable memory >= 12 points",
           "false": ["forgets"]}
    for name in designs:
        got = [sequential_decisions(std[None], d, looks, rng, sig, design=DESIGNS[name]) for _, std, d, sig in rows]
        verdict, seeds = np.array([v[0] for v, _ in got]), np.array([s[0] for _, s in got])
        out[name] = {"remembers": rate(verdict, 1), "forgets": rate(verdict, -1),
                     "seeds_mean": float(seeds.mean()), "seeds_max": int(seeds.max())}
    for label, k in (("fixed", looks[-1]), ("first look alone", looks[0])):
        fixed = np.array([rule_decisions(std[None, :, :k], d, ALPHA, rng, sig)[0] for _, std, d, sig in rows])
        out[label] = {"remembers": rate(fixed, 1), "forgets": rate(fixed, -1)}
    return out


def tests_only(n: int, looks: list[int], designs: list[str]) -> None:
    """False verdicts of the design-based tests alone, sequentially under each design and at the fixed design."""
    print("| design | scale | levels | false 'forgets' (IUT) | false 'remembers' (ordered test) |")
    print("|---|---|---|---|---|")
    for kind, scale in (("two_levels", "demo"), ("ramp16", "paper")):
        rng = np.random.default_rng(11)
        t = rule_tables(kind, scale, n, rng, n_seed=looks[-1], delta=DELTA)
        plans = [(d, looks, design_levels(looks, ALPHA, DESIGNS[d])) for d in designs]
        for name, lk, levels in [*plans, (f"fixed {looks[-1]}", [looks[-1]], [ALPHA])]:
            forgets, remembers, open_ = np.zeros(n, bool), np.zeros(n, bool), np.ones(n, bool)
            for n_k, a_k in zip(lk, levels, strict=True):
                f, r = forgets_bounds(t[:, :, :n_k], a_k) < DELTA, remembers_at(t[:, :, :n_k], DELTA, a_k)
                forgets |= open_ & f
                remembers |= open_ & r & ~f
                open_ &= ~(f | r)
            print(f"| {kind} | {scale} | {name} | {rate(forgets.astype(int), 1)} | {rate(remembers.astype(int), 1)} |",
                  flush=True)


def _cells(r: dict, designs: list[str], digits: int) -> str:
    """One table row's cells: each design's verdict rates and seeds, then the fixed design's rates."""
    cells = [x for d in designs for x in (r[d]["remembers"], r[d]["forgets"],
                                          f"{r[d]['seeds_mean']:.{digits}f} / {r[d]['seeds_max']}")]
    return " | ".join([*cells, r["fixed"]["remembers"], r["fixed"]["forgets"]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600, help="simulated pipelines per design")
    ap.add_argument("--looks", default="4,8,12,16")
    ap.add_argument("--cases", default="", help="design:scale,... (default: all of CASES)")
    ap.add_argument("--designs", default=",".join(DESIGNS), help=f"of {', '.join(DESIGNS)}")
    ap.add_argument("--tests-only", type=int, default=0, help="tables per design: the paired tests alone, no model")
    ap.add_argument("--mixed", action="store_true", help="also: a fixed analysis of the first look at alpha "
                    "mixed with the sequential verdicts (what reporting two designs costs)")
    ap.add_argument("--simulator", type=int, default=0, help="cubes of the simulator's 12-point memories: a power "
                    "row beside the false verdicts, in the same run (with --looks 3,4,5,6: docs/sequential.md)")
    args = ap.parse_args()
    looks = [int(x) for x in args.looks.split(",")]
    if args.tests_only:
        tests_only(args.tests_only, looks, args.designs.split(","))
        return
    cases = [tuple(c.split(":")) for c in args.cases.split(",")] if args.cases else CASES
    designs = args.designs.split(",")
    for name in designs:
        print(f"{name}: looks {looks}, levels {[round(x, 5) for x in design_levels(looks, ALPHA, DESIGNS[name])]}")
    head = [f"{d}: {c}" for d in designs for c in ("remembers", "forgets", "seeds (mean / max)")]
    head += [f"fixed {looks[-1]}: remembers", f"fixed {looks[-1]}: forgets"]
    print("\n| design | scale | " + " | ".join(head) + " |\n|" + "---|" * (len(head) + 2))
    for kind, scale in cases:
        t0 = time.perf_counter()
        r = run_case(kind, scale, args.n, looks, designs, args.mixed)
        print(f"| {kind} ({r['doc']}; false: {', '.join(r['false'])}) | {scale} | " + _cells(r, designs, 1) + " |",
              flush=True)
        if args.mixed:
            print("  " + "; ".join(f"{k}: remembers {v['remembers']}, forgets {v['forgets']}"
                                   for k, v in r["mixed"].items()), flush=True)
        print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    if args.simulator:
        r = simulator_case(args.simulator, looks, designs)
        print(f"| {r['design']} ({r['doc']}; false: forgets) | {r['scale']} | " + _cells(r, designs, 2) + " |")
        print(f"  first look alone ({looks[0]} seeds): remembers {r['first look alone']['remembers']}", flush=True)


if __name__ == "__main__":
    main()

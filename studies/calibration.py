"""Calibration of the memory verdict on designs the model does not describe (real NUTS fits).

For each design (models/designs.py: seed-specific slopes, one sigma_w level 10-20x
noisier, step / ramp / single-level memory exactly at delta, 3 levels x 3 seeds at delta, slopes
and a noisy level with memory at delta, a compound-symmetric null, and a 2-point memory at 10
seeds) and each scale (the demo's: 720 examples, 6 levels, 3-5 seeds; the paper's: 10,000
examples, 7 levels, 5 seeds) it refits ``--fits`` batches of 24 pipelines on one compiled sampler
(default settings: 4 chains x 1,000 draws; ``--chains 2 --draws 500`` on a shared machine) and
prints, per design, the rates of "remembers" and "forgets" (final verdict, and the model's alone
before the paired check) with 95% Wilson intervals, the rate of failed model checks, and the
sampler's health: divergences, the largest R-hat, the smallest bulk ESS. The calibration table of
docs/memory-model.md comes from here.

``--rules N`` instead measures the decision rules themselves by fast simulation (no NUTS): on N
tables per design of models/designs.py's RULE_DESIGNS (nulls, steps / ramps / one level /
2 and 3 levels exactly at delta, seed slopes, a noisy level, t3 seed noise, runs missing not at
random, 16 seeds, power designs; and the designs held out late: noise rising along sigma_w, seeds
that wander along sigma_w, one wild run, memory peaking mid-sweep) the rates, with 95% Wilson
intervals, of the ordered paired test of "remembers", the intersection-union test of "forgets", the
former Bonferroni check (as it was, one-sided in the observed direction, and with the two-sided
correction), an IUT with residual degrees of freedom pooled over the table (valid only under
sphericity), and the full rule with the model's probabilities evaluated by the planner's quadrature
(models/plan.py, the analysis's own posterior for complete tables; MNAR tables are skipped there).

    python studies/calibration.py [--fits 2] [--designs slopes,step] [--scales demo,paper]
    python studies/calibration.py --rules 4000 [--quadrature 1000] [--rule-designs late|hetero,walk] [--simulator 0]
    python studies/calibration.py --simulator-only [--simulator 8] [--simulator-looks 3,4,5,6]
"""

from __future__ import annotations

import argparse
import json
import time
import zlib
from dataclasses import replace

import numpy as np
from scipy import stats

from initmem.models.designs import (
    DESIGNS,
    LATE_HELD_OUT,
    RULE_DESIGNS,
    SCALES,
    L,
    P,
    compiled_model,
    design_tables,
    noise_sd,
    pooled_pair_se,
    rule_tables,
    simulator_memories,
    table_data,
    wilson,
)
from initmem.models.paired import (
    bonferroni_bounds,
    forgets_bounds,
    forgets_levels,
    remembers_at,
    two_sided_ordered_bounds,
)
from initmem.models.summaries import DECISION, attach_checks
from initmem.names import ALPHA, ESS_MIN, RHAT_MAX

DEFAULT = {"draws": 1000, "tune": 1000, "chains": 4, "progress": False}


def _rate(verdicts: list[str], which: str) -> dict:
    k, n = verdicts.count(which), len(verdicts)
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n, "lo": lo, "hi": hi}


def rule_design_data(kind: str, scale: str, rng: np.random.Generator, n_seed: int, delta: float = 0.01):
    """A rule-level design (models/designs.py, RULE_DESIGNS) as MemoryData of the compiled
    shape (P pipelines, L levels, ``n_seed`` seeds; unused cells absent)."""
    spec = RULE_DESIGNS[kind]
    y = np.full((P, L, n_seed), np.nan)
    seeds = [spec["seeds"]] if spec.get("seeds") else list(SCALES[scale]["seeds"])
    for g, s in enumerate(seeds):
        rows = np.arange(P)[g::len(seeds)]
        t = rule_tables(kind, scale, rows.size, rng, n_seed=s if not spec.get("seeds") else None, delta=delta)
        y[rows, : t.shape[1], : t.shape[2]] = t
    used = np.isfinite(y)
    d = table_data(np.where(used, y, 0.0), used, noise_sd(SCALES[scale]["n_test"]))
    return replace(d, y=np.where(used, y, np.nan))


def run(designs: list[str], scales: list[str], fits: int, seed: int = 0, fit: dict | None = None) -> list[dict]:
    rows = []
    for kind in designs:
        n_seed = max(10, RULE_DESIGNS.get(kind, {}).get("seeds") or 0)
        base = compiled_model(n_seed, **(fit or DEFAULT))
        for scale in scales:
            rng = np.random.default_rng(zlib.crc32(f"{kind}-{scale}-{seed}".encode()))
            rules: list[str] = []
            final, model, checked, div, rhat, ess, t0 = [], [], 0, 0, 1.0, np.inf, time.perf_counter()
            flagged = 0  # pipelines whose R-hat or bulk ESS misses the analysis's goals (names.RHAT_MAX, ESS_MIN)
            for f in range(fits):
                d = design_tables(kind, scale, rng)[0] if kind in DESIGNS else rule_design_data(kind, scale, rng,
                                                                                                n_seed)
                m = base.refit(d, seed=seed + f)
                diag = m.diagnostics()
                div += diag["divergences"]
                rhat, ess = max(rhat, diag["max_rhat"]), min(ess, diag["min_ess_bulk"])
                flagged += sum(s["max_rhat"] > RHAT_MAX or s["min_ess_bulk"] < ESS_MIN
                               for s in diag["per_pipeline"].values())
                out = m.summarize(0.01)
                attach_checks(out, m.ppc(seed=f))
                final += [e["verdict"] for e in out.values()]
                rules += [e["rule"] for e in out.values()]
                model += [e["model_verdict"] for e in out.values()]
                checked += sum(bool(e["checks_failed"]) for e in out.values())
            row = {"design": kind, "scale": scale, "n": len(final),
                   "remembers": _rate(final, "remembers"), "forgets": _rate(final, "forgets"),
                   "model_remembers": _rate(model, "remembers"), "model_forgets": _rate(model, "forgets"),
                   "rules": {r: rules.count(r) for r in sorted(set(rules))},
                   "checks_failed": checked / len(final), "divergences": div, "max_rhat": rhat,
                   "min_ess_bulk": ess, "pipelines_flagged": flagged, "seconds": time.perf_counter() - t0}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def pooled_forgets_bounds(tables: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """The IUT with every pair's SE from the residual mean square of the levels x seeds table
    ((L - 1)(S - 1) df): what pooling would buy, valid only when every pair's difference has the
    same variance (sphericity). Complete tables only."""
    se, df = pooled_pair_se(tables)
    means = tables.mean(axis=-1)
    spread = means.max(axis=-1) - means.min(axis=-1)
    return spread + stats.t.ppf(1 - alpha, df) * se


def rule_rows(n: int, n_quad: int, seed: int = 0, delta: float = 0.01,
              kinds: list[str] | None = None) -> list[dict]:
    """Rule-level rates per design (all of RULE_DESIGNS, or ``kinds``) and scale (see the module docstring)."""
    from initmem.models.plan import decide, posterior_spread

    rows = []
    for kind, spec in RULE_DESIGNS.items():
        if kinds and kind not in kinds:
            continue
        for scale in SCALES:
            rng = np.random.default_rng(zlib.crc32(f"rules-{kind}-{scale}-{seed}".encode()))
            seeds = [None] if spec.get("seeds") else list(SCALES[scale]["seeds"])
            hits: dict[str, list[int]] = {}

            def add(name: str, x: np.ndarray, _h: dict = hits) -> None:
                _h.setdefault(name, [0, 0])
                _h[name][0] += int(x.sum())
                _h[name][1] += x.size

            for s in seeds:
                t = rule_tables(kind, scale, n // len(seeds), rng, n_seed=s, delta=delta)
                add("ordered", remembers_at(t, delta))
                add("ordered_two_sided", two_sided_ordered_bounds(t) > delta)   # before the Berger-Boos p
                add("iut", forgets_bounds(t) < delta)                            # the test at alpha
                add("iut_rule", forgets_bounds(t, forgets_levels(ALPHA)[0]) < delta)   # as the rule runs it
                add("bonferroni", bonferroni_bounds(t) > delta)
                add("bonferroni_two_sided", bonferroni_bounds(t, two_sided=True) > delta)
                if not np.isnan(t).any():
                    add("iut_pooled", pooled_forgets_bounds(t) < delta)
                if n_quad and not np.isnan(t).any():
                    tq = t[: n_quad // len(seeds)]
                    sig = noise_sd(SCALES[scale]["n_test"])
                    post = posterior_spread((tq - 0.9) / sig, delta / sig, rng,
                                            sigma_w=np.geomspace(0.25, 8.0, tq.shape[1]))
                    m_rem, m_for = post["p_gt"] >= DECISION, post["p_lt"] >= forgets_levels(ALPHA)[1]
                    v = decide(post, delta / sig)
                    add("model_remembers", m_rem)
                    add("model_forgets", m_for)
                    add("rule_remembers", v == 1)
                    add("rule_forgets", v == -1)
                    add("rule_forgets_old", post["p_lt"] >= DECISION)   # the model alone at 0.95, before the IUT
                    add("rule_remembers_old", m_rem & (bonferroni_bounds(tq) > delta))
                    add("rule_remembers_two_sided", m_rem & (two_sided_ordered_bounds(tq) > delta))
            row = {"design": kind, "scale": scale, "doc": spec["doc"], "false": list(spec["false"])}
            for name, (k, m) in hits.items():
                lo, hi = wilson(k, m)
                row[name] = {"k": k, "n": m, "rate": k / m, "lo": lo, "hi": hi}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def simulator_memory(n_cubes: int, delta: float = 0.01, looks: tuple[int, ...] = (3, 4, 5, 6)) -> dict:
    """The simulator's own memories of 12 points or more (models/designs.py, ``simulator_memories``),
    each with ``looks[-1]`` seeds: at its first 3 the ordered test against the former Bonferroni check
    (paired tests alone), and the full rule (planner's quadrature) at a fixed 3 and 4 seeds and under the
    sequential design at ``looks`` (docs/sequential.md: the paired-t levels), with the seeds it spent. The
    false verdicts of the same looks at delta: studies/sequential_calibration.py --looks 3,4,5,6."""
    from initmem.models.paired import paired_check
    from initmem.models.plan import rule_decisions, sequential_decisions

    hits = {"ordered": 0, "ordered_two_sided": 0, "bonferroni": 0, "bonferroni_two_sided": 0,
            "extreme_pair_step": 0, "rule_3_seeds": 0, "rule_4_seeds": 0, "sequential": 0}
    spent, n = [], 0
    rng = np.random.default_rng(5)
    for full, std, d_std, sigma_w in simulator_memories(n_cubes, looks[-1], delta):
        tab = full[:, :3]
        out = paired_check(tab, sigma_w, delta)
        n += 1
        hits["ordered"] += out["supports_remembers"]
        hits["extreme_pair_step"] += out["step"] == "extreme pair"
        hits["ordered_two_sided"] += bool(two_sided_ordered_bounds(tab[None])[0] > delta)
        hits["bonferroni"] += bool(bonferroni_bounds(tab[None])[0] > delta)
        hits["bonferroni_two_sided"] += bool(bonferroni_bounds(tab[None], two_sided=True)[0] > delta)
        for k in (3, 4):
            hits[f"rule_{k}_seeds"] += int(rule_decisions(std[None, :, :k], d_std, ALPHA, rng, sigma_w)[0] == 1)
        verdict, used = sequential_decisions(std[None], d_std, looks, rng, sigma_w)
        hits["sequential"] += int(verdict[0] == 1)
        spent.append(int(used[0]))
    out = {k: {"k": v, "n": n, "rate": v / n, "lo": wilson(v, n)[0], "hi": wilson(v, n)[1]} for k, v in hits.items()}
    out["sequential_seeds"] = {"looks": list(looks), "mean": float(np.mean(spent)), "max": int(np.max(spent))}
    print(json.dumps({"simulator_memory_12_points": out}), flush=True)
    return out


def _short(r: dict | None) -> str:
    return "-" if r is None else f"{r['rate']:.3f} ({r['lo']:.3f}-{r['hi']:.3f})"


def print_rules(rows: list[dict]) -> None:
    print("\n| design | scale | false verdict | ordered 'remembers' | the same, two-sided p (0.4.0) | "
          "former Bonferroni (as was / two-sided) | IUT at 0.8 alpha (the rule's) | IUT, pooled df | "
          "full rule: remembers | full rule, two-sided p (0.4.0): remembers | full rule: forgets |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['design']} | {r['scale']} | {', '.join(r['false'])} | {_short(r['ordered'])} | "
              f"{_short(r['ordered_two_sided'])} | "
              f"{r['bonferroni']['rate']:.3f} / {r['bonferroni_two_sided']['rate']:.3f} | "
              f"{_short(r.get('iut_rule'))} | {_short(r.get('iut_pooled'))} | {_short(r.get('rule_remembers'))} | "
              f"{_short(r.get('rule_remembers_two_sided'))} | {_short(r.get('rule_forgets'))} |")


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
    ap.add_argument("--rules", type=int, default=0, help="tables per design: rule-level simulation, no NUTS")
    ap.add_argument("--quadrature", type=int, default=1000,
                    help="with --rules: tables per design decided by the full rule (quadrature posterior)")
    ap.add_argument("--rule-designs", default="", help="with --rules: only these designs of RULE_DESIGNS, "
                    "comma-separated, or 'late' for the designs held out late (default: all)")
    ap.add_argument("--simulator", type=int, default=8, help="with --rules: simulated cubes of 32 pipelines with "
                    "12-19 points of exchangeable memory at 3 seeds (and more, sequentially)")
    ap.add_argument("--simulator-looks", default="3,4,5,6", help="the sequential design's looks on those cubes")
    ap.add_argument("--simulator-only", action="store_true", help="only the simulator's memories (no --rules tables)")
    args = ap.parse_args()
    if args.simulator_only:
        simulator_memory(args.simulator, looks=tuple(int(x) for x in args.simulator_looks.split(",")))
        return 0
    if args.rules:
        kinds = list(LATE_HELD_OUT) if args.rule_designs == "late" else [k for k in args.rule_designs.split(",") if k]
        unknown = sorted(set(kinds) - set(RULE_DESIGNS))
        if unknown:
            ap.error(f"unknown --rule-designs {unknown}; known: {', '.join(RULE_DESIGNS)}")
        print_rules(rule_rows(args.rules, args.quadrature, args.seed, kinds=kinds))
        if args.simulator:
            simulator_memory(args.simulator, looks=tuple(int(x) for x in args.simulator_looks.split(",")))
        return 0
    fit = {"draws": args.draws, "tune": args.draws, "chains": args.chains, "progress": False}
    rows = run(args.designs.split(","), args.scales.split(","), args.fits, args.seed, fit)
    print("\n| design | scale | remembers (95% Wilson) | forgets | model alone: remembers | model alone: forgets "
          "| checks failed | divergences | max R-hat | min bulk ESS | pipelines flagged |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['design']} | {r['scale']} | {_cell(r['remembers'])} | {_cell(r['forgets'])} | "
              f"{r['model_remembers']['rate']:.3f} | {r['model_forgets']['rate']:.3f} | {r['checks_failed']:.2f} | "
              f"{r['divergences']} | {r['max_rhat']:.4f} | {r['min_ess_bulk']:.0f} | "
              f"{r['pipelines_flagged']}/{r['n']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The route's tables and paired tests (studies/findings/route-preregistration.md; results in docs/findings.md).

Reads the three sequential runs (``runs/findings-route-{all,normalized,head}``: cube.nc and analysis/summary.json)
and the three top-ups (``runs/findings-route-topup-{all,normalized,head}/cube.nc``) and prints, as Markdown:

* the verdict table: per grid and pipeline the verdict, the spread with its 90% interval, the ratio of the error
  rates at the extreme sigma_w levels, the deciding look and seeds, the radial verdict, interpolated cells, and
  any survivorship or diagnostics mark;
* the additivity test: I(s) = d(all) - d(normalized) - d(head) per seed, d = a(1/4) - a(4) in points of final
  test accuracy, its mean with a 90% t interval (SE floored at the runs' binomial test-set noise), decided
  "additive" inside (-delta, delta), "interacts" wholly outside, else "undecided"; with the secondary readouts
  (selected accuracy on the seeds whose six extreme cells interpolated, and the log error ratio);
* the contrasts: C(s) = d(A) - d(B) in the all-kernel grid;
* descriptive final-norm slopes on log sigma_w, the normalized kernels and the head apart (not pre-registered);
* two identities the design implies: every grid's sigma_w = 1 cell of a pipeline and seed is the same run, and a
  top-up cell equals the sequential run's cell of the same pipeline, level and seed where both were trained.

Why a script: the pre-registration fixes these statistics before the runs; this file is their one
implementation, so the page's numbers are regenerated, not typed. Run from the repository root:

    python studies/findings/route_tests.py [--runs runs] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from scipy import stats

GRIDS = ("all", "normalized", "head")
ROUTE = ("sgd_low_lr", "adam", "adamw")
CONTRASTS = (("sgd_low_lr", "sgd_cos", "schedule alone (constant vs cosine)"),
             ("sgd_cos", "sgd_l2", "L2 alone (coupled 0.02, cosine)"),
             ("adam_at_adamw", "adamw", "decoupled decay alone (1.0, lr 0.007, cosine)"),
             ("adam", "adam_at_adamw", "lr, schedule and horizon (0.002 constant 60 ep vs 0.007 cosine 40 ep)"))
FIRST_SEEDS = (600, 601, 602, 603)
TOPUP_SEEDS = (604, 605, 606, 607)
LOW, HIGH = 0.25, 4.0
DELTA_POINTS = 2.0
N_TEST = 10_000
OK = 0


def load(runs: Path) -> dict[str, Any]:
    """Every cube and summary the page reads, by grid."""
    out: dict[str, Any] = {}
    for g in GRIDS:
        seq = runs / f"findings-route-{g}"
        out[g] = {"cube": xr.load_dataset(seq / "cube.nc"),
                  "summary": json.loads((seq / "analysis" / "summary.json").read_text()),
                  "topup": xr.load_dataset(runs / f"findings-route-topup-{g}" / "cube.nc")}
    return out


def cell(ds: xr.Dataset, var: str, pipeline: str, sigma: float, seed: int) -> float:
    """One run's value, NaN where the run is absent or not ok."""
    if pipeline not in ds.pipeline.values or seed not in ds.seed.values:
        return math.nan
    sel = {"pipeline": pipeline, "sigma_w": sigma, "seed": seed}
    if int(ds["status"].sel(sel)) != OK:
        return math.nan
    return float(ds[var].sel(sel))


def extreme(data: dict[str, Any], grid: str, pipeline: str, seed: int, var: str) -> tuple[float, float]:
    """(a(1/4), a(4)) of one seed, from the sequential cube (600-603) or the top-up (604-607)."""
    ds = data[grid]["cube"] if seed in FIRST_SEEDS else data[grid]["topup"]
    return cell(ds, var, pipeline, LOW, seed), cell(ds, var, pipeline, HIGH, seed)


def interpolated(data: dict[str, Any], grid: str, pipeline: str, seed: int) -> bool:
    """Whether both extreme cells of the seed reached the interpolation threshold."""
    ds = data[grid]["cube"] if seed in FIRST_SEEDS else data[grid]["topup"]
    return all(np.isfinite(cell(ds, "tau_interp", pipeline, s, seed)) for s in (LOW, HIGH))


def t_interval(values: list[float], noise_var: list[float]) -> dict[str, float]:
    """Mean, 90% t interval and SE of per-seed values (points); SE floored at the runs' test-set noise."""
    v = np.asarray(values, dtype=float)
    n = v.size
    if n < 2:
        return {"n": n, "mean": float(v.mean()) if n else math.nan, "lo": math.nan, "hi": math.nan, "se": math.nan,
                "se_floored": False}
    se_seeds = float(v.std(ddof=1) / math.sqrt(n))
    se_floor = float(math.sqrt(np.mean(noise_var)) / math.sqrt(n))   # points: noise_var is in points^2
    se = max(se_seeds, se_floor)
    t = float(stats.t.ppf(0.95, n - 1))
    m = float(v.mean())
    return {"n": n, "mean": m, "lo": m - t * se, "hi": m + t * se, "se": se, "se_floored": se_floor > se_seeds}


def binom_var(accs: list[float]) -> float:
    """Summed binomial variance (points^2) of the runs a per-seed value is built from."""
    return float(sum(a * (1 - a) / N_TEST for a in accs) * 1e4)


def decide(ci: dict[str, float], delta: float = DELTA_POINTS) -> str:
    """The pre-registered additivity rule."""
    if not np.isfinite(ci["lo"]):
        return "undecided"
    if -delta < ci["lo"] and ci["hi"] < delta:
        return "additive"
    if ci["lo"] > delta or ci["hi"] < -delta:
        return "interacts"
    return "undecided"


def additivity(data: dict[str, Any], pipeline: str, var: str = "final_test_acc",
               gate: bool = False) -> dict[str, Any]:
    """I(s) = d(all) - d(normalized) - d(head), over the seeds with all six extreme cells present."""
    values, noise, logs, used, dropped = [], [], [], [], []
    per_grid: dict[str, list[float]] = {g: [] for g in GRIDS}
    for seed in FIRST_SEEDS + TOPUP_SEEDS:
        ends = {g: extreme(data, g, pipeline, seed, var) for g in GRIDS}
        ok = all(np.isfinite(x) for e in ends.values() for x in e)
        if gate:
            ok = ok and all(interpolated(data, g, pipeline, seed) for g in GRIDS)
        if not ok:
            dropped.append(seed)
            continue
        d = {g: 100 * (lo - hi) for g, (lo, hi) in ends.items()}
        values.append(d["all"] - d["normalized"] - d["head"])
        noise.append(binom_var([x for e in ends.values() for x in e]))
        with np.errstate(divide="ignore"):
            r = {g: math.log((1 - hi) / (1 - lo)) if lo < 1 and hi < 1 else math.nan for g, (lo, hi) in ends.items()}
        logs.append(r["all"] - r["normalized"] - r["head"])
        for g in GRIDS:
            per_grid[g].append(d[g])
        used.append(seed)
    ci = t_interval(values, noise)
    grid_means = {g: float(np.mean(v)) if v else math.nan for g, v in per_grid.items()}
    log_ci = t_interval([x for x in logs if np.isfinite(x)], [0.0])
    return {"pipeline": pipeline, "var": var, "gate": gate, "seeds": used, "dropped": dropped, "I": ci,
            "decision": decide(ci), "excludes_zero": bool(ci["lo"] > 0 or ci["hi"] < 0), "d_mean": grid_means,
            "log_error_ratio_I": log_ci}


def contrast(data: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    """C(s) = d(a) - d(b) in the all-kernel grid, final test accuracy, seeds 600-607."""
    values, noise, used, da, db = [], [], [], [], []
    for seed in FIRST_SEEDS + TOPUP_SEEDS:
        ea, eb = extreme(data, "all", a, seed, "final_test_acc"), extreme(data, "all", b, seed, "final_test_acc")
        if not all(np.isfinite(x) for x in ea + eb):
            continue
        da.append(100 * (ea[0] - ea[1]))
        db.append(100 * (eb[0] - eb[1]))
        values.append(da[-1] - db[-1])
        noise.append(binom_var(list(ea + eb)))
        used.append(seed)
    return {"a": a, "b": b, "seeds": used, "C": t_interval(values, noise),
            "d_a": float(np.mean(da)) if da else math.nan, "d_b": float(np.mean(db)) if db else math.nan}


def error_ratio(info: dict[str, Any]) -> float:
    """Larger over smaller error rate at the two extreme levels, from the summary's expected accuracies (as the
    report's verdict tables compute it, reports/tables.py ``error_ratio``)."""
    ex = info.get("expected") or {}
    sw, med = ex.get("sigma_w") or [], ex.get("median") or []
    if len(sw) < 2:
        return math.nan
    e = [1 - float(med[int(np.argmin(sw))]), 1 - float(med[int(np.argmax(sw))])]
    if min(e) <= 0:
        return math.nan
    return max(e) / min(e)


def verdict_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per grid and pipeline from the sequential run's summary."""
    rows = []
    for g in GRIDS:
        s = data[g]["summary"]
        seq = s.get("sequential") or {}
        for p, info in s["pipelines"].items():
            sp = info["spread"]
            interp = info.get("interpolation") or {}
            miss = info.get("missingness") or {}
            diag = (s.get("diagnostics") or {}).get("flags") or []
            rows.append({
                "grid": g, "pipeline": p, "verdict": info["verdict"], "borderline": bool(info.get("borderline")),
                "spread": [100 * float(sp["median"]), 100 * float(sp["q05"]), 100 * float(sp["q95"])],
                "error_ratio": error_ratio(info), "decided_look": info.get("decided_look"),
                "seeds": (seq.get("seeds_used") or {}).get(p, info.get("n_seed")),
                "radial": (info.get("radial") or {}).get("verdict"),
                "radial_slope": (info.get("radial") or {}).get("slope"),
                "interpolated": f"{interp.get('n_interpolated')}/{interp.get('n_cells')}",
                "levels_without_interpolation": interp.get("levels_without_interpolation"),
                "survivorship": miss.get("warning"), "survivorship_changes": miss.get("verdict_changes"),
                "checks_failed": info.get("checks_failed"), "rule": info.get("rule"), "diagnostics_flags": diag,
                "expected": {str(k): 100 * float(m) for k, m in zip(info["expected"]["sigma_w"],
                                                                    info["expected"]["median"], strict=True)},
            })
    return rows


def identities(data: dict[str, Any]) -> dict[str, Any]:
    """sigma_w = 1 cells equal across grids; top-up cells equal the sequential cells where both exist."""
    same_at_one, total_one = 0, 0
    for p in ROUTE:
        for seed in FIRST_SEEDS:
            vals = [cell(data[g]["cube"], "final_test_acc", p, 1.0, seed) for g in GRIDS]
            if all(np.isfinite(vals)):
                total_one += 1
                same_at_one += int(len(set(vals)) == 1)
    same_topup, total_topup = 0, 0
    for g in GRIDS:
        seq, top = data[g]["cube"], data[g]["topup"]
        for p in top.pipeline.values:
            for seed in TOPUP_SEEDS:
                for sig in (LOW, HIGH):
                    a = cell(seq, "final_test_acc", str(p), sig, seed)
                    b = cell(top, "final_test_acc", str(p), sig, seed)
                    if np.isfinite(a) and np.isfinite(b):
                        total_topup += 1
                        same_topup += int(a == b)
    return {"sigma1_same": same_at_one, "sigma1_total": total_one, "topup_same": same_topup,
            "topup_total": total_topup}


def norm_slopes(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Descriptive, not pre-registered: per grid and pipeline, the mean over the sequential run's seeds of the OLS
    slope of log final norm on log sigma_w, for the nine normalized kernels together ("body") and for the head.
    At init both slopes are 1 where sigma_w scales those kernels and 0 where it does not; the summary's radial
    verdict reads all kernels together, which in the head grid is mostly the unscaled body."""
    rows = []
    for g in GRIDS:
        ds = data[g]["cube"]
        layers = [str(x) for x in ds["layer"].values]
        parts = {"body": [x for x in layers if x != "head"], "head": ["head"]}
        logs = np.log(ds["sigma_w"].values.astype(float))
        for p in ds.pipeline.values:
            out: dict[str, Any] = {"grid": g, "pipeline": str(p)}
            for part, chosen in parts.items():
                slopes = []
                for seed in ds.seed.values:
                    st = ds["status"].sel(pipeline=p, seed=seed).values
                    if (st != OK).any():
                        continue
                    ln = ds["layer_norm"].sel(pipeline=p, seed=seed, layer=chosen)
                    last = ln.dropna("epoch", how="all").isel(epoch=-1)   # its last epoch (40 or 60)
                    y = np.log(np.sqrt((last ** 2).sum("layer")).values)
                    slopes.append(float(np.polyfit(logs, y, 1)[0]))
                out[part] = float(np.mean(slopes)) if slopes else math.nan
                out["n"] = len(slopes)
            rows.append(out)
    return rows


def fmt(x: float, nd: int = 1) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def markdown(rows: list[dict[str, Any]], add: list[dict[str, Any]], con: list[dict[str, Any]],
             ids: dict[str, Any], slopes: list[dict[str, Any]]) -> str:
    out = ["| grid | pipeline | verdict | spread, points [90%] | error ratio (extreme sigma_w) | look (seeds) | "
           "radial | interpolated | marks |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        marks = []
        if r["survivorship"]:
            marks.append("survivorship: " + ("verdict changes" if r["survivorship_changes"] else "warned"))
        if r["levels_without_interpolation"]:
            marks.append(f"no interpolation at sigma_w {r['levels_without_interpolation']}")
        if r["checks_failed"]:
            marks.append("checks failed: " + ", ".join(r["checks_failed"]))
        if r["diagnostics_flags"]:
            marks.append("diagnostics flagged")
        v = r["verdict"] + (" (borderline)" if r["borderline"] else "")
        sp = r["spread"]
        out.append(f"| {r['grid']} | {r['pipeline']} | {v} | {fmt(sp[0])} [{fmt(sp[1])}, {fmt(sp[2])}] | "
                   f"{fmt(r['error_ratio'], 2)} | {r['decided_look'] or '—'} ({r['seeds']}) | {r['radial']} | "
                   f"{r['interpolated']} | {'; '.join(marks) or '—'} |")
    out += ["", "| pipeline | accuracy | seeds | mean d: all / normalized / head | I = all - normalized - head "
            "[90%] | decision | excludes 0 | log error ratio I [90%] |", "|---|---|---|---|---|---|---|---|"]
    for a in add:
        ci, lg = a["I"], a["log_error_ratio_I"]
        d = a["d_mean"]
        acc = "final" if not a["gate"] else "selected, interpolated seeds"
        out.append(f"| {a['pipeline']} | {acc} | {ci['n']} | {fmt(d['all'])} / {fmt(d['normalized'])} / "
                   f"{fmt(d['head'])} | {fmt(ci['mean'])} [{fmt(ci['lo'])}, {fmt(ci['hi'])}] | {a['decision']} | "
                   f"{'yes' if a['excludes_zero'] else 'no'} | {fmt(lg['mean'], 2)} [{fmt(lg['lo'], 2)}, "
                   f"{fmt(lg['hi'], 2)}] |")
    out += ["", "| contrast | what differs | seeds | mean d(A) / d(B) | C = d(A) - d(B) [90%] |",
            "|---|---|---|---|---|"]
    labels = {(a, b): what for a, b, what in CONTRASTS}
    for c in con:
        ci = c["C"]
        out.append(f"| {c['a']} vs {c['b']} | {labels[(c['a'], c['b'])]} | {ci['n']} | {fmt(c['d_a'])} / "
                   f"{fmt(c['d_b'])} | {fmt(ci['mean'])} [{fmt(ci['lo'])}, {fmt(ci['hi'])}] |")
    out += ["", "| grid | pipeline | seeds | final-norm slope, normalized kernels | final-norm slope, head |",
            "|---|---|---|---|---|"]
    out += [f"| {r['grid']} | {r['pipeline']} | {r['n']} | {fmt(r['body'], 2)} | {fmt(r['head'], 2)} |" for r in slopes]
    out += ["", f"sigma_w = 1 cells identical across the three grids: {ids['sigma1_same']} of {ids['sigma1_total']}; "
                f"top-up cells identical to the sequential run's: {ids['topup_same']} of {ids['topup_total']}."]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    data = load(args.runs)
    rows = verdict_rows(data)
    add = [additivity(data, p) for p in ROUTE] + [additivity(data, p, "selected_test_acc", gate=True) for p in ROUTE]
    con = [contrast(data, a, b) for a, b, _ in CONTRASTS]
    ids = identities(data)
    slopes = norm_slopes(data)
    print(markdown(rows, add, con, ids, slopes))
    if args.json:
        args.json.write_text(json.dumps({"verdicts": rows, "additivity": add, "contrasts": con, "identities": ids,
                                         "norm_slopes": slopes},
                                        indent=1, default=float))


if __name__ == "__main__":
    main()

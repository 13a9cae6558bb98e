"""Speed and sampling health of ``initmem analyze`` on the design sizes that matter, cold and warm.

1. a quick-preset-like cube: 7 pipelines x 6 sigma_w x 3-6 seeds, 720 test examples with
   per-example predictions; goal <= 60 s for the whole command, compile included, and <= 15 s
   once the model is compiled;
2. a 16-seed cube: 7 x 6 x 16, 720 examples (66 s before the compiled-model cache, 62.6 s of it compiling);
3. a paper-shaped cube: 5 pipelines x 7 sigma_w x 5 seeds, 10,000 test examples; goal <= 5 min
   on 2 cores.

Each cube is analyzed twice, each time by ``initmem analyze`` in a fresh process (imports,
compile, sampling, cross-checks and writing included), with one new, empty compiled-model cache
(INITMEM_CACHE_DIR, models/compiled.py) per cube: the first run compiles and stores the sampler
(cold), the second loads it (warm). Both are measured in this one run, on the same machine state.
Printed per run: wall time beside its goal, compile (or load) and sampling seconds, where the
sampler came from, divergences, the largest R-hat and the verdicts; and whether the two runs'
posteriors are identical (they must be: the same machine code, the same seed). PyTensor's own
numba cache (~/.pytensor) is left as it is, so "cold" means initmem's cache is empty.
``--compare-pymc`` also prints nutpie's and PyMC's min-ESS per second on the quick cube.

``--looks 4,8,12,16`` measures a sequential design's looks instead (docs/sequential.md, "One compile for
every look"): a quick-preset-shaped cube (7 pipelines x 5 sigma_w x 16 seeds, 10,000 test examples) is
analyzed in this process on its first n seeds for each look n, as ``initmem run --until-decided`` does,
once with each look compiled for its own shape and once with every look compiled for the last look's
seeds (``compile_shape``), each with its own empty compiled-model cache. Printed per look: compile (or
reuse) and sampling seconds, divergences, the largest R-hat and the verdicts; then each design's total.

    python benchmarks/analyze_speed.py [--compare-pymc] [--only quick]
    python benchmarks/analyze_speed.py --looks 4,8,12,16
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _cubes():
    from initmem.simulate import SimPipeline, simulate_cube

    quick = [SimPipeline(f"p{k}", sigma_sd=s, n_sigma=6, n_seed=n) for k, (s, n) in enumerate(
        [(0.0, 6), (0.5, 6), (0.0, 3), (0.2, 4), (0.05, 5), (0.1, 6), (0.3, 3)])]
    seeds16 = [SimPipeline(f"p{k}", sigma_sd=s, n_sigma=6, n_seed=16) for k, s in enumerate(
        [0.0, 0.5, 0.0, 0.2, 0.05, 0.1, 0.3])]
    paper = [SimPipeline(f"p{k}", sigma_sd=s, seed_sd=0.02, residual_sd=0.02, n_sigma=7, n_seed=5)
             for k, s in enumerate([0.0, 0.0, 0.05, 0.1, 0.3])]
    return {"quick-like (7 x 6 x 3-6, 720 examples)": (simulate_cube(quick, n_test=720, seed=1), 60.0, 15.0),
            "16 seeds (7 x 6 x 16, 720 examples)": (simulate_cube(seeds16, n_test=720, seed=3), 60.0, 15.0),
            "paper-shaped (5 x 7 x 5, 10,000 examples)": (simulate_cube(paper, n_test=10_000, seed=2), 300.0, 15.0)}


def _analyze(path: Path, out: Path, cache: Path) -> tuple[float, str]:
    """Wall seconds of ``initmem analyze`` in a fresh process with this compiled-model cache."""
    env = {**os.environ, "INITMEM_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "initmem.cli", "--quiet", "analyze", str(path), "--out", str(out)],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    return wall, (proc.stderr if proc.returncode != 0 else "")


def _looks(looks: list[int]) -> int:
    """Every look analyzed on its own compiled shape, then on the last look's: both in this run."""
    from initmem import cube
    from initmem.analysis import analyze_cube
    from initmem.models import compiled
    from initmem.simulate import SimPipeline, simulate_cube

    specs = [SimPipeline(f"p{k}", sigma_sd=s, n_sigma=5, n_seed=looks[-1]) for k, s in enumerate(
        [0.0, 0.0, 0.0, 0.05, 0.3, 0.5, 1.0])]
    ds = simulate_cube(specs, n_test=10_000, seed=4)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f} at start, "
          f"{os.cpu_count()} cores; looks {looks}, cube 7 x 5 x {looks[-1]}")
    with tempfile.TemporaryDirectory() as tmp:
        for design, shape in (("each look its own shape", None), ("every look the last look's", (0, 0, looks[-1]))):
            compiled.clear_memory()
            os.environ["INITMEM_CACHE_DIR"] = str(Path(tmp) / f"cache-{shape is None}")
            t_all = time.perf_counter()
            total_compile = 0.0
            for n in looks:
                path = Path(tmp) / f"look{n}.nc"
                cube.write_cube(ds.isel({cube.SEED: slice(0, n)}), path)
                t0 = time.perf_counter()
                summary = analyze_cube(path, Path(tmp) / f"an-{n}-{shape is None}", progress=False, command=["bench"],
                                       compile_shape=shape)
                wall = time.perf_counter() - t0
                d = summary.diagnostics
                total_compile += d.compile_seconds or 0.0
                src = (d.to_json().get("compile_cache") or {}).get("source")
                verdicts = "".join(e.verdict[0] for e in summary.pipelines.values())
                print(f"  {design}, look {n} seeds: analyze {wall:5.1f} s (compile {src} {d.compile_seconds:5.1f} s, "
                      f"sampling {d.sampling_seconds:4.1f} s); divergences {d.divergences}, max R-hat "
                      f"{d.max_rhat:.4f}; verdicts {verdicts}")
            print(f"{design}: {len(looks)} looks in {time.perf_counter() - t_all:.1f} s, "
                  f"{total_compile:.1f} s of it compiling")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare-pymc", action="store_true")
    ap.add_argument("--only", help="only the cubes whose name starts with this (quick, 16, paper)")
    ap.add_argument("--looks", help="measure a sequential design's looks instead, e.g. 4,8,12,16")
    args = ap.parse_args()
    if args.looks:
        return _looks([int(n) for n in args.looks.split(",")])

    from initmem import cube
    from initmem.models import arviz_io
    from initmem.results import load_summary

    cubes = _cubes()
    if args.only:
        cubes = {k: v for k, v in cubes.items() if k.startswith(args.only)}
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f} at start, "
          f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, (ds, goal, warm_goal)) in enumerate(cubes.items()):
            path = Path(tmp) / f"cube{k}.nc"
            cache = Path(tmp) / f"cache{k}"
            cube.write_cube(ds, path)
            posts = []
            for run, limit in (("cold", goal), ("warm", warm_goal)):
                out = Path(tmp) / f"an{k}-{run}"
                wall, err = _analyze(path, out, cache)
                if err:
                    print(err, file=sys.stderr)
                    return 1
                summary = load_summary(out)
                d = summary.diagnostics
                src = (d.to_json().get("compile_cache") or {}).get("source")
                verdicts = {p: e.verdict for p, e in summary.pipelines.items()}
                print(f"{name}, {run} (load {os.getloadavg()[0]:.1f}): initmem analyze {wall:.1f} s "
                      f"(goal <= {limit:.0f} s; compile {src} "
                      f"{d.compile_seconds:.1f} s, sampling {d.sampling_seconds:.1f} s); divergences "
                      f"{d.divergences}, max R-hat {d.max_rhat:.4f}, min bulk ESS {d.min_ess_bulk:.0f}, retried "
                      f"{d.retried}; {verdicts}")
                posts.append(arviz_io.from_netcdf(out / "posterior.nc").posterior)
            same = all(np.array_equal(posts[0][v].values, posts[1][v].values, equal_nan=True)
                       for v in posts[0].data_vars)
            print(f"{name}: cold and warm posteriors identical: {same}")

    if args.compare_pymc:
        from initmem.models.data import prepare_data
        from initmem.models.memory import MemoryModel

        ds = next(iter(_cubes().values()))[0]
        rates = {}
        for sampler in ("nutpie", "pymc"):
            model = MemoryModel(prepare_data(ds))
            model.fit(sampler=sampler, progress=False)
            diag = model.diagnostics()
            rates[sampler] = diag["min_ess_bulk"] / model.sampling_seconds
            print(f"{sampler:>6}: compile {model.compile_seconds:5.1f} s, sampling {model.sampling_seconds:5.1f} s, "
                  f"min bulk ESS {diag['min_ess_bulk']:6.0f}, min ESS/s {rates[sampler]:7.1f}, "
                  f"max R-hat {diag['max_rhat']:.3f}, divergences {diag['divergences']}")
        print(f"nutpie / PyMC min-ESS per second: {rates['nutpie'] / rates['pymc']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

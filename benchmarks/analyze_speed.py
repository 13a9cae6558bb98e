"""Speed and sampling health of ``initmem analyze`` on the two design sizes that matter.

1. a quick-preset-like cube: 7 pipelines x 6 sigma_w x 3-6 seeds, 720 test examples with
   per-example predictions; goal <= 60 s for the whole command, compile included;
2. a paper-shaped cube: 5 pipelines x 7 sigma_w x 5 seeds, 10,000 test examples; goal <= 5 min
   on 2 cores.

Each runs ``initmem analyze`` in a fresh process (imports, compile, sampling, cross-checks and
writing included) and prints the wall time beside its goal, compile and sampling seconds,
divergences, the largest R-hat and the verdicts. ``--compare-pymc`` also prints nutpie's and
PyMC's min-ESS per second on the quick cube.

    python benchmarks/analyze_speed.py [--compare-pymc]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _cubes():
    from initmem.simulate import SimPipeline, simulate_cube

    quick = [SimPipeline(f"p{k}", sigma_sd=s, n_sigma=6, n_seed=n) for k, (s, n) in enumerate(
        [(0.0, 6), (0.5, 6), (0.0, 3), (0.2, 4), (0.05, 5), (0.1, 6), (0.3, 3)])]
    paper = [SimPipeline(f"p{k}", sigma_sd=s, seed_sd=0.02, residual_sd=0.02, n_sigma=7, n_seed=5)
             for k, s in enumerate([0.0, 0.0, 0.05, 0.1, 0.3])]
    return {"quick-like (7 x 6 x 3-6, 720 examples)": (simulate_cube(quick, n_test=720, seed=1), 60.0),
            "paper-shaped (5 x 7 x 5, 10,000 examples)": (simulate_cube(paper, n_test=10_000, seed=2), 300.0)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare-pymc", action="store_true")
    args = ap.parse_args()

    from initmem import cube
    from initmem.results import load_summary

    cubes = _cubes()
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, (ds, goal)) in enumerate(cubes.items()):
            path = Path(tmp) / f"cube{k}.nc"
            out = Path(tmp) / f"an{k}"
            cube.write_cube(ds, path)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "initmem.cli", "--quiet", "analyze", str(path), "--out",
                                   str(out)], capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            summary = load_summary(out)
            d = summary.diagnostics
            verdicts = {p: e.verdict for p, e in summary.pipelines.items()}
            print(f"{name}: initmem analyze {wall:.1f} s (goal <= {goal:.0f} s; compile {d.compile_seconds:.1f} s, "
                  f"sampling {d.sampling_seconds:.1f} s); divergences {d.divergences}, max R-hat "
                  f"{d.max_rhat:.4f}, min bulk ESS {d.min_ess_bulk:.0f}, retried {d.retried}; {verdicts}")

    if args.compare_pymc:
        from initmem.models.data import prepare_data
        from initmem.models.memory import MemoryModel

        ds = next(iter(cubes.values()))[0]
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

"""Speed of ``initmem analyze`` and of nutpie against PyMC's NUTS on the memory model.

Measures, in one run, on a simulated cube shaped like the quick preset (3 pipelines x 6 sigma_w
x 4 seeds, binomial counts):

1. the wall time of ``initmem analyze`` in a fresh process (imports, compile, sampling,
   cross-checks and writing included), split into compile and sampling as recorded in
   summary.json;
2. the minimum bulk ESS per second of sampling (over every reported quantity) for nutpie and
   for PyMC's NUTS on the same model, same draws, tuning, chains and target_accept;
3. divergences of each.

The last line is the ratio nutpie / PyMC of min-ESS per second. Goals on 2 cores: whole analyze
<= 60 s compile included; ratio >= 1.5; zero divergences.

    python benchmarks/analyze_speed.py [--draws 1000] [--tune 1000] [--chains 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from initmem import cube
    from initmem.models.memory import MemoryModel, prepare_data
    from initmem.simulate import SimPipeline, simulate_cube

    specs = [SimPipeline("sgd_low_lr", sigma_sd=0.5), SimPipeline("sgd_l2", sigma_sd=0.0),
             SimPipeline("adam", sigma_sd=0.1)]
    ds = simulate_cube(specs, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cube.nc"
        cube.write_cube(ds, path)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "initmem.cli", "--quiet", "analyze", str(path), "--out",
                               str(Path(tmp) / "an"), "--draws", str(args.draws), "--tune", str(args.tune),
                               "--chains", str(args.chains), "--seed", str(args.seed)],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        summary = json.loads((Path(tmp) / "an" / "summary.json").read_text())
    d = summary["diagnostics"]
    print(f"cube: {ds.sizes['pipeline']} pipelines x {ds.sizes['sigma_w']} sigma_w x {ds.sizes['seed']} seeds")
    print(f"initmem analyze wall time: {wall:.1f} s (compile {d['compile_seconds']:.1f} s, sampling "
          f"{d['sampling_seconds']:.1f} s, the rest imports, cross-checks and writing); "
          f"divergences {d['divergences']}; retried {d['retried']}; goal <= 60 s")

    rates = {}
    for sampler in ("nutpie", "pymc"):
        model = MemoryModel(prepare_data(ds))
        model.fit(sampler=sampler, draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
                  progress=False)
        diag = model.diagnostics()
        rates[sampler] = diag["min_ess_bulk"] / model.sampling_seconds
        print(f"{sampler:>6}: compile {model.compile_seconds:5.1f} s, sampling {model.sampling_seconds:5.1f} s, "
              f"min bulk ESS {diag['min_ess_bulk']:6.0f}, min ESS/s {rates[sampler]:7.1f}, "
              f"max R-hat {diag['max_rhat']:.3f}, divergences {diag['divergences']}")
    print(f"nutpie / PyMC min-ESS per second: {rates['nutpie'] / rates['pymc']:.2f} (goal >= 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What statsmodels' Holm costs in an analysis process: ``multipletests(method="holm")`` against
``pingouin.multicomp(method="holm")`` (what stats/frequentist.py uses), both in one run.

    python benchmarks/holm_gc.py [--calls 4] [--heap 0,1000000,3000000]

statsmodels runs a full ``gc.collect()`` inside every Holm call, so its cost grows with the number of live
Python objects: an analysis process holds PyMC, PyTensor and xarray objects, and a long-lived process (a test
worker, a notebook) holds far more. ``--heap`` adds that many small live objects (lists) on top of what
importing PyMC and torch leaves, to show the growth. The adjusted p-values are checked equal.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=4, help="Holm calls per side (an analysis makes 4)")
    ap.add_argument("--heap", default="0,1000000,3000000", help="extra live objects, comma-separated")
    args = ap.parse_args()
    import pingouin
    import pymc  # noqa: F401  (the heap of an analysis process)
    import torch  # noqa: F401
    from statsmodels.stats.multitest import multipletests

    p = np.array([0.01, 0.04, 0.03, 0.2, 0.5, 0.008, 0.3])
    np.testing.assert_allclose(multipletests(p, method="holm")[1], pingouin.multicomp(p, method="holm")[1])
    print(f"| extra live objects | tracked objects | statsmodels, {args.calls} calls (s) | pingouin (s) |")
    print("|---|---|---|---|")
    keep = []
    for extra in (int(x) for x in args.heap.split(",")):
        keep = [[i] for i in range(extra)]
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            multipletests(p, method="holm")
        t_sm = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(args.calls):
            pingouin.multicomp(p, method="holm")
        t_pg = time.perf_counter() - t0
        print(f"| {extra:,} | {len(gc.get_objects()):,} | {t_sm:.3f} | {t_pg:.4f} |")
    del keep
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

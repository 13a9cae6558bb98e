"""The quick preset's network collected as user code against the built-in engine, both in one run.

Three ways to train the same grid cells (the quick preset's network on a small MNIST-1D split, one pipeline,
sigma_w 1/4 and 4, a few seeds): the built-in engine packing the cells into one model (``pack_size`` = cells),
the engine one cell at a time (``pack_size`` = 1), and a user-code grid whose entry point is a plain PyTorch loop
with the recorder (tests/_quick_entry.py: the engine's numbers bit for bit, one cell at a time; user code is not
packed). Each side collects into a fresh folder, one worker, one torch thread; the sides take turns, round after
round, so that machine load hits them alike. Prints each side's median wall seconds per cell and the ratios.

    python benchmarks/own_model_speed.py                    # 2 rounds, 4 seeds, 3 epochs
    python benchmarks/own_model_speed.py --rounds 3 --seeds 8 --epochs 6
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from initmem.collect.execution.runner import collect
from initmem.tests._quick_small import quick_small

SIZES = {"n_train": 512, "n_val": 256, "n_test": 512}
SIGMA = (0.25, 4.0)


def _sides(root: Path, seeds: int, epochs: int) -> dict[str, tuple[object, dict]]:
    data_root = root / "mnist1d-cache"
    engine = quick_small(data_root, pipelines=("sgd_low_lr",), epochs=epochs, every=1, sigma_w=SIGMA,
                         seeds=tuple(range(seeds)), **SIZES)
    as_dict = yaml.safe_load(engine.to_yaml())
    user = root / "user.yaml"
    user.write_text(yaml.safe_dump({
        "name": "quick_as_user_code", "sigma_w": list(SIGMA), "seeds": list(range(seeds)),
        "init": as_dict["init"], "eval": as_dict["eval"],
        "pipelines": {"sgd_low_lr": {"entry": "initmem.tests._quick_entry:train",
                                     "settings": {"data_root": str(data_root), "epochs": epochs, "every": 1,
                                                  **SIZES}}}}))
    cells = len(SIGMA) * seeds
    return {"engine, packed": (engine, {"pack_size": cells}), "engine, one at a time": (engine, {"pack_size": 1}),
            "user code (entry point)": (user, {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sides = _sides(root, args.seeds, args.epochs)
        cells = len(SIGMA) * args.seeds
        times: dict[str, list[float]] = {name: [] for name in sides}
        collect(sides["engine, packed"][0], root / "warm", device="cpu", progress=False, quiet=True)  # data, caches
        for r in range(args.rounds):
            names = list(sides)[r % len(sides):] + list(sides)[:r % len(sides)]   # a rotating order
            for name in names:
                grid, opts = sides[name]
                t0 = time.perf_counter()
                collect(grid, root / f"{name}-{r}".replace(" ", "_").replace(",", ""), device="cpu", progress=False,
                        quiet=True, jobs=1, **opts)
                times[name].append((time.perf_counter() - t0) / cells)
    load = os.getloadavg()[0]
    print(f"{cells} cells (sigma_w {SIGMA}, {args.seeds} seeds, {args.epochs} epochs, {SIZES['n_train']} training "
          f"signals), {args.rounds} rounds, load average {load:.1f} at the end")
    base = statistics.median(times["engine, packed"])
    for name, t in times.items():
        med = statistics.median(t)
        print(f"| {name} | {med:.2f} s per cell | {med / base:.2f}x the packed engine |")


if __name__ == "__main__":
    main()

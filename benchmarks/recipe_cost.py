"""CPU seconds per run of the quick preset's network under each training recipe, to budget a memory atlas.

One cell (sigma_w = 1, seed 0) of a pipeline shaped like the quick preset's ``sgd_low_lr`` (the BatchNorm
ResNet-1D at width 16 on MNIST-1D, 1,000 training signals, batch 32, the preset's 60 epochs, evaluated
every 10 as the preset is), trained by ``train_pack`` on one thread, once per recipe: plain SGD, Lion,
Schedule-Free AdamW, SGD + SAM (two forward/backward passes a step) and SGD + EMA (BatchNorm statistics
recomputed at each evaluation). Prints user + system CPU seconds of each run, its ratio to SGD and the
final test accuracy (a sanity check, not a tuned comparison).

    python benchmarks/recipe_cost.py                 # the preset's 60 epochs
    python benchmarks/recipe_cost.py --epochs 10     # a shorter horizon (eval.every stays 10)
"""

from __future__ import annotations

import argparse
import os

import torch

from initmem import cube
from initmem.collect.train.engine import train_pack
from initmem.grid import load_grid, parse_grid

SGD = {"optimizer": "sgd", "lr": 0.3, "batch_size": 32, "schedule": "constant"}
RECIPES: dict[str, dict] = {
    "sgd": SGD,
    "lion": {"optimizer": "lion", "lr": 0.0003, "batch_size": 32, "weight_decay": 0.0},
    "sf_adamw": {"optimizer": "sf_adamw", "lr": 0.002, "batch_size": 32, "warmup_epochs": 1},
    "sgd+sam": {**SGD, "sam_rho": 0.05},
    "sgd+ema": {**SGD, "ema_decay": 0.99},
}


def grid_for(name: str, epochs: int):
    """The quick preset with one pipeline (``name``'s recipe) and one cell."""
    quick = load_grid("quick").to_dict()
    quick.update(name="recipe_cost", sigma_w=[1.0], seeds=[0],
                 pipelines={name.replace("+", "_"): {**RECIPES[name], "epochs": epochs}})
    quick["engine"]["cpu_threads"] = 1
    return parse_grid(quick)


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=load_grid("quick").pipelines["sgd_low_lr"].epochs)
    ap.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated, from " + ", ".join(RECIPES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    warm = grid_for("sgd", 1)   # untimed: data generation or cache read, oneDNN's first kernels
    train_pack(warm, "sgd", warm.cells("sgd"))
    rows = []
    for name in args.recipes.split(","):
        g = grid_for(name, args.epochs)
        pipeline = next(iter(g.pipelines))
        t0 = cpu_seconds()
        ds = train_pack(g, pipeline, g.cells(pipeline))
        rows.append((name, cpu_seconds() - t0, float(ds[cube.TEST_ACC].isel(epoch=-1).values.ravel()[0])))
    base = dict((n, s) for n, s, _ in rows).get("sgd")
    print(f"quick preset net, 1 cell, {args.epochs} epochs, 1 thread, torch {torch.__version__}")
    print(f"{'recipe':<10} {'CPU s':>8} {'x sgd':>6} {'test acc':>9}")
    for name, secs, acc in rows:
        ratio = f"{secs / base:6.2f}" if base else "     -"
        print(f"{name:<10} {secs:8.1f} {ratio} {acc:9.4f}")


if __name__ == "__main__":
    main()

"""What the paper preset costs: FLOPs from the network, time from a measured throughput.

Why this exists: the paper grid is far too large to try on a laptop, so its cost has to be
predicted. The work is counted exactly (``count_train_flops_per_image`` times the images each
cell trains on and evaluates, from the grid); the rate is measured here through the engine's
own ``PackTrainer.train_step`` and ``evaluate`` on synthetic CIFAR-shaped data. On a shared
machine wall time is inflated by other processes, so the rate is taken per CPU-second of this
process (1 thread), which is what an idle core delivers. A GPU rate is printed only when one
is measured (``--device cuda``); otherwise the GPU rows read "pending until measured".

    python benchmarks/paper_cost.py                    # CPU, 1 thread
    python benchmarks/paper_cost.py --device cuda --G 1,8,32
"""

from __future__ import annotations

import argparse
import time

import torch

from initmem.collect.train.devices import deterministic, device_kind, resolve_device
from initmem.collect.train.engine import PackTrainer
from initmem.collect.train.nets import count_train_flops_per_image
from initmem.grid import Grid, load_grid

try:  # run as a script from the repository root
    from train_throughput import synthetic_split
except ImportError:  # pragma: no cover - imported as benchmarks.paper_cost
    from benchmarks.train_throughput import synthetic_split

CIFAR_TRAIN, CIFAR_TEST = 50_000, 10_000


def grid_work(grid: Grid, flops: int) -> tuple[float, float, int]:
    """(training FLOPs, evaluation FLOPs, cells) of the whole grid.

    Each epoch trains on floor(n_train / b) batches of b and evaluates (forward only, a third
    of a training image's FLOPs) the train, validation and test splits; epoch 0 evaluates too.
    """
    n_val = round(grid.dataset.val_fraction * CIFAR_TRAIN)
    n_train = CIFAR_TRAIN - n_val
    cells = len(grid.sigma_w) * len(grid.seeds)
    train = evalf = 0.0
    for p in grid.pipelines.values():
        train += cells * p.epochs * (n_train // p.batch_size) * p.batch_size * flops
        evalf += cells * (p.epochs + 1) * (n_train + n_val + CIFAR_TEST) * flops / 3
    return train, evalf, cells * len(grid.pipelines)


def measure(grid: Grid, G: int, device: str, steps: int) -> tuple[float, float]:
    """(training, evaluation) model-images per second of a pack of G: per CPU-second of this
    process on CPU, per wall second on a GPU."""
    pipe = next(iter(grid.pipelines))
    b = grid.pipelines[pipe].batch_size
    split = synthetic_split(3, 32, max(4 * b, 512)).to(device)
    tr = PackTrainer(grid, pipe, [(1.0, s) for s in range(G)], split, device)
    order = tr.epoch_order()
    cpu = device_kind(device) == "cpu"
    clock = time.process_time if cpu else time.perf_counter

    def sync() -> None:
        if not cpu:
            torch.cuda.synchronize()

    tr.train_step(order[:, :b])       # warm-up (allocations, cuDNN autotuning)
    sync()
    t0 = clock()
    for i in range(steps):
        j = (i + 1) % tr.steps_per_epoch
        tr.train_step(order[:, j * b:(j + 1) * b])
    sync()
    train_rate = G * b * steps / (clock() - t0)
    tr.evaluate(split.x_val, split.y_val)
    sync()
    t0 = clock()
    reps = 2
    for _ in range(reps):
        tr.evaluate(split.x_val, split.y_val)
    sync()
    eval_rate = G * reps * split.y_val.numel() / (clock() - t0)
    return train_rate, eval_rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--G", default="1", help="pack sizes to measure, comma separated")
    ap.add_argument("--steps", type=int, default=4, help="timed training steps per pack size")
    ap.add_argument("--array-tasks", type=int, default=16, help="Slurm array tasks running at once")
    args = ap.parse_args()
    device = resolve_device(args.device)
    grid = load_grid("paper")
    d = grid.to_dict()
    d["dataset"]["root"] = "synthetic"      # the rate does not depend on the pixels
    d["engine"]["cpu_threads"] = 1
    grid = Grid.model_validate(d)
    with deterministic(device, 1 if device_kind(device) == "cpu" else None):
        probe = PackTrainer(grid, next(iter(grid.pipelines)), [(1.0, 0)], synthetic_split(3, 32, 256), device)
        flops = count_train_flops_per_image(probe.net, 3, 32)
        train_f, eval_f, cells = grid_work(grid, flops)
        total = train_f + eval_f
        print(f"paper preset: {cells} cells ({len(grid.pipelines)} pipelines x {len(grid.sigma_w)} sigma_w x "
              f"{len(grid.seeds)} seeds), resnet9 width {grid.model.width}")
        print(f"training FLOPs per image {flops / 1e9:.3f} GFLOP; grid: training {train_f / 1e15:.1f} PFLOP, "
              f"evaluation {eval_f / 1e15:.1f} PFLOP, total {total / 1e15:.1f} PFLOP")
        unit = "CPU-second (1 thread)" if device_kind(device) == "cpu" else "second"
        for G in (int(g) for g in args.G.split(",")):
            tr_rate, ev_rate = measure(grid, G, device, args.steps)
            seconds = train_f / (tr_rate * flops) + eval_f / (ev_rate * flops / 3)
            print(f"{device} G={G}: train {tr_rate:.1f} model-images per {unit} ({tr_rate * flops / 1e9:.1f} "
                  f"GFLOP/s), eval {ev_rate:.1f} images per {unit}")
            print(f"  whole grid: {seconds / 3600:.0f} {'core-' if device_kind(device) == 'cpu' else ''}hours, "
                  f"{seconds / 3600 / cells * 60:.0f} min per cell; as a Slurm array of {cells} tasks "
                  f"({args.array_tasks} at once): {seconds / 3600 / min(args.array_tasks, cells):.1f} h wall")
        if device_kind(device) == "cpu":
            print("GPU (one H200): pending until measured (python benchmarks/paper_cost.py --device cuda)")


if __name__ == "__main__":
    main()

"""Cost of the measured clocks per training step: engine.measure_clocks on versus off, one run.

Both sides train the same pack (same cells, data order and optimizer) through
``PackTrainer.train_step``, with the digits preset's thread count; bursts alternate between them
so that machine load hits both alike, and the best burst of each side is kept. Prints seconds
per step for each side and their ratio, and the measurement alone (``StepMeter.before_step`` +
``after_step``) as a share of a step: on a shared machine the A/B ratio is noisy, the
measurement-alone figure much less so.

    python benchmarks/measure_cost.py                        # digits preset's first pipeline, CPU, G = 1, 8
    python benchmarks/measure_cost.py --device cuda --G 1,32 --arch resnet9 --width 64
"""

from __future__ import annotations

import argparse
import time

import torch

from initmem.collect.train.data import load_split
from initmem.collect.train.devices import deterministic, device_kind, resolve_device
from initmem.collect.train.engine import PackTrainer
from initmem.grid import Grid, load_grid


def _sync(device: str) -> None:
    if device_kind(device) == "cuda":
        torch.cuda.synchronize()


def _grid(base: Grid, measure: bool, arch: str | None, width: int | None) -> Grid:
    d = base.to_dict()
    d["engine"] = {**d["engine"], "measure_clocks": measure}
    if arch is not None:
        d["model"] = {**d["model"], "arch": arch}
    if width is not None:
        d["model"] = {**d["model"], "width": width}
    return Grid.model_validate(d)


def seconds_per_step(G: int, device: str, steps: int, rounds: int, arch: str | None, width: int | None
                     ) -> tuple[float, float, float]:
    """Best seconds per step without and with the measured clocks, and of the measurement alone."""
    base = load_grid("digits")
    pipeline = next(iter(base.pipelines))
    cells = [(base.sigma_w[i % len(base.sigma_w)], base.seeds[i // len(base.sigma_w) % len(base.seeds)])
             for i in range(G)]
    split = load_split(base.dataset).to(device)
    trainers = {m: PackTrainer(_grid(base, m, arch, width), pipeline, cells, split, device) for m in (False, True)}
    b = base.pipelines[pipeline].batch_size
    best = {m: float("inf") for m in trainers}
    for r in range(rounds + 1):                      # round 0 warms up
        for m, tr in trainers.items():
            order = tr.epoch_order()
            idx = [order[:, (i % tr.steps_per_epoch) * b:(i % tr.steps_per_epoch + 1) * b] for i in range(steps)]
            _sync(device)
            t = time.perf_counter()
            for i in range(steps):
                if tr.step >= len(tr.lrs):
                    tr.step = 0                      # past the horizon: reuse the schedule
                tr.train_step(idx[i])
            _sync(device)
            if r:
                best[m] = min(best[m], (time.perf_counter() - t) / steps)
    meter = trainers[True].meter
    assert meter is not None
    alone = float("inf")
    for _ in range(rounds):
        _sync(device)
        t = time.perf_counter()
        for _ in range(steps):
            meter.before_step(0.1)
            meter.after_step()
        _sync(device)
        alone = min(alone, (time.perf_counter() - t) / steps)
    return best[False], best[True], alone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--G", default="1,8", help="pack sizes, comma-separated")
    ap.add_argument("--steps", type=int, default=10, help="steps per burst")
    ap.add_argument("--rounds", type=int, default=15, help="bursts per side (best kept)")
    ap.add_argument("--arch", default=None)
    ap.add_argument("--width", type=int, default=None)
    args = ap.parse_args()
    device = resolve_device(args.device)
    threads = load_grid("digits").engine.cpu_threads
    with deterministic(device, threads):
        print(f"device {device}, torch {torch.__version__}, threads {torch.get_num_threads()}")
        for G in (int(x) for x in args.G.split(",")):
            off, on, alone = seconds_per_step(G, device, args.steps, args.rounds, args.arch, args.width)
            print(f"G={G:3d}: {off * 1e3:8.2f} ms/step without, {on * 1e3:8.2f} ms/step with the measured clocks: "
                  f"ratio {on / off:.3f}; the measurement alone {alone * 1e3:.2f} ms/step = "
                  f"{alone / off * 100:.1f}% of a step")


if __name__ == "__main__":
    main()

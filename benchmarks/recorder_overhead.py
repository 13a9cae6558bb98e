"""The recorder's cost per training step against a step of the quick preset's network, one run.

A plain loop trains the quick preset's network (the packed resnet1d at width 16, depth 3, one member,
channels-last, batch 32, SGD at the ``sgd_low_lr`` pipeline's rate) on its MNIST-1D split. Three sides share the
initial weights and batches, each with its own model and optimizer: no recorder; :class:`initmem.Recorder` without
the measured clocks; the recorder with them (the default, as ``engine.measure_clocks``). The sides take turns step
by step, in a rotating order, so that machine load hits them alike, and each side reports its median step. Also
timed: the recorder's own per-step work alone (its two optimizer hooks and ``rec.step(loss)``), which a shared
machine's noise disturbs much less than the difference of two whole-step timings.

    python benchmarks/recorder_overhead.py                 # the quick preset's engine.cpu_threads (1 thread)
    python benchmarks/recorder_overhead.py --threads 2 --rounds 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F

from initmem.collect.custom.probe import apply_probe
from initmem.collect.custom.recorder import Recorder
from initmem.collect.train.data import load_split
from initmem.collect.train.devices import keep_freed_memory
from initmem.collect.train.nets import build_net
from initmem.collect.train.packed import use_channels_last
from initmem.grid import load_grid

SIDES = ("plain", "recorder", "recorder + measured clocks")


def run(threads: int | None, steps: int, rounds: int) -> dict[str, float]:
    """Median seconds per step of each side, and the best of the recorder's own work alone."""
    grid = load_grid("quick")
    torch.set_num_threads(threads or grid.engine.cpu_threads or 1)
    keep_freed_memory()   # as the engine on CPU: freed buffers are reused, not returned and faulted in again
    spec = grid.pipelines["sgd_low_lr"]
    split = load_split(grid.dataset)
    b, n = spec.batch_size, int(split.y_train.numel())

    def side(name: str) -> tuple[torch.nn.Module, torch.optim.Optimizer, Recorder | None]:
        net = build_net("resnet1d", 1, split.in_channels, split.n_classes, grid.model.width, grid.model.norm,
                        size=split.image_size, depth=grid.model.depth)
        apply_probe(net, 1.0, init_seed=0)
        use_channels_last(net, True)
        net.train()
        opt = torch.optim.SGD(net.parameters(), lr=spec.lr, foreach=True)
        rec = None if name == "plain" else Recorder(opt, net, batch_size=b, measure_clocks=name.endswith("clocks"))
        if rec is not None:
            rec.evaluate(0)
        return net, opt, rec

    sides = {name: side(name) for name in SIDES}
    order = torch.Generator().manual_seed(0)
    times: dict[str, list[float]] = {name: [] for name in SIDES}
    for r in range(rounds + 1):                         # round 0 warms up
        perm = torch.randperm(n, generator=order)
        for i in range(steps):
            idx = perm[(i % (n // b)) * b:(i % (n // b) + 1) * b]
            x = split.x_train[idx].contiguous(memory_format=torch.channels_last)
            y = split.y_train[idx]
            k = (r * steps + i) % len(SIDES)            # the sides take turns step by step, in a rotating order
            for name in SIDES[k:] + SIDES[:k]:
                net, opt, rec = sides[name]
                t = time.perf_counter()
                loss = F.cross_entropy(net(x)[:, 0], y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if rec is not None:
                    rec.step(loss)
                if r:
                    times[name].append(time.perf_counter() - t)
    out = {name: float(np.median(t)) for name, t in times.items()}
    for measure in (False, True):
        _net, opt, _ = sides["plain"]
        rec = Recorder(opt, _net, batch_size=b, measure_clocks=measure)
        loss = torch.tensor(0.5)
        alone = float("inf")
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(steps):
                rec._before_step(opt, (), {})
                rec._after_step(opt, (), {})
                rec.step(loss)
            alone = min(alone, (time.perf_counter() - t) / steps)
        rec.close()
        out["alone" + (" + measured clocks" if measure else "")] = alone
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: the quick preset's engine.cpu_threads, 1)")
    ap.add_argument("--steps", type=int, default=31, help="steps per round (an epoch of the quick preset: 31)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds after a warm-up round")
    args = ap.parse_args()
    best = run(args.threads, args.steps, args.rounds)
    plain = best["plain"]
    print(f"quick preset network, batch 32, CPU, {torch.get_num_threads()} thread(s); "
          f"median of {args.rounds * args.steps} steps per side")
    print(f"{'side':32s} {'ms/step':>8s} {'vs plain':>9s}")
    for side in SIDES:
        print(f"{side:32s} {1e3 * best[side]:8.3f} {best[side] / plain - 1:+9.1%}")
    for measure in ("", " + measured clocks"):
        alone = best["alone" + measure]
        print(f"{'recorder alone' + measure:32s} {1e3 * alone:8.3f} {alone / plain:+9.1%} of a plain step")


if __name__ == "__main__":
    main()

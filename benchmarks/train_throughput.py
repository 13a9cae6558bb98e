"""Training throughput of the packed engine: G models in one pack versus one model alone.

Prints, from one run: the machine's fp32 GEMM peak (GFLOP/s), the network's training FLOPs per
image, model-images per second and utilisation (achieved FLOP/s over GEMM peak) for each pack
size G, all through the same engine (``PackTrainer.train_step``), and last the packed-over-
single ratio of per-model throughput.

On CPU the GEMM peak is measured twice, because the two GEMM libraries inside torch disagree by
more than 2x on some machines: ``torch.mm`` runs MKL, which takes its AVX2 code path on AMD
CPUs, while oneDNN (the library behind torch's CPU convolutions) runs AVX-512. Utilisation is
printed against both; the oneDNN figure is the honest one wherever it is the larger.

    python benchmarks/train_throughput.py                       # quick preset net, CPU, G = 1,4,16
    python benchmarks/train_throughput.py --device cuda --arch resnet9 --G 1,8,32,64

FLOPs count multiply-adds of convolutions and the head as 2 FLOPs, times 3 for forward plus
backward (the usual convention); BatchNorm, ReLU, pooling and the optimizer are not counted,
so utilisation is a lower bound on how busy the arithmetic units are.

``--compare`` measures instead two ways of training a whole pack of the quick preset:
``train_pack`` of one pipeline's 20 cells for ``--epochs`` epochs (evaluated every 10, as the
preset), each side in a fresh process, alternating the two for ``--repeats`` rounds. It prints
the best CPU seconds (user + system) and wall seconds of each side, runs per CPU-second, the page
faults per training step, the ratio, and whether the cubes are bitwise equal.

- ``--compare allocator``: glibc's default malloc thresholds (the engine before
  :func:`initmem.collect.train.devices.keep_freed_memory`) against the engine's setting, which is
  process-wide and cannot be undone, hence the fresh processes. The cubes must be equal: the
  setting changes no number.
- ``--compare channels-last``: the preset's NCHW activations against ``engine.channels_last:
  true`` (both with the engine's allocator setting). Faster on CPU, but other oneDNN kernels round
  differently, so the cubes differ: a grid decision, measured here for it.

::

    python benchmarks/train_throughput.py --compare allocator                  # sgd_low_lr, 10 epochs, 3 rounds
    python benchmarks/train_throughput.py --compare allocator --pipeline adam --epochs 20 --repeats 5
    python benchmarks/train_throughput.py --compare channels-last --repeats 2

``--profile`` prints where a training step of such a pack spends its time: the ops of 20 steps
by self CPU time (torch.profiler; convolutions, BatchNorm, the rest), then the oneDNN primitives
of one step from its verbose log (convolutions against layout conversions).
``--eval-share`` prints the CPU cost of one training epoch and of one evaluation of such a pack
(best of ``--repeats``) and the evaluations' share of the whole pipeline.

CPU seconds are the fair measure on a shared machine (wall time also counts waiting for a
core); the minimum over rounds is the least disturbed run.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from initmem.collect.train import devices
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic, device_kind, resolve_device
from initmem.collect.train.engine import PackTrainer, train_pack
from initmem.collect.train.nets import count_train_flops_per_image
from initmem.collect.train.packed import PConv
from initmem.grid import Grid, load_grid, parse_grid


def _free(device: str) -> None:
    """Return a finished pack's memory so the next pack size starts clean."""
    gc.collect()
    if device_kind(device) == "cuda":
        torch.cuda.empty_cache()


def _sync(device: str) -> None:
    if device_kind(device) == "cuda":
        torch.cuda.synchronize()


def best_rate(fn: Callable[[], object], flop: float, device: str, seconds: float) -> float:
    """Best rate of ``fn`` in GFLOP/s over ``seconds`` of 4-call bursts."""
    for _ in range(3):
        fn()
    _sync(device)
    best = 0.0
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        t = time.perf_counter()
        for _ in range(4):
            fn()
        _sync(device)
        best = max(best, 4 * flop / (time.perf_counter() - t) / 1e9)
    return best


def gemm_peak(device: str, n: int, seconds: float) -> float:
    """Best fp32 (tf32 off) ``torch.mm`` rate in GFLOP/s for n x n matrices (MKL on CPU)."""
    if device_kind(device) == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    c = torch.empty(n, n, device=device)
    return best_rate(lambda: torch.mm(a, b, out=c), 2 * n ** 3, device, seconds)


def onednn_gemm_peak(n: int, seconds: float) -> float | None:
    """Best fp32 oneDNN matmul rate in GFLOP/s (CPU), or None where torch has no oneDNN."""
    if not torch.backends.mkldnn.is_available():
        return None
    a, b = torch.randn(n, n), torch.randn(n, n)
    # Guard the "fp32" in the claim: a reduced-precision (bf16) path would err by ~1e-3.
    exact = a.double() @ b.double().t()
    got = torch._C._nn.mkldnn_linear(a.to_mkldnn(), b.to_mkldnn()).to_dense().double()
    err = float((got - exact).abs().max() / exact.abs().max())
    if err > 1e-5:
        raise RuntimeError(f"oneDNN matmul is not full fp32 here (relative error {err:.1e})")
    am, bm = a.to_mkldnn(), b.to_mkldnn()
    return best_rate(lambda: torch._C._nn.mkldnn_linear(am, bm), 2 * n ** 3, "cpu", seconds)


def synthetic_split(in_ch: int, size: int, n: int, n_classes: int = 10) -> Split:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, in_ch, size, size, generator=g)
    y = torch.randint(0, n_classes, (n,), generator=g)
    return Split(x, y, x[:256], y[:256], x[:256], y[:256], n_classes, "synthetic")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu | cuda | mps | auto")
    ap.add_argument("--arch", default=None, help="resnet_tiny (quick preset, digits) | resnet20 | resnet9 | ...")
    ap.add_argument("--width", type=int, default=None)
    ap.add_argument("--G", default="1,4,16", help="pack sizes, comma separated")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the quick preset's sgd_low_lr")
    ap.add_argument("--seconds", type=float, default=4.0, help="timed seconds per pack size")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    ap.add_argument("--gemm-n", type=int, default=1024)
    ap.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None,
                    help="engine.channels_last (default: the quick preset's setting)")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                    help="engine.compile on CUDA: torch.compile the packed model (compile time is not timed)")
    ap.add_argument("--compare", choices=tuple(COMPARISONS),
                    help="time train_pack of a quick-preset pack, before vs after (see the module docstring)")
    ap.add_argument("--pipeline", default="sgd_low_lr", help="--compare: the quick preset pipeline")
    ap.add_argument("--epochs", type=int, default=10, help="--compare: epochs per pack")
    ap.add_argument("--repeats", type=int, default=3, help="--compare: alternating rounds")
    ap.add_argument("--eval-share", action="store_true",
                    help="CPU cost of a training epoch and of an evaluation of a quick-preset pack")
    ap.add_argument("--profile", action="store_true",
                    help="where a training step of a quick-preset pack spends its time (torch.profiler, oneDNN log)")
    ap.add_argument("--child", choices=("default", "tuned"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.eval_share:
        eval_share(args.pipeline, args.repeats)
        return
    if args.profile:
        profile_steps(args.pipeline)
        return
    if args.child:
        print(json.dumps(time_quick_pack(args.pipeline, args.epochs, tuned=args.child == "tuned",
                                         channels_last=args.channels_last)))
        return
    if args.compare:
        compare(args.compare, args.pipeline, args.epochs, args.repeats)
        return

    device = resolve_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    quick = load_grid("digits")
    pipe = next(iter(quick.pipelines))
    d = quick.to_dict()
    arch = args.arch or quick.model.arch
    width = args.width or (quick.model.width if arch == "resnet_tiny" else None)
    d["model"] = {**d["model"], "arch": arch, "width": width}
    if args.batch_size:
        d["pipelines"][pipe]["batch_size"] = args.batch_size
    if arch != "resnet_tiny":
        d["dataset"] = {"name": "cifar10", "root": "synthetic"}
    d["engine"] = {**d["engine"], "cpu_threads": None, "compile": args.compile,
                   "channels_last": d["engine"]["channels_last"] if args.channels_last is None else args.channels_last}
    grid = parse_grid(d)
    b = grid.pipelines[pipe].batch_size
    split = load_split(grid.dataset) if arch == "resnet_tiny" else synthetic_split(3, 32, 4096)
    split = split.to(device)
    sizes = [int(g) for g in args.G.split(",")]

    with deterministic(device):
        peak = gemm_peak(device, args.gemm_n, 2.0)
        peak_dnnl = onednn_gemm_peak(args.gemm_n, 2.0) if device_kind(device) == "cpu" else None
        probe = PackTrainer(grid, pipe, [(1.0, 0)], split, device)
        flops = count_train_flops_per_image(probe.net, split.in_channels, split.image_size)
        print(f"device {device}, threads {torch.get_num_threads()}, arch {arch} width {grid.model.width or 'default'}, "
              f"batch {b}, channels_last {probe.channels_last}")
        if peak_dnnl is None:
            print(f"fp32 GEMM peak ({args.gemm_n}^3, torch.mm): {peak:.1f} GFLOP/s")
        else:
            print(f"fp32 GEMM peak ({args.gemm_n}^3): torch.mm (MKL) {peak:.1f} GFLOP/s, "
                  f"oneDNN {peak_dnnl:.1f} GFLOP/s")
        print(f"training FLOPs per image: {flops / 1e6:.3f} MFLOP")
        rates: dict[int, float] = {}
        for G in sizes:
            try:
                rates[G] = model_images_per_second(grid, pipe, G, split, device, args.seconds)
            except torch.OutOfMemoryError:
                print(f"G={G:3d}: out of device memory at batch {b}; larger packs skipped")
                _free(device)
                break
            report(f"G={G:3d}", rates[G], G, flops, peak, peak_dnnl, b)
            _free(device)
        sizes = sorted(rates)
        big, small = max(sizes), min(sizes)
        print(f"packed-over-single per-model throughput (G={big} vs G={small}): {rates[big] / rates[small]:.2f}x")
        if small == 1 and device_kind(device) == "cpu":
            # A CPU pack of one pays for the shadow groups that keep it bitwise equal to a pack
            # member (packed.PConv._with_shadows). Measure the plain dense single model too, so the
            # ratio is not flattered by that cost.
            exact = PConv._with_shadows
            PConv._with_shadows = lambda self, x, w, _groups: F.conv2d(x, w, None, self.stride, self.pad, 1, self.G)
            try:
                dense = model_images_per_second(grid, pipe, 1, split, device, args.seconds)
            finally:
                PConv._with_shadows = exact
            report("G=  1 dense, no shadow", dense, 1, flops, peak, peak_dnnl, b)
            print(f"packed-over-single per-model throughput (G={big} vs dense G=1): {rates[big] / dense:.2f}x")


def model_images_per_second(grid: Grid, pipe: str, G: int, split: Split, device: str, seconds: float) -> float:
    """Steady-state model-images per second of ``PackTrainer.train_step`` for a pack of G."""
    b = grid.pipelines[pipe].batch_size
    tr = PackTrainer(grid, pipe, [(1.0, s) for s in range(G)], split, device)
    order = tr.epoch_order()

    def run(i: int) -> None:
        j = i % tr.steps_per_epoch
        if j == 0 and i:
            order.copy_(tr.epoch_order())
        tr.train_step(order[:, j * b:(j + 1) * b])

    for i in range(3):
        run(i)
    _sync(device)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 3:
        run(3 + n)
        n += 1
    _sync(device)
    return G * b * n / (time.perf_counter() - t0)


def quick_pack_grid(pipeline: str, epochs: int, channels_last: bool | None = None) -> Grid:
    """The quick preset cut to one pipeline (its 5 x 4 = 20 cells) trained for ``epochs`` epochs."""
    d = load_grid("quick").to_dict()
    if pipeline not in d["pipelines"]:
        raise SystemExit(f"no pipeline {pipeline!r} in the quick preset: {', '.join(d['pipelines'])}")
    d["pipelines"] = {pipeline: {**d["pipelines"][pipeline], "epochs": epochs}}
    if channels_last is not None:
        d["engine"] = {**d["engine"], "channels_last": channels_last}
    return parse_grid(d)


def cube_digest(ds: object) -> str:
    """SHA-256 over every variable of a pack's cube but the wall time: equal digests, equal bits."""
    h = hashlib.sha256()
    for name in sorted(ds.data_vars):  # type: ignore[attr-defined]
        if name != "wall_seconds":
            a = ds[name].values  # type: ignore[index]
            h.update(name.encode())
            h.update(str(a.dtype).encode())
            h.update(a.tobytes())
    return h.hexdigest()


# --compare: (label, allocator setting on, engine.channels_last) of the "before" and "after" sides.
COMPARISONS = {
    "allocator": {"before": ("glibc default malloc", False, None), "after": ("keep_freed_memory", True, None)},
    "channels-last": {"before": ("NCHW (the preset)", True, None), "after": ("channels_last", True, True)},
}


def time_quick_pack(pipeline: str, epochs: int, *, tuned: bool, channels_last: bool | None
                    ) -> dict[str, float | str | bool]:
    """In this (fresh) process: CPU and wall seconds, page faults and cube digest of one pack."""
    devices.TUNE_CPU_ALLOCATOR = tuned
    grid = quick_pack_grid(pipeline, epochs, channels_last)
    load_split(grid.dataset)   # generating or reading the data is not timed
    cells = grid.cells(pipeline)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    ds = train_pack(grid, pipeline, cells)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    spec = grid.pipelines[pipeline]
    n_train = int(load_split(grid.dataset).y_train.numel())
    steps = epochs * (n_train // spec.batch_size)
    return {"cpu": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), "sys": r1.ru_stime - r0.ru_stime,
            "wall": wall, "faults_per_step": (r1.ru_minflt - r0.ru_minflt) / steps, "cells": len(cells),
            "digest": cube_digest(ds), "tuned": devices.keep_freed_memory() if tuned else False}


def compare(what: str, pipeline: str, epochs: int, repeats: int) -> None:
    """Alternate fresh processes of the two sides of ``what``; print best times and the ratio."""
    sides = COMPARISONS[what]
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(repeats):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            _label, tuned, cl = sides[side]
            cmd = [sys.executable, __file__, "--child", "tuned" if tuned else "default", "--pipeline", pipeline,
                   "--epochs", str(epochs)]
            if cl is not None:
                cmd.append("--channels-last" if cl else "--no-channels-last")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            results[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
            x = results[side][-1]
            print(f"round {r + 1} {sides[side][0]:22s}: {x['cpu']:7.2f} CPU-s ({x['sys']:5.2f} system)  "
                  f"{x['wall']:7.2f} s wall  {x['faults_per_step']:7.0f} page faults/step", flush=True)
    if what == "allocator" and not results["after"][0]["tuned"]:
        print("the allocator setting is not available here (not glibc): both sides ran the default")
    n = results["before"][0]["cells"]
    print(f"quick preset, pipeline {pipeline}, {n} cells in one pack, {epochs} epochs, best of {repeats}:")
    best = {}
    for side in ("before", "after"):
        cpu = min(x["cpu"] for x in results[side])
        wall = min(x["wall"] for x in results[side])
        best[side] = cpu
        print(f"  {side:6s} {sides[side][0]:22s} {cpu:7.2f} CPU-s {wall:7.2f} s wall  {n / cpu:.3f} runs per CPU-s "
              f"({n * epochs / cpu:.1f} run-epochs per CPU-s)")
    print(f"  speed-up (CPU-s before / after): {best['before'] / best['after']:.2f}x")
    digests = {side: {x["digest"] for x in results[side]} for side in results}
    same = len(digests["before"] | digests["after"]) == 1
    print(f"  cubes bitwise equal across all {2 * repeats} runs: {same}"
          + ("" if what == "allocator" else " (expected False: other kernels, other rounding)"))


def eval_share(pipeline: str, repeats: int) -> None:
    """Best CPU seconds of one training epoch and of one evaluation (train, validation and test
    splits) of a quick-preset pack, alternated, and the evaluations' share of the whole pipeline."""
    devices.keep_freed_memory()
    grid = quick_pack_grid(pipeline, load_grid("quick").pipelines[pipeline].epochs)
    spec, split = grid.pipelines[pipeline], load_split(grid.dataset)
    b = spec.batch_size
    with deterministic("cpu", grid.engine.cpu_threads):
        tr = PackTrainer(grid, pipeline, grid.cells(pipeline), split, "cpu")
        epoch = evaluation = float("inf")
        for _ in range(repeats):
            order, t = tr.epoch_order(), time.process_time()
            for i in range(tr.steps_per_epoch):
                tr.train_step(order[:, i * b:(i + 1) * b])
            epoch = min(epoch, time.process_time() - t)
            t = time.process_time()
            for x, y in ((split.x_train, split.y_train), (split.x_val, split.y_val), (split.x_test, split.y_test)):
                tr.evaluate(x, y)
            evaluation = min(evaluation, time.process_time() - t)
    every = spec.eval_every or grid.eval.every
    n_eval = spec.epochs // every + 1 + (spec.epochs % every != 0)   # epoch 0, every `every`, the last
    total = spec.epochs * epoch + n_eval * evaluation
    print(f"quick preset, pipeline {pipeline}, {tr.G} cells, best of {repeats}: a training epoch "
          f"{epoch:.2f} CPU-s ({epoch / tr.steps_per_epoch * 1e3:.1f} ms a step), an evaluation {evaluation:.2f} "
          f"CPU-s; {spec.epochs} epochs and {n_eval} evaluations: {total:.0f} CPU-s, evaluations "
          f"{100 * n_eval * evaluation / total:.0f}%")


def profile_steps(pipeline: str, steps: int = 20) -> None:
    """The ops of ``steps`` training steps of a quick-preset pack by self CPU time (torch.profiler),
    grouped into convolutions, BatchNorm and the rest, then one step's oneDNN primitives from its
    verbose log: how much of oneDNN's time is layout conversion (reorders)."""
    import collections
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    devices.keep_freed_memory()
    grid = quick_pack_grid(pipeline, 1)
    split, b = load_split(grid.dataset), grid.pipelines[pipeline].batch_size
    with deterministic("cpu", grid.engine.cpu_threads):
        tr = PackTrainer(grid, pipeline, grid.cells(pipeline), split, "cpu")
        order = tr.epoch_order()
        for i in range(3):
            tr.train_step(order[:, i * b:(i + 1) * b])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(3, 3 + steps):
                tr.train_step(order[:, (i % tr.steps_per_epoch) * b:(i % tr.steps_per_epoch + 1) * b])
        groups: dict[str, float] = collections.Counter()
        for ev in prof.key_averages():
            name = ev.key
            kind = ("convolution" if "convolution" in name else "batch norm" if "batch_norm" in name else "other")
            groups[kind] += ev.self_cpu_time_total / 1e3 / steps
        total = sum(groups.values())
        print(f"quick preset, pipeline {pipeline}, {tr.G} cells, {steps} steps: {total:.1f} ms of profiled CPU a step")
        for kind, ms in groups.most_common():
            print(f"  {kind:12s} {ms:6.1f} ms  {100 * ms / total:4.0f}%")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
        # oneDNN writes its log to stdout from C: catch file descriptor 1 for one step.
        sys.stdout.flush()
        saved = os.dup(1)
        with tempfile.TemporaryFile(mode="w+") as log:
            os.dup2(log.fileno(), 1)
            try:
                with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                    tr.train_step(order[:, 0:b])
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)
            log.seek(0)
            lines = [ln.strip().split(",") for ln in log if ln.startswith("onednn_verbose") and ",exec," in ln]
    ms: dict[str, float] = collections.Counter()
    for f in lines:
        ms["reorder" if f[5] == "reorder" else f[5]] += float(f[-1])
    total = sum(ms.values())
    print(f"oneDNN in one step: {total:.1f} ms; " + ", ".join(f"{k} {v:.1f} ms ({100 * v / total:.0f}%)"
                                                           for k, v in ms.most_common()))


def report(label: str, rate: float, G: int, flops: int, peak: float, peak_dnnl: float | None, b: int) -> None:
    achieved = rate * flops / 1e9
    util = f"utilisation {100 * achieved / peak:5.1f}% of torch.mm peak"
    if peak_dnnl is not None:
        util += f", {100 * achieved / peak_dnnl:5.1f}% of oneDNN peak"
    print(f"{label}: {rate:10.0f} model-images/s  {achieved:8.2f} GFLOP/s  {util}  ({G * b / rate * 1e3:.1f} ms/step)")

if __name__ == "__main__":
    main()

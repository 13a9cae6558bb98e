"""Training throughput of the packed engine: G models in one pack versus one model alone.

Prints, from one run: the machine's GEMM peak (GFLOP/s; fp32, or bf16 on CUDA where the engine
autocasts), the network's training FLOPs per image, model-images per second and utilisation
(achieved FLOP/s over GEMM peak) for each pack size G, all through the same engine
(``PackTrainer.train_step``), and last the packed-over-single ratio of per-model throughput.

On CPU the GEMM peak is measured twice, because the two GEMM libraries inside torch disagree by
more than 2x on some machines: ``torch.mm`` runs MKL, which takes its AVX2 code path on AMD
CPUs, while oneDNN (the library behind torch's CPU convolutions) runs AVX-512. Utilisation is
printed against both; the oneDNN figure is the honest one wherever it is the larger.

    python benchmarks/train_throughput.py                       # digits preset net, CPU, G = 1,4,16
    python benchmarks/train_throughput.py --device cuda --arch resnet9 --G 1,8,32,64

FLOPs count multiply-adds of convolutions and the head as 2 FLOPs, times 3 for forward plus
backward (the usual convention); BatchNorm, ReLU, pooling and the optimizer are not counted,
so utilisation is a lower bound on how busy the arithmetic units are.

``--compare`` measures instead two ways of training a whole pack of the quick preset:
``train_pack`` of one pipeline's 20 cells (five sigma_w levels) for ``--epochs`` epochs (evaluated every 10, as the
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
- ``--compare fast-eval``: evaluations over whole ``engine.eval_batch_size`` batches under
  ``no_grad`` against the engine's ``FAST_EVAL`` (a convolutional pack's features in sub-batches
  of the training batch size, under ``inference_mode``). The cubes must be equal.
- ``--compare meter``: the clock meter's unit vectors with the per-column gather it used before
  against its per-layer scaling. The cubes must be equal.
- ``--compare engine``: the last two together, before against after.

Run it with ``ATEN_CPU_CAPABILITY=avx2`` (the children inherit it) to measure torch's AVX2
kernels on an AVX-512 machine; the cubes record it as ``cpu_capability`` and it is printed.

::

    python benchmarks/train_throughput.py --compare allocator                  # sgd_low_lr, 10 epochs, 3 rounds
    python benchmarks/train_throughput.py --compare allocator --pipeline adam --epochs 20 --repeats 5
    python benchmarks/train_throughput.py --compare channels-last --repeats 2
    python benchmarks/train_throughput.py --compare engine --epochs 10 --repeats 3
    ATEN_CPU_CAPABILITY=avx2 python benchmarks/train_throughput.py --compare engine

``--profile`` prints where the CPU time of such a pack goes, then where a training step spends
its time. First the exclusive CPU seconds of each phase of ``train_pack`` over ``--epochs``
epochs (evaluated as the preset, a checkpoint's state taken and serialised every epoch as the
runner does by default): the training step's forward, its loss, backward and the rest, the
optimizer, the clock meter, the batch gather; the evaluations; recording; checkpointing; set-up
(``--no-fast-eval`` profiles the evaluation without ``FAST_EVAL``). Then the ops of 20 steps by
self CPU time (torch.profiler; convolutions, BatchNorm, the rest), and the oneDNN primitives of
one step from its verbose log (convolutions against layout conversions).
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

from initmem.collect.train import devices, engine
from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic, device_kind, resolve_device
from initmem.collect.train.engine import PackTrainer, train_pack
from initmem.collect.train.measure import StepMeter
from initmem.collect.train.nets import count_train_flops_per_image
from initmem.collect.train.packed import PackedNet, PConv
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


def gemm_peak(device: str, n: int, seconds: float, dtype: torch.dtype = torch.float32) -> float:
    """Best ``torch.mm`` rate in GFLOP/s for n x n matrices of ``dtype`` (fp32 with tf32 off; MKL on CPU).

    Utilisation is only meaningful against the peak of the arithmetic the engine runs: on CUDA that is
    bf16 under autocast, whose tensor-core peak is an order of magnitude above fp32's."""
    if device_kind(device) == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)
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
    ap.add_argument("--gemm-n", type=int, default=None, help="GEMM peak size (default 1024 on CPU, 8192 on CUDA)")
    ap.add_argument("--channels-last", action=argparse.BooleanOptionalAction, default=None,
                    help="engine.channels_last (default: the quick preset's setting)")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False,
                    help="engine.compile on CUDA: torch.compile the packed model (compile time is not timed)")
    ap.add_argument("--compare", choices=tuple(COMPARISONS),
                    help="time train_pack of a quick-preset pack, before vs after (see the module docstring)")
    ap.add_argument("--pipeline", default="sgd_low_lr", help="--compare: the quick preset pipeline")
    ap.add_argument("--epochs", type=int, default=10, help="--compare, --profile: epochs per pack")
    ap.add_argument("--repeats", type=int, default=3, help="--compare: alternating rounds")
    ap.add_argument("--eval-share", action="store_true",
                    help="CPU cost of a training epoch and of an evaluation of a quick-preset pack")
    ap.add_argument("--profile", action="store_true",
                    help="where a training step of a quick-preset pack spends its time (torch.profiler, oneDNN log)")
    ap.add_argument("--fast-eval", action=argparse.BooleanOptionalAction, default=True,
                    help="--profile: the engine's FAST_EVAL (evaluation sub-batches, inference_mode)")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # JSON settings of one --compare side
    args = ap.parse_args()
    if args.eval_share:
        eval_share(args.pipeline, args.repeats)
        return
    if args.profile:
        engine.FAST_EVAL = args.fast_eval
        profile_pack(args.pipeline, args.epochs)
        profile_steps(args.pipeline)
        return
    if args.child:
        print(json.dumps(time_quick_pack(args.pipeline, args.epochs, **json.loads(args.child))))
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
        probe = PackTrainer(grid, pipe, [(1.0, 0)], split, device)
        bf16 = probe.amp and device_kind(device) == "cuda"
        gemm_n = args.gemm_n or (8192 if device_kind(device) == "cuda" else 1024)
        peak = gemm_peak(device, gemm_n, 2.0, torch.bfloat16 if bf16 else torch.float32)
        peak_dnnl = onednn_gemm_peak(gemm_n, 2.0) if device_kind(device) == "cpu" else None
        flops = count_train_flops_per_image(probe.net, split.in_channels, split.image_size)
        print(f"device {device}, threads {torch.get_num_threads()}, arch {arch} width {grid.model.width or 'default'}, "
              f"batch {b}, channels_last {probe.channels_last}")
        if peak_dnnl is None:
            print(f"{'bf16' if bf16 else 'fp32'} GEMM peak ({gemm_n}^3, torch.mm): {peak:.1f} GFLOP/s")
        else:
            print(f"fp32 GEMM peak ({gemm_n}^3): torch.mm (MKL) {peak:.1f} GFLOP/s, "
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
    """The quick preset cut to one pipeline on five sigma_w levels (1/4..4; 5 x 4 = 20 cells, the pack the figures
    in docs/benchmarks.md measure; the preset itself sweeps 1/4, 1 and 4) trained for ``epochs`` epochs."""
    d = load_grid("quick").to_dict()
    d["sigma_w"] = [0.25, 0.5, 1.0, 2.0, 4.0]
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


# --compare: (label, settings) of the "before" and "after" sides; settings are time_quick_pack's
# keywords, the engine's defaults where not given.
COMPARISONS: dict[str, dict[str, tuple[str, dict[str, bool | None]]]] = {
    "allocator": {"before": ("glibc default malloc", {"tuned": False}), "after": ("keep_freed_memory", {})},
    "channels-last": {"before": ("NCHW (the preset)", {}), "after": ("channels_last", {"channels_last": True})},
    "fast-eval": {"before": ("whole-batch eval, no_grad", {"fast_eval": False}),
                  "after": ("sub-batches, inference", {})},
    "meter": {"before": ("gathered unit scaling", {"gather_meter": True}), "after": ("per-layer scaling", {})},
    "engine": {"before": ("engine before the two", {"fast_eval": False, "gather_meter": True}),
               "after": ("engine with the two", {})},
}
# The comparisons whose two sides must give bitwise equal cubes (channels-last changes the rounding).
EXACT = ("allocator", "fast-eval", "meter", "engine")


def _gathered_set_prev(self: StepMeter, flat: torch.Tensor) -> None:
    """The clock meter's unit vectors as computed before per-layer scaling: each layer's reciprocal
    norm gathered to every column with ``index_select``, then one multiply."""
    self.prev = flat
    self.prev_norm = self._norms(flat)
    column_layer = torch.repeat_interleave(torch.arange(len(self.sizes), device=flat.device),
                                           torch.tensor(self.sizes, device=flat.device))
    self.prev_unit = flat * (1.0 / self.prev_norm).index_select(1, column_layer)


def time_quick_pack(pipeline: str, epochs: int, *, tuned: bool = True, channels_last: bool | None = None,
                    fast_eval: bool = True, gather_meter: bool = False) -> dict[str, float | str | bool]:
    """In this (fresh) process: CPU and wall seconds, page faults and cube digest of one pack.

    ``tuned``: the allocator setting (devices.keep_freed_memory); ``fast_eval``: the engine's
    FAST_EVAL; ``gather_meter``: the meter's former unit scaling."""
    devices.TUNE_CPU_ALLOCATOR = tuned
    engine.FAST_EVAL = fast_eval
    if gather_meter:
        StepMeter._set_prev = _gathered_set_prev  # type: ignore[method-assign]
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
            "digest": cube_digest(ds), "tuned": devices.keep_freed_memory() if tuned else False,
            "cpu_capability": str(ds.attrs.get("cpu_capability"))}


def compare(what: str, pipeline: str, epochs: int, repeats: int) -> None:
    """Alternate fresh processes of the two sides of ``what``; print best times and the ratio."""
    sides = COMPARISONS[what]
    results: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(repeats):
        for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
            cmd = [sys.executable, __file__, "--child", json.dumps(sides[side][1]), "--pipeline", pipeline,
                   "--epochs", str(epochs)]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            results[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
            x = results[side][-1]
            print(f"round {r + 1} {sides[side][0]:26s}: {x['cpu']:7.2f} CPU-s ({x['sys']:5.2f} system)  "
                  f"{x['wall']:7.2f} s wall  {x['faults_per_step']:7.0f} page faults/step", flush=True)
    if what == "allocator" and not results["after"][0]["tuned"]:
        print("the allocator setting is not available here (not glibc): both sides ran the default")
    n = results["before"][0]["cells"]
    print(f"quick preset, pipeline {pipeline}, {n} cells in one pack, {epochs} epochs, best of {repeats} "
          f"(cpu_capability {results['before'][0]['cpu_capability']}):")
    best = {}
    for side in ("before", "after"):
        cpu = min(x["cpu"] for x in results[side])
        wall = min(x["wall"] for x in results[side])
        best[side] = cpu
        print(f"  {side:6s} {sides[side][0]:26s} {cpu:7.2f} CPU-s {wall:7.2f} s wall  {cpu / n:.3f} CPU-s per run "
              f"({n * epochs / cpu:.1f} run-epochs per CPU-s)")
    print(f"  speed-up (CPU-s before / after): {best['before'] / best['after']:.2f}x")
    digests = {side: {x["digest"] for x in results[side]} for side in results}
    same = len(digests["before"] | digests["after"]) == 1
    print(f"  cubes bitwise equal across all {2 * repeats} runs: {same}"
          + ("" if what in EXACT else " (expected False: other kernels, other rounding)"))


def eval_share(pipeline: str, repeats: int) -> None:
    """Best CPU seconds of one training epoch and of one evaluation (train, validation and test
    splits) of a quick-preset pack, the evaluation with and without the engine's ``FAST_EVAL``
    (alternated in this process), and the evaluations' share of the whole pipeline."""
    devices.keep_freed_memory()
    grid = quick_pack_grid(pipeline, load_grid("quick").pipelines[pipeline].epochs)
    spec, split = grid.pipelines[pipeline], load_split(grid.dataset)
    b = spec.batch_size
    splits = ((split.x_train, split.y_train), (split.x_val, split.y_val), (split.x_test, split.y_test))
    with deterministic("cpu", grid.engine.cpu_threads):
        tr = PackTrainer(grid, pipeline, grid.cells(pipeline), split, "cpu")
        epoch = float("inf")
        evaluation = {False: float("inf"), True: float("inf")}
        for r in range(repeats):
            order, t = tr.epoch_order(), time.process_time()
            for i in range(tr.steps_per_epoch):
                tr.train_step(order[:, i * b:(i + 1) * b])
            epoch = min(epoch, time.process_time() - t)
            for fast in ((False, True) if r % 2 == 0 else (True, False)):
                engine.FAST_EVAL = fast
                tr.eval_chunk = tr._eval_chunk()
                t = time.process_time()
                for x, y in splits:
                    tr.evaluate(x, y, want_pred=True)
                evaluation[fast] = min(evaluation[fast], time.process_time() - t)
        engine.FAST_EVAL = True
    every = spec.eval_every or grid.eval.every
    n_eval = len({0, *range(every, spec.epochs + 1, every), spec.epochs})
    print(f"quick preset, pipeline {pipeline}, {tr.G} cells, best of {repeats}: a training epoch "
          f"{epoch:.2f} CPU-s ({epoch / tr.steps_per_epoch * 1e3:.1f} ms a step)")
    for fast in (False, True):
        total = spec.epochs * epoch + n_eval * evaluation[fast]
        print(f"  FAST_EVAL {fast!s:5s}: an evaluation {evaluation[fast]:.2f} CPU-s; {spec.epochs} epochs and "
              f"{n_eval} evaluations: {total:.0f} CPU-s, evaluations {100 * n_eval * evaluation[fast] / total:.0f}%")
    print(f"  evaluation speed-up {evaluation[False] / evaluation[True]:.2f}x (sub-batches of {tr._eval_chunk()} "
          f"images)")


class PhaseClock:
    """Exclusive CPU seconds per phase: a wrapped call charges its time to its own phase, minus what
    the phases it calls charge to theirs. Everything inside an evaluation stays the evaluation's."""

    OUTSIDE = "outside the phases"

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.stack = [self.OUTSIDE]
        self.mark = time.process_time()
        self.wrapped: list[tuple[object, str, object]] = []

    def _switch(self, to: str | None) -> None:
        now = time.process_time()
        top = self.stack[-1]
        self.seconds[top] = self.seconds.get(top, 0.0) + now - self.mark
        self.mark = now
        if to is None:
            self.stack.pop()
        else:
            self.stack.append(to)

    def wrap(self, owner: object, name: str, phase: str) -> None:
        """Replace ``owner.name`` (a class's method or a module's function) by a timed version."""
        fn = getattr(owner, name)
        self.wrapped.append((owner, name, owner.__dict__[name] if isinstance(owner, type) else fn))

        def timed(*a: object, **k: object) -> object:
            if self.stack[-1] == "evaluation":
                return fn(*a, **k)
            self._switch(phase)
            try:
                return fn(*a, **k)
            finally:
                self._switch(None)

        setattr(owner, name, timed)

    def unwrap(self) -> None:
        """Put every wrapped function back."""
        for owner, name, fn in reversed(self.wrapped):
            setattr(owner, name, fn)
        self.wrapped.clear()


def profile_pack(pipeline: str, epochs: int) -> None:
    """Exclusive CPU time of the phases of ``train_pack`` over one quick-preset pack of ``epochs``
    epochs (evaluated as the preset: epoch 0, every ``eval.every`` and the last), with the state
    a checkpoint holds taken and serialised every epoch as the runner does by default."""
    import io

    from initmem.collect.train import measure, optim

    devices.keep_freed_memory()
    clock = PhaseClock()
    PT = engine.PackTrainer
    clock.wrap(PT, "train_step", "train step: loss, backward, rest")
    clock.wrap(PT, "batch", "train step: batch gather")
    clock.wrap(optim.PackedOptimizer, "step", "train step: optimizer")
    clock.wrap(measure.StepMeter, "before_step", "train step: clock meter")
    clock.wrap(measure.StepMeter, "after_step", "train step: clock meter")
    clock.wrap(PT, "epoch_order", "data order")
    clock.wrap(PT, "evaluate", "evaluation")
    clock.wrap(engine, "_record_epoch", "record: norms, curves, selection")
    clock.wrap(engine, "_state", "checkpoint: state")
    # torch.use_deterministic_algorithms imports TorchInductor (to set its deterministic option),
    # and torch.optim would import TorchDynamo otherwise: once per process, seconds of CPU.
    clock.wrap(torch, "use_deterministic_algorithms", "setup: torch imports TorchInductor")
    clock.wrap(engine, "load_split", "setup: data, net, init")
    clock.wrap(PT, "__init__", "setup: data, net, init")
    clock.wrap(engine, "_to_dataset", "cube assembly")
    PackedNet.__call__ = torch.nn.Module.__call__  # type: ignore[method-assign]
    clock.wrap(PackedNet, "__call__", "train step: forward")

    def checkpoint(state: dict) -> None:
        clock._switch("checkpoint: torch.save")
        torch.save(state, io.BytesIO())
        clock._switch(None)

    grid = quick_pack_grid(pipeline, epochs)
    load_split(grid.dataset)
    t0 = clock.mark = time.process_time()
    try:
        train_pack(grid, pipeline, grid.cells(pipeline), checkpoint=checkpoint)
    finally:
        clock.unwrap()
        del PackedNet.__call__
    clock._switch(None)
    total = time.process_time() - t0
    spec = grid.pipelines[pipeline]
    every = spec.eval_every or grid.eval.every
    n_eval = len({0, *range(every, epochs + 1, every), epochs})
    print(f"quick preset, pipeline {pipeline}, {len(grid.cells(pipeline))} cells, {epochs} epochs, {n_eval} "
          f"evaluations: {total:.1f} CPU-s (FAST_EVAL {engine.FAST_EVAL}, cpu_capability "
          f"{torch.backends.cpu.get_cpu_capability()})")
    for phase, sec in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:36s} {sec:7.2f} CPU-s  {100 * sec / total:5.1f}%")


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

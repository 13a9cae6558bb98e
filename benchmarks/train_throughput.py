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
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from initmem.collect.train.data import Split, load_split
from initmem.collect.train.devices import deterministic, device_kind, resolve_device
from initmem.collect.train.engine import PackTrainer
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
    args = ap.parse_args()

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


def report(label: str, rate: float, G: int, flops: int, peak: float, peak_dnnl: float | None, b: int) -> None:
    achieved = rate * flops / 1e9
    util = f"utilisation {100 * achieved / peak:5.1f}% of torch.mm peak"
    if peak_dnnl is not None:
        util += f", {100 * achieved / peak_dnnl:5.1f}% of oneDNN peak"
    print(f"{label}: {rate:10.0f} model-images/s  {achieved:8.2f} GFLOP/s  {util}  ({G * b / rate * 1e3:.1f} ms/step)")

if __name__ == "__main__":
    main()

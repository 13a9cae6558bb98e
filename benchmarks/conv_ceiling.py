"""The utilisation ceiling set by the quick network's convolutions alone, at pack size G.

Why this exists: ``train_throughput.py`` reports the whole training step's utilisation. This
script answers the follow-up question "how much of the gap is the convolutions themselves?"
It records the shape of every packed convolution in one forward pass of the network, then times
each one alone (forward, and the backward the engine runs: weight gradient everywhere, input
gradient except at the stem), under the engine's CPU settings (deterministic algorithms, the
same thread count). Even if BatchNorm, ReLU, the residual adds, the loss and the optimizer cost
nothing, a step cannot beat the sum of these times; so the printed utilisation is an upper
bound for the engine at that layout, against both GEMM peaks of ``train_throughput.py``.

    python benchmarks/conv_ceiling.py                 # G = 16, 1 thread, NCHW and channels_last
    python benchmarks/conv_ceiling.py --G 1,16 --threads 2
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from initmem.collect.train.devices import deterministic
from initmem.collect.train.nets import build_net
from initmem.collect.train.packed import PConv
from initmem.grid import load_grid

try:  # run as a script from the repository root
    from train_throughput import best_rate, gemm_peak, onednn_gemm_peak
except ImportError:  # pragma: no cover - imported as benchmarks.conv_ceiling
    from benchmarks.train_throughput import best_rate, gemm_peak, onednn_gemm_peak


def conv_shapes(G: int, batch: int) -> list[tuple[str, PConv, tuple[int, ...]]]:
    """(name, layer, input shape) of every packed convolution of the quick network."""
    grid = load_grid("digits")
    net = build_net(grid.model.arch, G, 1, 10, grid.model.width, grid.model.norm)
    shapes: list[tuple[str, PConv, tuple[int, ...]]] = []
    names = {id(m): n for n, m in net.named_modules()}
    hooks = [m.register_forward_hook(lambda mod, inp, _out: shapes.append((names[id(mod)], mod, tuple(inp[0].shape))))
             for m in net.modules() if isinstance(m, PConv)]
    with torch.no_grad():
        net(torch.zeros(batch, G, 8, 8))
    for h in hooks:
        h.remove()
    return shapes


def time_layer(conv: PConv, shape: tuple[int, ...], channels_last: bool, first: bool,
               seconds: float) -> tuple[float, int]:
    """Seconds for forward + backward of one packed convolution, and its FLOPs."""
    x = torch.randn(shape)
    w = torch.randn(conv.G * conv.cout, conv.cin, conv.k, conv.k)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    y = F.conv2d(x, w, None, conv.stride, conv.pad, 1, conv.G)
    gy = torch.randn_like(y)
    mask = (not first, True, False)     # the stem's input needs no gradient
    args = ((conv.stride,) * 2, (conv.pad,) * 2, (1, 1), False, (0, 0), conv.G)

    def step() -> None:
        F.conv2d(x, w, None, conv.stride, conv.pad, 1, conv.G)
        torch.ops.aten.convolution_backward(gy, x, w, None, *args, mask)

    macs, _, _ = conv.macs_per_image(shape[2], shape[3])
    flop = 2 * macs * shape[0] * conv.G * (2 if first else 3)
    return flop / (best_rate(step, flop, "cpu", seconds) * 1e9), flop


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--G", default="16", help="pack sizes, comma separated")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.5, help="timed seconds per layer")
    args = ap.parse_args()
    with deterministic("cpu", args.threads):
        peak = gemm_peak("cpu", 1024, 2.0)
        peak_dnnl = onednn_gemm_peak(1024, 2.0) or peak
        print(f"threads {torch.get_num_threads()}, batch {args.batch_size}; fp32 GEMM peak: "
              f"torch.mm {peak:.1f} GFLOP/s, oneDNN {peak_dnnl:.1f} GFLOP/s")
        for G in (int(g) for g in args.G.split(",")):
            shapes = conv_shapes(G, args.batch_size)
            for layout in ("NCHW", "channels_last"):
                total_t, total_f = 0.0, 0
                rows = []
                for i, (name, conv, shape) in enumerate(shapes):
                    t, f = time_layer(conv, shape, layout == "channels_last", i == 0, args.seconds)
                    total_t, total_f = total_t + t, total_f + f
                    rows.append(f"    {name:22s} {conv.cin:>3d}->{conv.cout:<3d} k{conv.k} s{conv.stride} "
                                f"{shape[2]}x{shape[3]}: {t * 1e6:7.0f} us  {f / t / 1e9:6.1f} GFLOP/s")
                rate = total_f / total_t / 1e9
                print(f"G={G} {layout}: convolutions alone {total_t * 1e3:.2f} ms/step, {rate:.1f} GFLOP/s -> "
                      f"utilisation ceiling {100 * rate / peak:.1f}% of torch.mm peak, "
                      f"{100 * rate / peak_dnnl:.1f}% of oneDNN peak")
                print("\n".join(rows))


if __name__ == "__main__":
    main()

"""Figures of a crossed seed design (``seeds: {init: [...], data: [...]}``, docs/crossed.md).

They draw summary.json's ``crossed`` block only (the analysis computed every number): the variance components
of the draw (SD_init), the data order (SD_data) and the rest (SD_resid) per pipeline and sigma_w level, and the
init share over training beside the scale's memory curve. An analysis of a cube with a list of seeds has no
such block, and both figures raise :class:`~initmem.plot.core.Skip`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from initmem import cube as C
from initmem.plot.core import Drawn, Skip, colour, figure, hide_unused, narrow, new_figure, panels
from initmem.plot.curves import memory_var
from initmem.plot.load import Analysis, num

# The three components, in the order the figure and the report's table list them: (record field, label).
COMPONENTS = (("sd_init", "SD_init (draw)"), ("sd_data", "SD_data (data order)"), ("sd_resid", "SD_resid"))


def crossed_block(a: Analysis) -> Any:
    """summary.json's ``crossed`` block, or :class:`Skip` when the cube was not a crossed design."""
    block = getattr(a.summary, "crossed", None)
    if block is None or not block.pipelines:
        raise Skip("the cube has no crossed seed design (seeds: {init: [...], data: [...]})")
    return block


def _bounds(b: Any, scale: float) -> tuple[float, float, float]:
    """(estimate, lower, upper) of a bounds record, times ``scale``; NaN where absent."""
    if b is None:
        return math.nan, math.nan, math.nan
    return num(b.estimate) * scale, num(b.lower) * scale, num(b.upper) * scale


@figure("crossed-components")
def crossed_components(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The variance components of a crossed design per pipeline: SD_init, SD_data and SD_resid at each sigma_w
    level and pooled, with their 90% intervals, against the draw verdict's margin.

    Parameters
    ----------
    a : Analysis or path
        An analysis folder or one loaded by :func:`load_analysis`.
    width : float, optional
        Width in inches (``WIDTHS``); None: the report's size.
    ax : matplotlib.axes.Axes, optional
        Not accepted: the figure has one panel per pipeline.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    Skip
        The analysed cube was not a crossed design.
    """
    del ax  # several panels: the figure wrapper refuses a given ax
    block = crossed_block(a)
    scale, unit = a.scale, a.unit
    pipes = [p for p in a.pipelines if p in block.pipelines] + [p for p in block.pipelines if p not in a.pipelines]
    nrows, ncols, w, h = panels(len(pipes), 3.0, 2.5, width, extra_h=0.35)
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    margin = block.margin * scale if block.margin is not None else None
    alts = []
    for axp, p in zip(axes.ravel(), pipes, strict=False):
        entry = block.pipelines[p]
        levels = sorted(entry.by_sigma_w, key=lambda lv: lv.sigma_w)
        labels = [f"{lv.sigma_w:.3g}" for lv in levels] + ["pooled"]
        xs = np.arange(len(labels), dtype=float)
        if levels:
            xs[-1] += 0.5                                   # the pooled column stands apart
        for k, (field, label) in enumerate(COMPONENTS):
            off = (k - 1) * 0.22
            rows = [_bounds(getattr(lv, field), scale) for lv in levels] + [_bounds(getattr(entry, field), scale)]
            est, lo, hi = (np.array(v, dtype=float) for v in zip(*rows, strict=True))
            ok = np.isfinite(est)
            err = np.vstack([np.where(np.isfinite(lo), est - lo, 0.0), np.where(np.isfinite(hi), hi - est, 0.0)])
            axp.errorbar(xs[ok] + off, est[ok], yerr=err[:, ok], fmt="o", ms=3.2, lw=1.0, capsize=2,
                         color=colour(k), label=label)
        if margin is not None:
            axp.axhline(margin, color="#6E6E6E", lw=0.8, ls="--", zorder=0)
        axp.set_xticks(xs, labels)
        axp.set_xlabel("σ_w level")
        axp.set_ylim(bottom=0)
        axp.set_title(f"{p}\n{entry.draw_verdict or 'no draw verdict'}", color="#111111", loc="left")
        e = _bounds(entry.sd_init, scale)
        alts.append(f"{p}: SD_init {e[0]:.2f} [{e[1]:.2f}, {e[2]:.2f}] {unit}, {entry.draw_verdict}")
    for row in axes:
        row[0].set_ylabel(f"SD ({unit})")
    hide_unused(axes, len(pipes))
    handles, labels = axes.ravel()[0].get_legend_handles_labels()
    ncol = 1 if narrow(width) else 3
    fig.legend(handles, labels, loc="lower center", ncol=ncol, bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0.0, 0.05 * (len(COMPONENTS) if ncol == 1 else 1) / nrows + 0.03, 1.0, 1.0))
    caption = (f"Variance components of the crossed seed design ({block.n_init} init x {block.n_data} data seeds) "
               f"per pipeline, in {unit}: the SD of the initial draw's effect (SD_init), of the data order's "
               "(SD_data) and of the rest (SD_resid: their interaction and evaluation noise), at each σ_w level and "
               "pooled over the levels (the draw verdict's estimate), with 90% confidence intervals."
               + (f" The dashed line is the draw verdict's margin ({margin:g} {unit}): a pipeline keeps its draw when "
                  "SD_init's lower bound clears it, forgets its draw when the upper bound stays under it."
                  if margin is not None else " No margin was set, so there is no draw verdict."))
    alt = "Dot plot of the variance components per σ_w level and pipeline: " + "; ".join(alts) + "."
    return fig, caption, alt


@figure("init-share-curve")
def init_share_curve(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The init share at each evaluated epoch per pipeline, beside the scale's memory curve when the analysis has
    one (descriptive: no test runs on either curve).

    Parameters
    ----------
    a : Analysis or path
        An analysis folder or one loaded by :func:`load_analysis`.
    width : float, optional
        Width in inches (``WIDTHS``); None: the report's size.
    ax : matplotlib.axes.Axes, optional
        Not accepted: the figure draws two panels.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    Skip
        The cube was not a crossed design, or the analysis recorded no init share over training (no curves).
    """
    del ax  # two panels: the figure wrapper refuses a given ax
    block = crossed_block(a)
    pipes = [p for p in block.pipelines if block.pipelines[p].init_share_curve is not None
             and block.pipelines[p].init_share_curve.epoch]
    if not pipes:
        raise Skip("the analysis recorded no init share over training (the cube holds no evaluated curves)")
    var, mem_label = memory_var(a)
    has_memory = a.curves is not None and var in a.curves
    n = 2 if has_memory else 1
    w, h = (7.0 if has_memory else 4.0), 3.2
    if width is not None:
        w, h = width, max(2.0, h * width / w)
    fig, axes = new_figure(w, h, 1, n)
    left = axes[0, 0]
    order = {p: i for i, p in enumerate(dict.fromkeys([*a.pipelines, *block.pipelines]))}  # colours as elsewhere
    finals = []
    for p in pipes:
        c = block.pipelines[p].init_share_curve
        x = np.asarray(c.epoch, dtype=float)
        y = np.array([num(v) for v in c.init_share], dtype=float)
        ok = np.isfinite(x) & np.isfinite(y)
        left.plot(x[ok], y[ok], "-o", ms=2.6, color=colour(order.get(p, 0)), label=p)
        if ok.any():
            finals.append(f"{p} ends at {y[ok][-1]:.2f}")
    left.set_ylim(0, 1)
    left.set_xlabel("epoch")
    left.set_ylabel("init share")
    left.set_title("memory of the draw", color="#111111", loc="left")
    if has_memory:
        right = axes[0, 1]
        have = [str(p) for p in a.curves[C.PIPELINE].values.tolist()]
        for p in pipes:
            if p not in have:
                continue
            r = a.curves[var].sel({C.PIPELINE: p})
            ep, yv = r[C.EPOCH].values.astype(float), r.values.astype(float)
            ok = np.isfinite(yv)
            right.plot(ep[ok], yv[ok], color=colour(order.get(p, 0)))
        right.set_xlabel("epoch")
        right.set_ylabel(mem_label)
        right.set_title("memory of σ_w", color="#111111", loc="left")
    ncol = 1 if narrow(width) else min(3, len(pipes))
    fig.legend(*left.get_legend_handles_labels(), loc="lower center", ncol=ncol, bbox_to_anchor=(0.5, 0.0))
    rows = math.ceil(len(pipes) / ncol)
    fig.tight_layout(rect=(0.0, min(0.45, 0.07 * rows + 0.03), 1.0, 1.0))
    caption = ("The init share over training: at each evaluated epoch, the share of the run-to-run variance of the "
               "metric that the initial draw explains (SD_init² over SD_init² + SD_data² + SD_resid², within σ_w "
               "levels), per pipeline. Descriptive: the draw verdict reads the final metric only."
               + (f" Beside it, the scale's {mem_label} of the same pipelines: the memory of σ_w, where the init "
                  "share is the memory of the draw at a given σ_w." if has_memory else ""))
    alt = "Line plot of the init share against epoch per pipeline: " + "; ".join(finals) + "."
    return fig, caption, alt


__all__ = ["COMPONENTS", "crossed_block", "crossed_components", "init_share_curve"]

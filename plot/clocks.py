"""The forgetting-time view as figures: times against the dose, curves side by side.

Reads only ``collapse.json`` (schema initmem.collapse/3), ``curves.nc`` and the cube's pipeline
settings; it never trains or samples (docs/reading-the-clocks.md). The sentence that says the same
in words is the report's (reports/text.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from initmem import cube as C
from initmem import optimizers
from initmem.plot.core import (
    Drawn,
    Skip,
    colour,
    figure,
    hide_unused,
    new_figure,
    panels,
    plain_log,
    title_with,
)
from initmem.plot.curves import AXIS_LABELS, curve_pipelines, memory_var
from initmem.plot.load import Analysis, q

LR, WEIGHT_DECAY, OPTIMIZER = C.PIPELINE_COORDS[1], C.PIPELINE_COORDS[4], C.PIPELINE_COORDS[0]


def _dose(a: Analysis) -> tuple[dict[str, float], str]:
    """Per pipeline the dose on the x axis: eta * lambda where every pipeline shown has coupled L2, else eta.

    From collapse.json's ``design`` (every pipeline of the cube), else the report's cube (only the
    pipelines the memory model kept)."""
    design = (a.collapse.model_extra or {}).get("design") if a.collapse is not None else None
    if design:
        lr = {p: float(v["lr"]) for p, v in design.items() if v.get("lr") is not None}
        lam = {p: float(v["lambda"] or 0.0) for p, v in design.items()}
        if sum(v > 0 for v in lam.values()) >= 3:
            return {p: lr[p] * lam[p] for p in lr if lam.get(p, 0) > 0}, "η λ (log)"
        return lr, "η (log)"
    if a.cube is None or LR not in a.cube.coords:
        raise Skip("the cube with the pipelines' learning rates is not available")
    names = [str(p) for p in a.cube[C.PIPELINE].values.tolist()]
    lr = a.cube[LR].values.astype(float)
    wd = a.cube[WEIGHT_DECAY].values.astype(float) if WEIGHT_DECAY in a.cube.coords else np.zeros(len(names))
    opt = a.cube[OPTIMIZER].values if OPTIMIZER in a.cube.coords else np.array(["sgd"] * len(names))
    lam = optimizers.coupled_l2_of(opt, wd)  # the table says whether decay is coupled L2
    if (lam > 0).sum() >= 3:
        return {n: float(lr[i] * lam[i]) for i, n in enumerate(names) if lam[i] > 0}, "η λ (log)"
    return {n: float(lr[i]) for i, n in enumerate(names)}, "η (log)"


def exponent_text(ex: dict) -> str:
    parts = [f"{c} {v['median']:+.2f} [{v['q05']:+.2f}, {v['q95']:+.2f}]" for c, v in ex.get("exponents", {}).items()]
    return "; ".join(parts)


@figure("forgetting-dose")
def forgetting_dose(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Forgetting time against the dose (eta * lambda), one panel per axis: epochs, steps, the best clock, T_l2.

    Parameters
    ----------
    a : Analysis or path
        An analysis folder or one loaded by :func:`load_analysis`.
    width : float, optional
        Width in inches (``WIDTHS``); None: the report's size.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes (one-panel figures only).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    Skip
        The figure does not apply to this analysis; the message says why.
    """
    c = a.collapse
    if c is None or not c.forgetting_times:
        raise Skip("collapse.json holds no forgetting times")
    dose, xlabel = _dose(a)
    dose = {p: v for p, v in dose.items() if np.isfinite(v) and v > 0}
    if len(dose) < 2:
        raise Skip("fewer than two pipelines have a known learning rate (the dose axis)")
    names = [n for n in (C.EPOCH, C.STEP, c.best, C.T_L2) if n and n in c.forgetting_times]
    names = list(dict.fromkeys(names))
    ex = c.exponents or {}
    nrows, ncols, w, h = panels(len(names), 3.0, 3.0, width, max_cols=len(names))
    fig, axes = new_figure(w, h, nrows, ncols)
    hide_unused(axes, len(names))
    for ax, name in zip(axes.ravel(), names, strict=False):
        ft = c.forgetting_times[name]
        xs, ys = [], []
        for i, (p, t) in enumerate(ft.per_pipeline.items()):
            if p not in dose:
                continue
            est = t.model_extra.get("estimate") if t.model_extra else None
            val = q(t) if est is None else float(est) if est is not None else math.nan
            budget = (t.model_extra or {}).get("budget")
            if t.censored and budget:
                ax.plot([dose[p]], [budget], "^", ms=6, mfc="white", mec=colour(i))
            elif np.isfinite(val) and val > 0:
                ax.plot([dose[p]], [val], "o", ms=5, color=colour(i))
                xs.append(math.log(dose[p]))
                ys.append(math.log(val))
        if len(xs) >= 3 and np.ptp(xs) > 0:
            slope, icpt = np.polyfit(xs, ys, 1)
            xx = np.linspace(min(xs), max(xs), 2)
            ax.plot(np.exp(xx), np.exp(icpt + slope * xx), color="#555555", lw=0.9, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        xs_all = np.array(sorted(set(dose.values())))
        plain_log(ax, "x", ticks=xs_all)
        ax.set_xlim(xs_all.min() / 1.4, xs_all.max() * 1.4)
        if ys:  # a few round ticks over the range: the times often span less than a decade
            lo, hi = math.exp(min(ys)), math.exp(max(ys))
            ticks = np.unique([float(f"{v:.2g}") for v in np.geomspace(lo, hi, 4)])
            plain_log(ax, "y", ticks=ticks)
            ax.set_ylim(lo / 1.3, hi * 1.6)
        spread = q(ft, "spread")
        ax.set_title(title_with(name, f"spread {spread:.2f}" if np.isfinite(spread) else "", width), loc="left",
                     fontweight="bold" if name == c.best else "normal")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"forgetting time ({name}, log)")
    fig.tight_layout()
    caption = ("Forgetting time of each pipeline against its dose of regularization (log-log; dot: full-data "
               "estimate, open triangle: censored at its budget; dashed: least-squares line through the "
               "uncensored pipelines). On a clock that governs forgetting the times do not depend on the dose "
               "(a flat row, small spread); in epochs or steps they fall with it.")
    if "exponents" in ex:
        caption += (f" Fitted exponents of the steps to forget (Bayesian model, censored seeds kept, 90% "
                    f"intervals): {exponent_text(ex)}.")
    alt = f"{len(names)} log-log panels of forgetting time against dose for the axes {', '.join(names)}."
    return fig, caption, alt


@figure("clocks-side-by-side")
def curves_side_by_side(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The memory curves against epochs and against the best clock, side by side.

    Parameters
    ----------
    a : Analysis or path
        An analysis folder or one loaded by :func:`load_analysis`.
    width : float, optional
        Width in inches (``WIDTHS``); None: the report's size.
    ax : matplotlib.axes.Axes, optional
        Draw into this axes (one-panel figures only).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    Skip
        The figure does not apply to this analysis; the message says why.
    """
    c = a.collapse
    if c is None or a.curves is None:
        raise Skip("collapse.json or curves.nc is absent")
    best = c.best
    if not best or best == C.EPOCH or best not in a.curves:
        raise Skip("no clock beat epochs, or the best clock has no curve in curves.nc")
    var, label = memory_var(a)
    if var not in a.curves:
        raise Skip(f"curves.nc holds no '{var}' memory curve")
    pipes = curve_pipelines(a)
    nrows, ncols, w, h = panels(2, 4.0, 3.0, width, max_cols=2)
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    for j, name in enumerate((C.EPOCH, best)):
        ax = axes.ravel()[j]
        for i, p in enumerate(pipes):
            yv = a.curves[var].sel({C.PIPELINE: p}).values
            xv = (a.curves[C.EPOCH].values.astype(float) if name == C.EPOCH
                  else a.curves[name].sel({C.PIPELINE: p}).values.astype(float))
            ok = np.isfinite(yv) & np.isfinite(xv) & (xv > 0)
            ax.plot(xv[ok], yv[ok], color=colour(i), lw=1.0)
        ax.set_xscale("log")
        plain_log(ax, "x")
        d = c.vs_epoch.get(name)
        ttl = title_with(name, "" if d is None else f"D = {q(d, 'D'):.2f}, adj. p = {q(d, 'p_adjusted'):.3g}", width)
        ax.set_title(ttl, loc="left")
        ax.set_xlabel(AXIS_LABELS.get(name, name) + " (log)")
    for ax in axes[:, 0]:
        ax.set_ylabel(label)
    fig.tight_layout()
    first, second = ("left", "right") if ncols == 2 else ("top", "bottom")
    caption = (f"The same {label} curves against epochs ({first}) and against {best}, the clock that beat epochs "
               f"best ({second}). On the clock that governs forgetting the pipelines' curves fall onto one master "
               "curve.")
    alt = f"Two panels: {label} of {len(pipes)} pipelines against epochs and against {best}."
    return fig, caption, alt


__all__ = ["curves_side_by_side", "exponent_text", "forgetting_dose"]

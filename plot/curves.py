"""Figures over training time: training curves, radial memory, clocks and forgetting times.

Beside :mod:`initmem.plot.model` (figures of the fitted model): these draw the cube's curves,
``curves.nc`` and ``collapse.json``. Each public function takes an analysis folder or a loaded
:class:`~initmem.plot.load.Analysis` and returns a matplotlib ``Figure`` carrying its caption, or
raises :class:`~initmem.plot.core.Skip` with the reason it does not apply.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr
from matplotlib import colormaps

from initmem import clocks
from initmem import cube as C
from initmem import results as R
from initmem.plot.core import (
    Drawn,
    Skip,
    colour,
    figure,
    finish,
    hide_unused,
    narrow,
    new_figure,
    panels,
    plain_log,
    sigma_colorbar,
    sigma_norm,
    single_axes,
    size,
    title_with,
)
from initmem.plot.load import Analysis, finite, ok_mask, q
from initmem.plot.theme import SIGMA_CMAP

AXES_ORDER = (C.EPOCH, C.STEP, *C.ALL_CLOCKS)
AXIS_LABELS = {C.EPOCH: "epoch", C.STEP: "optimizer step k", **clocks.labels()}  # initmem/clocks.py


# training curves and interpolation vs. repair --------------------------------------------

def _seed_mean(a: Analysis, var: str, pipe: str, *, log: bool = False) -> xr.DataArray:
    da = a.cube[var].sel({C.PIPELINE: pipe}).where(ok_mask(a.cube).sel({C.PIPELINE: pipe}))
    if log:
        return np.exp(np.log(da).mean(C.SEED, skipna=True))
    return da.mean(C.SEED, skipna=True)


@figure("training-curves")
def training_curves(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Seed-mean train and validation accuracy against epoch, one line per sigma_w, one row per pipeline.

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
    if a.cube is None or C.EPOCH not in a.cube.dims:
        raise Skip("the cube has no training curves (train_acc, val_acc per epoch)")
    missing = [v for v in (C.TRAIN_ACC, C.VAL_ACC) if not a.cube_has(v)]
    if missing:
        raise Skip(f"the cube has no {' or '.join(missing)} curve (the figure sets train_acc beside val_acc, "
                   "per epoch)")
    pipes = a.pipelines
    sig = a.cube[C.SIGMA].values
    norm = sigma_norm(sig)
    cmap = colormaps[SIGMA_CMAP]
    thr = a.cube.attrs.get(C.A_INTERP_THRESHOLD)
    fig, axes = new_figure(*size(6.8, 1.75 * len(pipes) + 0.6, width), len(pipes), 2, sharey=True)
    for r, p in enumerate(pipes):
        for c, var in enumerate((C.TRAIN_ACC, C.VAL_ACC)):
            ax = axes[r, c]
            m = _seed_mean(a, var, p)
            ep = m[C.EPOCH].values
            for s in sig:
                yv = m.sel({C.SIGMA: s}).values * 100
                ok = np.isfinite(yv)
                if ok.any():
                    ax.plot(ep[ok], yv[ok], color=cmap(norm(s)), lw=1.1)
            if var == C.TRAIN_ACC and isinstance(thr, int | float):
                ax.axhline(float(thr) * 100, color="#444444", lw=0.7, ls=":")
            if var == C.VAL_ACC and a.cube_has(C.TAU_BEST):
                tb = finite(a.cube[C.TAU_BEST].sel({C.PIPELINE: p}).where(
                    ok_mask(a.cube).sel({C.PIPELINE: p})).values)
                if tb.size:
                    ax.axvline(float(np.median(tb)), color="#444444", lw=0.7, ls="--")
            ax.set_title(f"{p}: {'train' if c == 0 else 'validation'}" + ("" if narrow(width) else " accuracy"),
                         loc="left", fontsize=None if narrow(width) else 8)
            if c == 0:
                ax.set_ylabel("accuracy (%)")
            if r == len(pipes) - 1:
                ax.set_xlabel("epoch")
    fig.tight_layout()
    sigma_colorbar(fig, axes, sig, norm, cmap, shrink=0.6)
    caption = ("Training curves: seed-mean train (left) and validation (right) accuracy against epoch, one line per "
               "σ_w (colour, log scale). The dotted line is the interpolation threshold"
               + (f" ({float(thr) * 100:g}%)" if isinstance(thr, int | float) else "")
               + "; the dashed line is the median selected epoch τ_best.")
    alt = (f"Grid of {len(pipes)} by 2 line plots of train and validation accuracy against epoch for pipelines "
           f"{', '.join(pipes)}, one line per sigma_w from {sig.min():g} to {sig.max():g}.")
    return fig, caption, alt


@figure("tau", one_panel=True)
def tau_scatter(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Interpolation versus repair: per run, tau_interp against tau_best.

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
    if not a.cube_has(C.TAU_INTERP, C.TAU_BEST):
        raise Skip("the cube has no tau_interp and tau_best run variables")
    pipes = a.pipelines
    mask = ok_mask(a.cube)
    ti_all = a.cube[C.TAU_INTERP].where(mask)
    tb_all = a.cube[C.TAU_BEST].where(mask)
    top = float(np.nanmax([np.nanmax(finite(ti_all.values), initial=0), np.nanmax(finite(tb_all.values), initial=0)]))
    never_x = top * 1.12 + 1
    rng = np.random.default_rng(0)
    counts = {}
    own = ax
    fig, ax = single_axes(ax, width, (4.6, 3.9))
    lim = never_x + 1
    ax.plot([0, lim], [0, lim], color="#999999", lw=0.8, ls="--", zorder=1)
    for i, p in enumerate(pipes):
        ti = ti_all.sel({C.PIPELINE: p}).values.ravel()
        tb = tb_all.sel({C.PIPELINE: p}).values.ravel()
        have = np.isfinite(tb)
        reached = have & np.isfinite(ti)
        never = have & ~np.isfinite(ti)
        counts[p] = (int(reached.sum()), int(have.sum()), int((tb[reached] > ti[reached]).sum()))
        jit = rng.uniform(-0.18, 0.18, size=(2, have.size))
        ax.scatter(ti[reached] + jit[0][reached], tb[reached] + jit[1][reached], s=11, color=colour(i),
                   alpha=0.75, lw=0, label=p, zorder=3)
        if never.any():
            ax.scatter(np.full(never.sum(), never_x) + jit[0][never], tb[never] + jit[1][never], s=13,
                       facecolor="none", edgecolor=colour(i), lw=0.9, zorder=3)
    ax.axvline(never_x - 0.06 * never_x, color="#cccccc", lw=0.6)
    ticks = [t for t in ax.get_xticks() if 0 <= t < never_x * 0.9]
    ax.set_xticks([*ticks, never_x], [f"{t:g}" for t in ticks] + ["never"])
    ax.set_xlim(-0.5, lim)
    ax.set_ylim(-0.5, lim)
    ax.set_xlabel("τ_interp: first epoch at the interpolation threshold")
    ax.set_ylabel("τ_best: selected epoch")
    ax.text(0.03, 0.96, "selected after fitting (repair phase)", transform=ax.transAxes, fontsize=7,
            va="top", color="#555555")
    ax.text(0.97, 0.04, "selected before fitting", transform=ax.transAxes, fontsize=7, ha="right",
            color="#555555")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    finish(fig, own)
    caption = ("Interpolation versus repair: per run, the epoch the training accuracy first reached the interpolation "
               "threshold (τ_interp) against the epoch of the selected checkpoint (τ_best), with a small jitter. "
               "Points above the diagonal were selected after the labels were fitted, i.e. training went on past "
               "interpolation; open circles at 'never' are runs that did not interpolate.")
    alt = "Scatter plot of tau_best against tau_interp. " + "; ".join(
        f"{p}: {r} of {n} runs interpolated, {after} selected after interpolating" for p, (r, n, after) in
        counts.items()) + "."
    return fig, caption, alt


# radial memory ------------------------------------------------------------------------------

@figure("kernel-norms")
def kernel_norms(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Kernel norm trajectories per pipeline, one line per sigma_w.

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
    if not a.cube_has(C.KERNEL_NORM) or C.EPOCH not in a.cube.dims:
        raise Skip("the cube has no kernel_norm curves")
    pipes = a.pipelines
    sig = a.cube[C.SIGMA].values
    norm = sigma_norm(sig)
    cmap = colormaps[SIGMA_CMAP]
    nrows, ncols, w, h = panels(len(pipes), 3.0, 2.3, width, extra_h=0.2, extra_w=0.5)
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    for i, (ax, p) in enumerate(zip(axes.ravel(), pipes, strict=False)):
        m = _seed_mean(a, C.KERNEL_NORM, p, log=True)
        ep = m[C.EPOCH].values
        for s in sig:
            yv = m.sel({C.SIGMA: s}).values
            ok = np.isfinite(yv) & (yv > 0)
            if ok.any():
                ax.plot(ep[ok], yv[ok], color=cmap(norm(s)), lw=1.1)
        ax.set_yscale("log")
        plain_log(ax, "y")
        ax.set_title(p, loc="left")
        ax.set_xlabel("epoch")
        if i % ncols == 0:
            ax.set_ylabel("kernel norm ‖W_t‖")
    hide_unused(axes, len(pipes))
    fig.tight_layout()
    sigma_colorbar(fig, axes, sig, norm, cmap, shrink=0.7)
    caption = ("Kernel norm trajectories: the Frobenius norm of the trainable kernels against epoch, geometric mean "
               "over seeds, one line per σ_w (colour). Lines that stay apart keep the initial scale (radial memory); "
               "lines that meet have forgotten it.")
    alt = (f"{len(pipes)} panels of kernel norm against epoch on a log axis, one line per sigma_w, for "
           f"{', '.join(pipes)}.")
    return fig, caption, alt


def memory_var(a: Analysis) -> tuple[str, str]:
    mem = a.collapse.memory if a.collapse is not None else "radial"
    if mem.startswith("radial") or a.curves is None or R.CURVE_FUNC_SPREAD not in a.curves:
        return R.CURVE_RHO, "radial memory ρ(t)"
    return R.CURVE_FUNC_SPREAD, "functional memory (val-acc spread)"


def curve_pipelines(a: Analysis) -> list[str]:
    """Every pipeline of curves.nc, the memory model's first: the collapse test runs on all of them,
    including pipelines the memory model skipped (e.g. constant-rate L2 runs that never interpolate,
    most of the clocks preset), so its figures must show them too."""
    have = [str(p) for p in a.curves[C.PIPELINE].values.tolist()]
    return [p for p in a.pipelines if p in have] + [p for p in have if p not in a.pipelines]


@figure(R.CURVE_RHO, one_panel=True)
def rho_curves(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Radial memory rho(t) per pipeline with its bootstrap band.

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
    if a.curves is None or R.CURVE_RHO not in a.curves:
        raise Skip("curves.nc with rho(t) is absent (the cube has no kernel_norm curves)")
    pipes = [p for p in a.pipelines if p in a.curves[C.PIPELINE].values.tolist()]
    own = ax
    fig, ax = single_axes(ax, width, (6.0, 3.3))
    ax.axhline(1, color="#999999", lw=0.7, ls=":")
    ax.axhline(0, color="#999999", lw=0.7)
    finals = []
    for i, p in enumerate(pipes):
        r = a.curves[R.CURVE_RHO].sel({C.PIPELINE: p})
        ep = r[C.EPOCH].values
        yv = r.values
        ok = np.isfinite(yv)
        if R.CURVE_RHO_Q05 in a.curves and R.CURVE_RHO_Q95 in a.curves:
            lo = a.curves[R.CURVE_RHO_Q05].sel({C.PIPELINE: p}).values
            hi = a.curves[R.CURVE_RHO_Q95].sel({C.PIPELINE: p}).values
            okb = ok & np.isfinite(lo) & np.isfinite(hi)
            ax.fill_between(ep[okb], lo[okb], hi[okb], color=colour(i), alpha=0.15, lw=0)
        ax.plot(ep[ok], yv[ok], color=colour(i), label=p)
        if ok.any():
            finals.append(f"{p} ends at {yv[ok][-1]:.2f}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("ρ(t) = d log‖W_t‖ / d log σ_w")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    finish(fig, own)
    caption = ("Radial memory ρ(t): the slope of the seed-mean log kernel norm on log σ_w at each epoch, with 90% "
               "bootstrap intervals over seeds (resampled jointly across σ_w, since seeds are paired). ρ = 1 at "
               "initialization; ρ = 0 means the final norm no longer depends on the initial scale.")
    alt = "Line plot of rho against epoch per pipeline: " + "; ".join(finals) + "."
    return fig, caption, alt


# forgetting clocks ---------------------------------------------------------------------------

@figure("clocks")
def clock_panels(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The memory curves of every pipeline against epochs and against each clock, one panel per axis.

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
    if a.curves is None:
        raise Skip("curves.nc is absent (the cube has no curves)")
    var, label = memory_var(a)
    if var not in a.curves:
        raise Skip(f"curves.nc holds no '{var}' memory curve")
    pipes = curve_pipelines(a)
    axes_avail = [ax for ax in AXES_ORDER if ax == C.EPOCH or ax in a.curves]
    vs = a.collapse.vs_epoch if a.collapse is not None else {}
    best = a.collapse.best if a.collapse is not None else None
    nrows, ncols, w, h = panels(len(axes_avail), 3.0, 2.35, width, extra_h=0.5)
    omitted: dict[str, list[str]] = {}
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    for k, (ax, name) in enumerate(zip(axes.ravel(), axes_avail, strict=False)):
        for i, p in enumerate(pipes):
            yv = a.curves[var].sel({C.PIPELINE: p}).values
            if name == C.EPOCH:
                xv = a.curves[C.EPOCH].values.astype(float)
                ok = np.isfinite(yv)
            else:
                xv = a.curves[name].sel({C.PIPELINE: p}).values.astype(float)
                ok = np.isfinite(yv) & np.isfinite(xv) & (xv > 0)
            if ok.sum() < 1:
                omitted.setdefault(name, []).append(p)
                continue
            ax.plot(xv[ok], yv[ok], color=colour(i), lw=1.2, label=p if k == 0 else None)
        if name != C.EPOCH:
            ax.set_xscale("log")
            plain_log(ax, "x")
        d = vs.get(name)
        stats = (f"D = {q(d, 'D'):.2f} [{q(d, 'q05'):.2f}, {q(d, 'q95'):.2f}]"
                 if d is not None and np.isfinite(q(d, "D")) else "")
        ax.set_title(title_with(name, stats, width), loc="left", fontweight="bold" if name == best else "normal")
        ax.set_xlabel(AXIS_LABELS.get(name, name) + ("" if name == C.EPOCH else " (log)"))
        if k % ncols == 0:
            ax.set_ylabel(label)
    hide_unused(axes, len(axes_avail))
    fig.tight_layout()
    fig.legend(loc="lower center", ncols=min(len(pipes), 6), bbox_to_anchor=(0.5, -0.02 - 0.03 * (len(pipes) > 6)))
    fig.subplots_adjust(bottom=0.13 + 0.04 * math.ceil(len(pipes) / 6) / nrows)
    caption = (f"Forgetting clocks: the {label} of every pipeline against epochs and against each clock, side by "
               "side. If a clock is the right time axis, the curves of all pipelines fall onto one master curve in "
               "its panel. Panel titles give the collapse gain D over epochs with its 90% interval (bold: the best "
               "axis). Clock axes are logarithmic, so points where a clock is still 0 are left out.")
    if a.collapse is not None and R.T_FIT in a.collapse.axes:
        caption += (" T_fit, whose weights are refitted inside every training fold, has no single axis to draw; "
                    "its scores are in the table below.")
    if omitted:
        caption += " Left out because the clock is 0 throughout: " + "; ".join(
            f"{n}: {', '.join(ps)}" for n, ps in omitted.items()) + "."
    alt = (f"{len(axes_avail)} panels of {label} for {len(pipes)} pipelines, plotted against "
           f"{', '.join(axes_avail)}." + (f" Best axis: {best}." if best else ""))
    return fig, caption, alt




# forgetting times ------------------------------------------------------------------------------

def _ordered_axes(names: list[str]) -> list[str]:
    known = [n for n in AXES_ORDER if n in names]
    return known + [n for n in names if n not in known]


@figure("forgetting-times")
def forgetting_times(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Per axis, every pipeline's forgetting time with its interval: on the right clock they line up.

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
    if a.collapse is None or not a.collapse.forgetting_times:
        raise Skip("collapse.json holds no forgetting times")
    ft = a.collapse.forgetting_times
    axes_names = _ordered_axes(list(ft))
    # every pipeline with a forgetting time (the collapse test's set), the memory model's first
    timed = dict.fromkeys(p for e in ft.values() for p in e.per_pipeline)
    pipes = [*a.pipelines, *(p for p in timed if p not in a.pipelines)]
    nrows, ncols, w, h = panels(len(axes_names), 3.0, 0.28 * len(pipes) + 1.2, width)
    n_censored = 0
    lines: list[str] = []
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    y = np.arange(len(pipes))[::-1]
    for k, (ax, name) in enumerate(zip(axes.ravel(), axes_names, strict=False)):
        per = ft[name].per_pipeline
        known = [v for t in per.values() for v in (t.q05, t.median, t.q95) if v is not None and v > 0]
        right = max(known) if known else 1.0
        for i, (yi, p) in enumerate(zip(y, pipes, strict=True)):
            t = per.get(p)
            if t is None:
                continue
            med, lo, hi = q(t), q(t, "q05"), q(t, "q95")
            if t.censored:
                n_censored += 1
                # Censored: the memory had not fallen far enough by the end; the time is a lower bound.
                x0 = next((v for v in (med, lo) if np.isfinite(v) and v > 0), right)
                ax.plot([x0], [yi], "o", ms=5.5, mfc="white", mec=colour(i), mew=1.2)
                ax.annotate("", xy=(x0 * 1.8, yi), xytext=(x0, yi),
                            arrowprops={"arrowstyle": "->", "color": colour(i), "lw": 1.1})
                continue
            if np.isfinite(lo) and np.isfinite(hi) and lo > 0:
                ax.plot([lo, hi], [yi, yi], color=colour(i), lw=2.0, solid_capstyle="butt")
            if np.isfinite(med) and med > 0:
                ax.plot([med], [yi], "o", ms=5.5, color=colour(i), mec="white", mew=0.8)
        ax.set_xscale("log")
        if known:  # room on the right for the censored arrows
            ax.set_xlim(min(known) / 1.5, right * 2.4)
        plain_log(ax, "x")
        spread = q(ft[name], "spread")
        title = title_with(name, f"spread {spread:.2f}" if np.isfinite(spread) else "", width)
        best = a.collapse.best
        ax.set_title(title, loc="left", fontweight="bold" if name == best else "normal")
        ax.set_xlabel(AXIS_LABELS.get(name, name) + " (log)")
        ax.grid(axis="y", visible=False)
        if k % ncols == 0:
            ax.set_yticks(y, pipes)
        lines.append(f"{name}: spread {spread:.2f}, {ft[name].n_censored} of {ft[name].n_pipelines} censored"
                     if np.isfinite(spread) else f"{name}: {ft[name].n_censored} of {ft[name].n_pipelines} censored")
    hide_unused(axes, len(axes_names))
    fig.tight_layout()
    caption = ("Forgetting times: per time axis, when each pipeline's memory curve has fallen far enough "
               "(dot: median, bar: 90% interval, in that axis's units, log scale). On the clock that governs "
               "forgetting the pipelines' times line up; the panel title gives their spread, the SD across "
               "pipelines of the log forgetting time (censored pipelines kept as right-censored at their budget; "
               "bold: the best axis of the collapse test). An open circle with an arrow is censored: the memory had "
               "not fallen far enough "
               "within the training budget, so the time is only a lower bound.")
    alt = (f"{len(axes_names)} panels of forgetting times for {len(pipes)} pipelines; {n_censored} censored "
           f"entries. " + "; ".join(lines) + ".")
    return fig, caption, alt


__all__ = ["AXES_ORDER", "AXIS_LABELS", "clock_panels", "curve_pipelines", "forgetting_times", "kernel_norms",
           "memory_var", "rho_curves", "tau_scatter", "training_curves"]

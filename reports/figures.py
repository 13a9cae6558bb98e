"""The report's figures, each drawn from an :class:`~initmem.reports.load.Analysis`.

Every function returns a :class:`~initmem.reports.svg.Figure` (inline SVG, caption, alt text)
or raises :class:`Skip` with the reason the figure does not apply (e.g. a cube without curves).
Figures only draw numbers that the analysis or the cube already hold.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap, LogNorm, Normalize
from matplotlib.ticker import FuncFormatter, NullFormatter

from initmem import cube as C
from initmem.reports.load import Analysis, finite, ok_mask
from initmem.reports.svg import PALETTE, SIGMA_CMAP, VERDICT_COLOURS, Figure, figure_to_svg, new_figure, style

AXES_ORDER = ("epoch", "step", "T_eta", "T_sgd", "T_l2", "T_adapt")
AXIS_LABELS = {
    "epoch": "epoch", "step": "optimizer step k", "T_eta": "T_eta = Σ η_k", "T_sgd": "T_sgd = Σ η_k² / b",
    "T_l2": "T_l2 = λ Σ η_k", "T_adapt": "T_adapt = Σ η_k (adaptive)",
}


class Skip(Exception):
    """The figure does not apply to this analysis; the message says why."""


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _grid(n: int, max_cols: int = 3) -> tuple[int, int]:
    ncols = min(max_cols, n)
    return math.ceil(n / ncols), ncols


def _scale(a: Analysis) -> tuple[float, str]:
    """Multiplier and unit for showing the metric (accuracies in percentage points)."""
    return (100.0, "points") if a.is_accuracy else (1.0, "units")


def _sigma_norm(values: np.ndarray):
    vals = np.asarray(values, dtype=float)
    if len(vals) > 1 and vals.min() > 0:
        return LogNorm(vmin=vals.min(), vmax=vals.max())
    return Normalize(vmin=vals.min() - 1e-9, vmax=vals.max() + 1e-9)


def _sigma_colorbar(fig, axes, sig: np.ndarray, norm, cmap, shrink: float) -> None:
    """A discrete colour bar, one block per sigma_w level (vector, not a raster image)."""
    colours = ListedColormap([cmap(norm(s)) for s in sig])
    bounds = BoundaryNorm(np.arange(len(sig) + 1) - 0.5, len(sig))
    cb = fig.colorbar(ScalarMappable(norm=bounds, cmap=colours), ax=axes, label="σ_w", shrink=shrink, pad=0.02,
                      aspect=30, ticks=np.arange(len(sig)))
    cb.ax.set_yticklabels([f"{s:.3g}" for s in sig])
    cb.solids.set_rasterized(False)


def _plain_log(ax, axis: str = "x", ticks: np.ndarray | None = None) -> None:
    """Log-axis tick labels as plain numbers (mathtext is off so user strings stay literal)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is not None:
        target.set_ticks(ticks)
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    target.set_minor_formatter(NullFormatter())


def _metric_label(a: Analysis) -> str:
    name = a.metric.replace("_", " ")
    return f"{name} (%)" if a.is_accuracy else name


def _hide_unused(axes, n: int) -> None:
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)


def _q(d: dict | None, key: str = "median") -> float:
    try:
        return float((d or {}).get(key, np.nan))
    except (TypeError, ValueError):
        return np.nan


# (2) the selected metric against sigma_w -------------------------------------------------

def metric_vs_sigma(a: Analysis) -> Figure:
    scale, unit = _scale(a)
    pipes = a.pipelines
    has_cells = a.cube_has(a.metric)
    has_expected = any(isinstance(a.summary["pipelines"][p].get("expected"), dict) for p in pipes)
    if not has_cells and not has_expected:
        raise Skip(f"neither the cube's '{a.metric}' values nor the posterior expected metric are available")
    nrows, ncols = _grid(len(pipes))
    with style():
        fig, axes = new_figure(3.0 * ncols, 2.35 * nrows + 0.2, nrows, ncols, sharey=True)
        for i, (ax, p) in enumerate(zip(axes.ravel(), pipes, strict=False)):
            info = a.summary["pipelines"][p]
            col = colour(i)
            if has_cells:
                da = a.cube[a.metric].sel({C.PIPELINE: p}).where(ok_mask(a.cube).sel({C.PIPELINE: p}))
                sig = da[C.SIGMA].values
                for s in da[C.SEED].values:
                    y = da.sel({C.SEED: s}).values * scale
                    if np.isfinite(y).any():
                        m = np.isfinite(y)
                        ax.plot(sig[m], y[m], "-o", color="#8a8a8a", lw=0.7, ms=2.6, alpha=0.75, zorder=2)
            exp = info.get("expected")
            if isinstance(exp, dict) and exp.get("sigma_w"):
                xs = np.asarray(exp["sigma_w"], dtype=float)
                ax.fill_between(xs, np.asarray(exp["q05"], float) * scale, np.asarray(exp["q95"], float) * scale,
                                color=col, alpha=0.25, lw=0, zorder=1)
                ax.plot(xs, np.asarray(exp["median"], float) * scale, color=col, lw=2.0, zorder=3)
            ax.set_xscale("log", base=2)
            _plain_log(ax, "x", a.cube[C.SIGMA].values if has_cells else None)
            ax.set_title(p, color="#111111", loc="left")
            sp = info.get("spread", {})
            verdict = str(info.get("verdict", "?"))
            dg = a.digits
            ax.text(0.02, 0.03, f"{verdict}: spread {_q(sp) * scale:.{dg}f} [{_q(sp, 'q05') * scale:.{dg}f}, "
                    f"{_q(sp, 'q95') * scale:.{dg}f}]", transform=ax.transAxes, fontsize=7,
                    color=VERDICT_COLOURS.get(verdict, "#333333"))
            ax.set_xlabel("σ_w (log scale)")
            if i % ncols == 0:
                ax.set_ylabel(_metric_label(a))
        _hide_unused(axes, len(pipes))
        fig.tight_layout()
    parts = []
    for p in pipes:
        sp = a.summary["pipelines"][p].get("spread", {})
        parts.append(f"{p}: {a.summary['pipelines'][p].get('verdict', '?')}, spread {_q(sp) * scale:.{a.digits}f} {unit}")
    caption = (f"{_metric_label(a).capitalize()} against σ_w, one panel per pipeline. Grey dots are single runs, "
               "joined by seed (one seed shares its initial direction, data order and augmentation across σ_w). "
               "The coloured line and band are the posterior median and 90% interval of the expected metric "
               f"with seed noise averaged out. The text gives the verdict and the spread over the grid in {unit} "
               "with its 90% interval.")
    if not has_cells:
        caption += f" The cube's per-run '{a.metric}' values were not available, so only the posterior is drawn."
    alt = f"{len(pipes)} panels of {a.metric} against sigma_w on a log axis. " + "; ".join(parts) + "."
    return figure_to_svg(fig, "metric-vs-sigma", caption, alt)


# (3) variance decomposition and spreads ----------------------------------------------------

def variance_shares(a: Analysis) -> Figure:
    pipes = a.pipelines
    comps = (("sigma", "σ_w level", "#D55E00"), ("seed", "seed", "#0072B2"), ("residual", "residual", "#9a9a9a"))
    if not any(isinstance(a.summary["pipelines"][p].get("shares"), dict) for p in pipes):
        raise Skip("summary.json holds no variance shares")
    with style():
        fig, axes = new_figure(6.4, 0.55 * len(pipes) + 1.1)
        ax = axes[0, 0]
        y = np.arange(len(pipes))[::-1]
        h = 0.26
        for j, (key, label, col) in enumerate(comps):
            med, lo, hi = [], [], []
            for p in pipes:
                d = (a.summary["pipelines"][p].get("shares") or {}).get(key)
                med.append(_q(d))
                lo.append(_q(d, "q05"))
                hi.append(_q(d, "q95"))
            med, lo, hi = map(np.asarray, (med, lo, hi))
            yy = y + (1 - j) * h
            ax.barh(yy, med, height=h * 0.92, color=col, label=label, alpha=0.9)
            ax.errorbar(med, yy, xerr=[np.clip(med - lo, 0, None), np.clip(hi - med, 0, None)], fmt="none",
                        ecolor="#222222", elinewidth=0.8, capsize=1.8)
        ax.set_yticks(y, pipes)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of variance (posterior median, 90% interval)")
        ax.legend(loc="lower right", ncols=3, bbox_to_anchor=(1.0, 1.0))
        ax.grid(axis="y", visible=False)
        fig.tight_layout()
    desc = "; ".join(
        f"{p}: σ_w {(_q((a.summary['pipelines'][p].get('shares') or {}).get('sigma'))):.2f}" for p in pipes)
    caption = ("Variance decomposition per pipeline: the shares of the σ_w-level effects (initialization memory), "
               "the seed effects shared across σ_w, and the residual, on the model's scale. Bars are posterior "
               "medians, whiskers 90% intervals; the medians of the three shares need not add up to one.")
    alt = f"Horizontal grouped bar chart of variance shares for {len(pipes)} pipelines. Memory share medians: {desc}."
    return figure_to_svg(fig, "variance-shares", caption, alt)


def spread_forest(a: Analysis) -> Figure:
    scale, unit = _scale(a)
    pipes = a.pipelines
    with style():
        fig, axes = new_figure(6.4, 0.42 * len(pipes) + 1.0)
        ax = axes[0, 0]
        y = np.arange(len(pipes))[::-1]
        delta = a.delta * scale
        ax.axvspan(0, delta, color="#009E73", alpha=0.12, lw=0, label=f"spread < δ = {delta:g} {unit}")
        ax.axvline(delta, color="#009E73", lw=0.9, ls="--")
        for yi, p in zip(y, pipes, strict=True):
            info = a.summary["pipelines"][p]
            sp = info.get("spread", {})
            col = VERDICT_COLOURS.get(str(info.get("verdict")), "#333333")
            ax.plot([_q(sp, "q05") * scale, _q(sp, "q95") * scale], [yi, yi], color=col, lw=2.2,
                     solid_capstyle="butt")
            ax.plot([_q(sp) * scale], [yi], "o", color=col, ms=5.5, mec="white", mew=0.8)
        for v, c in VERDICT_COLOURS.items():
            ax.plot([], [], "o-", color=c, label=v)
        ax.set_yticks(y, pipes)
        ax.set_xlim(left=0)
        ax.set_xlabel(f"spread of the expected metric over σ_w ({unit}); dot = median, bar = 90% interval")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="lower right", ncols=4, bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
    caption = (f"Forest plot of the spread (max minus min over the σ_w grid of the expected metric) per pipeline, "
               f"in {unit}. The green band marks spreads below δ = {delta:g} {unit}. A pipeline 'remembers' when "
               f"P(spread > δ) ≥ 0.95, 'forgets' when P(spread < δ) ≥ 0.95, and is 'inconclusive' otherwise: "
               "absence of evidence is not forgetting.")
    dg = a.digits
    alt = "Forest plot of spreads: " + "; ".join(
        f"{p} median {_q(a.summary['pipelines'][p].get('spread')) * scale:.{dg}f} "
        f"[{_q(a.summary['pipelines'][p].get('spread'), 'q05') * scale:.{dg}f}, "
        f"{_q(a.summary['pipelines'][p].get('spread'), 'q95') * scale:.{dg}f}] {unit}" for p in pipes) + "."
    return figure_to_svg(fig, "spread-forest", caption, alt)


# (4) training curves and interpolation vs. repair --------------------------------------------

def _seed_mean(a: Analysis, var: str, pipe: str, *, log: bool = False) -> xr.DataArray:
    da = a.cube[var].sel({C.PIPELINE: pipe}).where(ok_mask(a.cube).sel({C.PIPELINE: pipe}))
    if log:
        return np.exp(np.log(da).mean(C.SEED, skipna=True))
    return da.mean(C.SEED, skipna=True)


def training_curves(a: Analysis) -> Figure:
    if not a.cube_has("train_acc", "val_acc") or C.EPOCH not in a.cube.dims:
        raise Skip("the cube has no training curves (train_acc, val_acc per epoch)")
    pipes = a.pipelines
    sig = a.cube[C.SIGMA].values
    norm = _sigma_norm(sig)
    cmap = colormaps[SIGMA_CMAP]
    thr = a.cube.attrs.get("interp_threshold")
    with style():
        fig, axes = new_figure(6.8, 1.75 * len(pipes) + 0.6, len(pipes), 2, sharey=True)
        for r, p in enumerate(pipes):
            for c, var in enumerate(("train_acc", "val_acc")):
                ax = axes[r, c]
                m = _seed_mean(a, var, p)
                ep = m[C.EPOCH].values
                for s in sig:
                    yv = m.sel({C.SIGMA: s}).values * 100
                    ok = np.isfinite(yv)
                    if ok.any():
                        ax.plot(ep[ok], yv[ok], color=cmap(norm(s)), lw=1.1)
                if var == "train_acc" and isinstance(thr, int | float):
                    ax.axhline(float(thr) * 100, color="#444444", lw=0.7, ls=":")
                if var == "val_acc" and a.cube_has("tau_best"):
                    tb = finite(a.cube["tau_best"].sel({C.PIPELINE: p}).where(
                        ok_mask(a.cube).sel({C.PIPELINE: p})).values)
                    if tb.size:
                        ax.axvline(float(np.median(tb)), color="#444444", lw=0.7, ls="--")
                ax.set_title(f"{p}: {'train' if c == 0 else 'validation'} accuracy", loc="left", fontsize=8)
                if c == 0:
                    ax.set_ylabel("accuracy (%)")
                if r == len(pipes) - 1:
                    ax.set_xlabel("epoch")
        fig.tight_layout()
        _sigma_colorbar(fig, axes, sig, norm, cmap, shrink=0.6)
    caption = ("Training curves: seed-mean train (left) and validation (right) accuracy against epoch, one line per "
               "σ_w (colour, log scale). The dotted line is the interpolation threshold"
               + (f" ({float(thr) * 100:g}%)" if isinstance(thr, int | float) else "")
               + "; the dashed line is the median selected epoch τ_best.")
    alt = (f"Grid of {len(pipes)} by 2 line plots of train and validation accuracy against epoch for pipelines "
           f"{', '.join(pipes)}, one line per sigma_w from {sig.min():g} to {sig.max():g}.")
    return figure_to_svg(fig, "training-curves", caption, alt)


def tau_scatter(a: Analysis) -> Figure:
    if not a.cube_has("tau_interp", "tau_best"):
        raise Skip("the cube has no tau_interp and tau_best run variables")
    pipes = a.pipelines
    mask = ok_mask(a.cube)
    ti_all = a.cube["tau_interp"].where(mask)
    tb_all = a.cube["tau_best"].where(mask)
    top = float(np.nanmax([np.nanmax(finite(ti_all.values), initial=0), np.nanmax(finite(tb_all.values), initial=0)]))
    never_x = top * 1.12 + 1
    rng = np.random.default_rng(0)
    counts = {}
    with style():
        fig, axes = new_figure(4.6, 3.9)
        ax = axes[0, 0]
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
        fig.tight_layout()
    caption = ("Interpolation versus repair: per run, the epoch the training accuracy first reached the interpolation "
               "threshold (τ_interp) against the epoch of the selected checkpoint (τ_best), with a small jitter. "
               "Points above the diagonal were selected after the labels were fitted, i.e. training went on past "
               "interpolation; open circles at 'never' are runs that did not interpolate.")
    alt = "Scatter plot of tau_best against tau_interp. " + "; ".join(
        f"{p}: {r} of {n} runs interpolated, {after} selected after interpolating" for p, (r, n, after) in
        counts.items()) + "."
    return figure_to_svg(fig, "tau", caption, alt)


# (5) radial memory ------------------------------------------------------------------------------

def kernel_norms(a: Analysis) -> Figure:
    if not a.cube_has("kernel_norm") or C.EPOCH not in a.cube.dims:
        raise Skip("the cube has no kernel_norm curves")
    pipes = a.pipelines
    sig = a.cube[C.SIGMA].values
    norm = _sigma_norm(sig)
    cmap = colormaps[SIGMA_CMAP]
    nrows, ncols = _grid(len(pipes))
    with style():
        fig, axes = new_figure(3.0 * ncols + 0.5, 2.3 * nrows + 0.2, nrows, ncols, sharey=True)
        for i, (ax, p) in enumerate(zip(axes.ravel(), pipes, strict=False)):
            m = _seed_mean(a, "kernel_norm", p, log=True)
            ep = m[C.EPOCH].values
            for s in sig:
                yv = m.sel({C.SIGMA: s}).values
                ok = np.isfinite(yv) & (yv > 0)
                if ok.any():
                    ax.plot(ep[ok], yv[ok], color=cmap(norm(s)), lw=1.1)
            ax.set_yscale("log")
            _plain_log(ax, "y")
            ax.set_title(p, loc="left")
            ax.set_xlabel("epoch")
            if i % ncols == 0:
                ax.set_ylabel("kernel norm ‖W_t‖")
        _hide_unused(axes, len(pipes))
        fig.tight_layout()
        _sigma_colorbar(fig, axes, sig, norm, cmap, shrink=0.7)
    caption = ("Kernel norm trajectories: the Frobenius norm of the trainable kernels against epoch, geometric mean "
               "over seeds, one line per σ_w (colour). Lines that stay apart keep the initial scale (radial memory); "
               "lines that meet have forgotten it.")
    alt = (f"{len(pipes)} panels of kernel norm against epoch on a log axis, one line per sigma_w, for "
           f"{', '.join(pipes)}.")
    return figure_to_svg(fig, "kernel-norms", caption, alt)


def _memory_var(a: Analysis) -> tuple[str, str]:
    mem = (a.collapse or {}).get("memory", "radial")
    if mem == "radial" or a.curves is None or "func_spread" not in a.curves:
        return "rho", "radial memory ρ(t)"
    return "func_spread", "functional memory (val-acc spread)"


def rho_curves(a: Analysis) -> Figure:
    if a.curves is None or "rho" not in a.curves:
        raise Skip("curves.nc with rho(t) is absent (the cube has no kernel_norm curves)")
    pipes = [p for p in a.pipelines if p in a.curves[C.PIPELINE].values.tolist()]
    with style():
        fig, axes = new_figure(6.0, 3.3)
        ax = axes[0, 0]
        ax.axhline(1, color="#999999", lw=0.7, ls=":")
        ax.axhline(0, color="#999999", lw=0.7)
        finals = []
        for i, p in enumerate(pipes):
            r = a.curves["rho"].sel({C.PIPELINE: p})
            ep = r[C.EPOCH].values
            yv = r.values
            ok = np.isfinite(yv)
            if "rho_q05" in a.curves and "rho_q95" in a.curves:
                lo = a.curves["rho_q05"].sel({C.PIPELINE: p}).values
                hi = a.curves["rho_q95"].sel({C.PIPELINE: p}).values
                okb = ok & np.isfinite(lo) & np.isfinite(hi)
                ax.fill_between(ep[okb], lo[okb], hi[okb], color=colour(i), alpha=0.15, lw=0)
            ax.plot(ep[ok], yv[ok], color=colour(i), label=p)
            if ok.any():
                finals.append(f"{p} ends at {yv[ok][-1]:.2f}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("ρ(t) = d log‖W_t‖ / d log σ_w")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
    caption = ("Radial memory ρ(t): the slope of the seed-mean log kernel norm on log σ_w at each epoch, with 90% "
               "bootstrap intervals over seeds (resampled jointly across σ_w, since seeds are paired). ρ = 1 at "
               "initialization; ρ = 0 means the final norm no longer depends on the initial scale.")
    alt = "Line plot of rho against epoch per pipeline: " + "; ".join(finals) + "."
    return figure_to_svg(fig, "rho", caption, alt)


# (6) forgetting clocks ---------------------------------------------------------------------------

def clock_panels(a: Analysis) -> Figure:
    if a.curves is None:
        raise Skip("curves.nc is absent (the cube has no curves)")
    var, label = _memory_var(a)
    if var not in a.curves:
        raise Skip(f"curves.nc holds no '{var}' memory curve")
    pipes = [p for p in a.pipelines if p in a.curves[C.PIPELINE].values.tolist()]
    axes_avail = [ax for ax in AXES_ORDER if ax == "epoch" or ax in a.curves]
    vs = (a.collapse or {}).get("vs_epoch", {}) or {}
    best = (a.collapse or {}).get("best")
    nrows, ncols = _grid(len(axes_avail))
    omitted: dict[str, list[str]] = {}
    with style():
        fig, axes = new_figure(3.0 * ncols, 2.35 * nrows + 0.5, nrows, ncols, sharey=True)
        for k, (ax, name) in enumerate(zip(axes.ravel(), axes_avail, strict=False)):
            for i, p in enumerate(pipes):
                yv = a.curves[var].sel({C.PIPELINE: p}).values
                if name == "epoch":
                    xv = a.curves[C.EPOCH].values.astype(float)
                    ok = np.isfinite(yv)
                else:
                    xv = a.curves[name].sel({C.PIPELINE: p}).values.astype(float)
                    ok = np.isfinite(yv) & np.isfinite(xv) & (xv > 0)
                if ok.sum() < 1:
                    omitted.setdefault(name, []).append(p)
                    continue
                ax.plot(xv[ok], yv[ok], color=colour(i), lw=1.2, label=p if k == 0 else None)
            if name != "epoch":
                ax.set_xscale("log")
                _plain_log(ax, "x")
            title = name
            d = vs.get(name)
            if isinstance(d, dict) and np.isfinite(_q(d, "D")):
                title += f"   D = {_q(d, 'D'):.2f} [{_q(d, 'q05'):.2f}, {_q(d, 'q95'):.2f}]"
            ax.set_title(title, loc="left", fontweight="bold" if name == best else "normal")
            ax.set_xlabel(AXIS_LABELS.get(name, name) + ("" if name == "epoch" else " (log)"))
            if k % ncols == 0:
                ax.set_ylabel(label)
        _hide_unused(axes, len(axes_avail))
        fig.tight_layout()
        fig.legend(loc="lower center", ncols=min(len(pipes), 6), bbox_to_anchor=(0.5, -0.02 - 0.03 * (len(pipes) > 6)))
        fig.subplots_adjust(bottom=0.13 + 0.04 * math.ceil(len(pipes) / 6) / nrows)
    caption = (f"Forgetting clocks: the {label} of every pipeline against epochs and against each clock, side by "
               "side. If a clock is the right time axis, the curves of all pipelines fall onto one master curve in "
               "its panel. Panel titles give the collapse gain D over epochs with its 90% interval (bold: the best "
               "axis). Clock axes are logarithmic, so points where a clock is still 0 are left out.")
    if "T_fit" in ((a.collapse or {}).get("axes") or {}):
        caption += (" T_fit, whose weights are refitted inside every training fold, has no single axis to draw; "
                    "its scores are in the table below.")
    if omitted:
        caption += " Left out because the clock is 0 throughout: " + "; ".join(
            f"{n}: {', '.join(ps)}" for n, ps in omitted.items()) + "."
    alt = (f"{len(axes_avail)} panels of {label} for {len(pipes)} pipelines, plotted against "
           f"{', '.join(axes_avail)}." + (f" Best axis: {best}." if best else ""))
    return figure_to_svg(fig, "clocks", caption, alt)


# (8) posterior predictive checks ---------------------------------------------------------------

def ppc_intervals(a: Analysis) -> Figure:
    pipes = a.pipelines
    stats = (("spread", "spread of the seed-mean metric over σ_w"), ("seed_sd", "SD of the seed means"))
    have = [p for p in pipes if all(isinstance(((a.summary["pipelines"][p].get("ppc") or {}).get(k) or {}).get("q05"),
                                               int | float) for k, _ in stats)]
    if not have:
        raise Skip("summary.json holds no posterior predictive intervals")
    scale = 100.0 if a.is_accuracy else 1.0
    unit = "points" if a.is_accuracy else "units"
    outside: list[str] = []
    with style():
        fig, axes = new_figure(7.0, 0.42 * len(have) + 1.2, 1, 2, sharey=True)
        y = np.arange(len(have))[::-1]
        for ax, (key, label) in zip(axes[0], stats, strict=True):
            for yi, p in zip(y, have, strict=True):
                d = a.summary["pipelines"][p]["ppc"][key]
                pv = _q(d, "p_value")
                bad = np.isfinite(pv) and not 0.025 <= pv <= 0.975
                ax.plot([_q(d, "q05") * scale, _q(d, "q95") * scale], [yi, yi], color="#9a9a9a", lw=3,
                        solid_capstyle="butt")
                ax.plot([_q(d, "observed") * scale], [yi], "D", ms=5, color="#b91c1c" if bad else "#111111")
                if bad:
                    outside.append(f"{p} ({key.replace('_', ' ')})")
            ax.set_xlabel(f"{label} ({unit})")
            ax.grid(axis="y", visible=False)
        axes[0, 0].set_yticks(y, have)
        axes[0, 0].plot([], [], color="#9a9a9a", lw=3, label="replicated data, 90% interval")
        axes[0, 0].plot([], [], "D", color="#111111", label="observed")
        axes[0, 0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        fig.tight_layout()
    caption = ("Posterior predictive checks: for each pipeline the observed spread over σ_w and SD of the seed means "
               "(diamonds) against the 90% interval of the same statistic in data replicated from the posterior "
               "(grey). A red diamond has a predictive p-value outside [0.025, 0.975]: the model does not reproduce "
               "that feature of the data.")
    alt = (f"Two-panel interval plot of posterior predictive checks for {len(have)} pipelines. "
           + (f"Outside the predictive range: {', '.join(outside)}." if outside else
              "Every observed statistic lies within its predictive range."))
    return figure_to_svg(fig, "ppc", caption, alt)

"""Figures of the fitted memory model: the metric against sigma_w, variance shares, spreads, PPCs.

Each public function takes an analysis folder or a loaded :class:`~initmem.plot.load.Analysis`
and returns a matplotlib ``Figure`` carrying its caption (``initmem.plot.description``), or raises
:class:`~initmem.plot.core.Skip` with the reason the figure does not apply. The single-panel ones
also draw on a given ``ax``. Figures only draw numbers that the analysis or the cube already hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.ticker import MaxNLocator

from initmem import cube as C
from initmem.cube.levels import PROBE_LABEL, level_names, probe_caption, probe_is_categorical, probe_of
from initmem.names import verdict_text
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
    single_axes,
    size,
)
from initmem.plot.load import Analysis, failed_checks, ok_mask, q, seed_design, verdict_levels
from initmem.plot.theme import VERDICT_COLOURS


def seed_caption(a: Analysis) -> str:
    """How a figure of single runs draws seeds: joined across sigma_w only when they are paired."""
    design = seed_design(a)
    if design == C.SEED_INDEPENDENT:
        return "not joined: seeds are independent across σ_w (declared on import), so no line links runs."
    if design == C.SEED_PAIRED:
        return ("joined by seed (paired design: one seed shares its initial direction, data order and augmentation "
                "across σ_w).")
    return "joined by seed number (the seed design is unknown without the cube)."


def _probe_axis(ax, a: Analysis, has_cells: bool) -> None:
    """sigma_w on a log axis; a categorical probe's level codes on a linear axis named by level
    (docs/arms.md)."""
    if a.cube is not None and probe_is_categorical(a.cube):
        ax.set_xticks(a.cube[C.SIGMA].values, level_names(a.cube), rotation=30, fontsize=6)
        return
    ax.set_xscale("log", base=2)
    plain_log(ax, "x", a.cube[C.SIGMA].values if has_cells else None)


def _probe_xlabel(a: Analysis) -> str:
    probe = probe_of(a.cube) if a.cube is not None else "scale"
    label = PROBE_LABEL.get(probe, "σ_w")
    return label if probe == "shape" else f"{label} (log scale)"


def metric_label(a: Analysis) -> str:
    name = a.metric.replace("_", " ")
    return f"{name} (%)" if a.is_accuracy else name


# the selected metric against sigma_w -------------------------------------------------

@figure("metric-vs-sigma")
def metric_vs_sigma(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The metric against sigma_w, one panel per pipeline: runs, the posterior expected metric, the verdict.

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
    scale, unit = a.scale, a.unit
    pipes = a.pipelines
    has_cells = a.cube_has(a.metric)
    has_expected = any(a.pipe(p).expected is not None for p in pipes)
    if not has_cells and not has_expected:
        raise Skip(f"neither the cube's '{a.metric}' values nor the posterior expected metric are available")
    nrows, ncols, w, h = panels(len(pipes), 3.0, 2.35, width, extra_h=0.2)
    fig, axes = new_figure(w, h, nrows, ncols, sharey=True)
    for i, (ax, p) in enumerate(zip(axes.ravel(), pipes, strict=False)):
        info = a.pipe(p)
        col = colour(i)
        if has_cells:
            da = a.cube[a.metric].sel({C.PIPELINE: p}).where(ok_mask(a.cube).sel({C.PIPELINE: p}))
            sig = da[C.SIGMA].values
            for s in da[C.SEED].values:
                y = da.sel({C.SEED: s}).values * scale
                if np.isfinite(y).any():
                    m = np.isfinite(y)
                    ax.plot(sig[m], y[m], "o" if seed_design(a) == C.SEED_INDEPENDENT else "-o",
                            color="#8a8a8a", lw=0.7, ms=2.6, alpha=0.75, zorder=2)
        exp = info.expected
        if exp is not None and exp.sigma_w:
            xs = np.asarray(exp.sigma_w, dtype=float)
            ax.fill_between(xs, np.asarray(exp.q05, float) * scale, np.asarray(exp.q95, float) * scale,
                            color=col, alpha=0.25, lw=0, zorder=1)
            ax.plot(xs, np.asarray(exp.median, float) * scale, color=col, lw=2.0, zorder=3)
        _probe_axis(ax, a, has_cells)
        ax.set_title(p, color="#111111", loc="left")
        sp = info.spread
        verdict = verdict_text(info.verdict, info.borderline)
        dg = a.digits
        ax.text(0.02, 0.03, f"{verdict}: spread {q(sp) * scale:.{dg}f} [{q(sp, 'q05') * scale:.{dg}f}, "
                f"{q(sp, 'q95') * scale:.{dg}f}]", transform=ax.transAxes, fontsize=7,
                color=VERDICT_COLOURS.get(verdict, "#333333"))
        ax.set_xlabel(_probe_xlabel(a))
        if i % ncols == 0:
            ax.set_ylabel(metric_label(a))
    hide_unused(axes, len(pipes))
    fig.tight_layout()
    parts = []
    for p in pipes:
        sp = a.pipe(p).spread
        parts.append(f"{p}: {a.pipe(p).verdict}, spread {q(sp) * scale:.{a.digits}f} {unit}")
    caption = (f"{metric_label(a).capitalize()} against σ_w, one panel per pipeline. Grey dots are single runs, "
               + seed_caption(a) + " The coloured line and band are the posterior median and 90% interval of the "
                                   "expected metric "
               f"with seed noise averaged out. The text gives the verdict and the spread over the grid in {unit} "
               "with its 90% interval.")
    if a.cube is not None and C.A_PROBE in a.cube.attrs:
        caption += " " + probe_caption(a.cube)
    if not has_cells:
        caption += f" The cube's per-run '{a.metric}' values were not available, so only the posterior is drawn."
    alt = f"{len(pipes)} panels of {a.metric} against sigma_w on a log axis. " + "; ".join(parts) + "."
    return fig, caption, alt


# variance decomposition and spreads ----------------------------------------------------

@figure("variance-shares", one_panel=True)
def variance_shares(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Shares of variance (sigma_w level, seed, residual) per pipeline, with 90% intervals.

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
    pipes = a.pipelines
    comps = (("sigma", "σ_w level", "#D55E00"), ("seed", "seed", "#0072B2"), ("residual", "residual", "#9a9a9a"))
    if not any(a.pipe(p).shares is not None for p in pipes):
        raise Skip("summary.json holds no variance shares")
    own = ax
    fig, ax = single_axes(ax, width, (6.4, 0.55 * len(pipes) + 1.1), min_h=0.3 * len(pipes) + 1.2)
    y = np.arange(len(pipes))[::-1]
    h = 0.26
    for j, (key, label, col) in enumerate(comps):
        med, lo, hi = [], [], []
        for p in pipes:
            shares = a.pipe(p).shares
            d = getattr(shares, key) if shares is not None else None
            med.append(q(d))
            lo.append(q(d, "q05"))
            hi.append(q(d, "q95"))
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
    finish(fig, own)
    desc = "; ".join(
        f"{p}: σ_w {q(a.pipe(p).shares.sigma if a.pipe(p).shares else None):.2f}" for p in pipes)
    caption = ("Variance decomposition per pipeline: the shares of the σ_w-level effects (initialization memory), "
               "the seed effects shared across σ_w, and the residual (run-to-run noise included). Bars are posterior "
               "medians, whiskers 90% intervals; the medians of the three shares need not add up to one.")
    alt = f"Horizontal grouped bar chart of variance shares for {len(pipes)} pipelines. Memory share medians: {desc}."
    return fig, caption, alt


@figure("spread-forest", one_panel=True)
def spread_forest(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """The spread over sigma_w per pipeline (median, 90% interval) against delta, coloured by verdict.

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
    scale, unit = a.scale, a.unit
    pipes = a.pipelines
    own = ax
    fig, ax = single_axes(ax, width, (6.4, 0.42 * len(pipes) + 1.0), min_h=0.25 * len(pipes) + 1.5)
    y = np.arange(len(pipes))[::-1]
    delta = a.delta * scale
    dunit = "point" if a.is_accuracy and delta == 1 else unit
    ax.axvspan(0, delta, color="#009E73", alpha=0.12, lw=0, label=f"spread < δ = {delta:g} {dunit}")
    ax.axvline(delta, color="#009E73", lw=0.9, ls="--")
    for yi, p in zip(y, pipes, strict=True):
        info = a.pipe(p)
        sp = info.spread
        col = VERDICT_COLOURS.get(verdict_text(info.verdict, info.borderline), "#333333")
        ax.plot([q(sp, "q05") * scale, q(sp, "q95") * scale], [yi, yi], color=col, lw=2.2,
                 solid_capstyle="butt")
        ax.plot([q(sp) * scale], [yi], "o", color=col, ms=5.5, mec="white", mew=0.8)
    for v, c in VERDICT_COLOURS.items():
        ax.plot([], [], "o-", color=c, label=v)
    ax.set_yticks(y, pipes)
    ax.set_xlim(left=0)
    ax.set_xlabel(f"spread over σ_w ({unit})" if narrow(width) else
                  f"spread of the expected metric over σ_w ({unit}); dot = median, bar = 90% interval")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower right", ncols=3 if narrow(width) else 4, bbox_to_anchor=(1.0, 1.0))
    finish(fig, own)
    lv = verdict_levels(a)
    caption = (f"Forest plot of the spread (max minus min over the σ_w grid of the expected metric) per pipeline, "
               f"in {unit}: dot = posterior median, bar = 90% interval (the model's, held to the seeds' own paired t "
               f"interval of the two levels that attain the spread), coloured by verdict. The green band marks "
               f"spreads below δ = {delta:g} {dunit}. A pipeline 'remembers' when "
               f"the seeds' ordered paired test carries it and the model agrees (P(spread > δ) ≥ {lv.remembers:g}), "
               "'forgets' when "
               + (f"P(spread < δ) ≥ {lv.forgets:g} or " if lv.forgets is not None else "")
               + "the seeds' paired differences show every pair of levels within ±δ "
               f"(α = {lv.alpha:g}), and is 'undecided' otherwise: absence of evidence is not forgetting.")
    dg = a.digits
    alt = "Forest plot of spreads: " + "; ".join(
        f"{p} median {q(a.pipe(p).spread) * scale:.{dg}f} "
        f"[{q(a.pipe(p).spread, 'q05') * scale:.{dg}f}, "
        f"{q(a.pipe(p).spread, 'q95') * scale:.{dg}f}] {unit}" for p in pipes) + "."
    return fig, caption, alt


# posterior predictive checks ---------------------------------------------------------------

@figure("ppc")
def ppc_intervals(a: Analysis, *, width: float | None = None, ax: Any = None) -> Drawn:
    """Posterior predictive checks: observed spread and seed SD against their replicated 90% intervals.

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
    pipes = a.pipelines
    independent = seed_design(a) == C.SEED_INDEPENDENT
    means = "seed-number means" if independent else "seed means"
    short = "seed-number-mean SD" if independent else "seed-mean SD"
    stats = ((("spread", "spread over σ_w"), ("seed_sd", short)) if narrow(width) else
             (("spread", "spread of the seed-mean metric over σ_w"), ("seed_sd", f"SD of the {means}")))
    have = [p for p in pipes if all(a.pipe(p).ppc.get(k) is not None and a.pipe(p).ppc[k].q05 is not None
                                    for k, _ in stats)]
    if not have:
        raise Skip("summary.json holds no posterior predictive intervals")
    scale, unit = a.scale, a.unit
    outside: list[str] = []
    fig, axes = new_figure(*size(7.0, 0.42 * len(have) + 1.2, width), 1, 2, sharey=True)
    y = np.arange(len(have))[::-1]
    for ax, (key, label) in zip(axes[0], stats, strict=True):
        for yi, p in zip(y, have, strict=True):
            d = a.pipe(p).ppc[key]
            bad = key in failed_checks(a.pipe(p))
            ax.plot([q(d, "q05") * scale, q(d, "q95") * scale], [yi, yi], color="#9a9a9a", lw=3,
                    solid_capstyle="butt")
            ax.plot([q(d, "observed") * scale], [yi], "D", ms=5, color="#b91c1c" if bad else "#111111")
            if bad:
                outside.append(f"{p} ({key.replace('_', ' ')})")
        ax.set_xlabel(f"{label} ({unit})")
        ax.grid(axis="y", visible=False)
        if narrow(width):
            ax.xaxis.set_major_locator(MaxNLocator(3))
    axes[0, 0].set_yticks(y, have)
    axes[0, 0].plot([], [], color="#9a9a9a", lw=3, label="replicated data, 90% interval")
    axes[0, 0].plot([], [], "D", color="#111111", label="observed")
    axes[0, 0].legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
    fig.tight_layout()
    caption = (f"Posterior predictive checks: for each pipeline the observed spread over σ_w and SD of the {means} "
               + ("(the seeds are independent across σ_w, so a seed number only labels a replicate and this SD checks "
                  "the run-to-run noise) " if independent else "")
               + "(diamonds) against the 90% interval of the same statistic in data replicated from the posterior "
               "(grey). A red diamond is a failed check (a predictive p-value in either tail of 0.05 split over the "
               "pipeline's checks): the model does not reproduce "
               "that feature of the data.")
    alt = (f"Two-panel interval plot of posterior predictive checks for {len(have)} pipelines. "
           + (f"Outside the predictive range: {', '.join(outside)}." if outside else
              "Every observed statistic lies within its predictive range."))
    return fig, caption, alt


__all__ = ["metric_label", "metric_vs_sigma", "ppc_intervals", "seed_caption", "spread_forest", "variance_shares"]

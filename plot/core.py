"""What every figure function shares: the ``@figure`` wrapper, the registry, sizing and axis helpers.

Why a wrapper: each public figure function must accept an analysis folder or a loaded
:class:`~initmem.plot.load.Analysis`, draw under the caller's rcParams with text kept literal, and
hand back a plain matplotlib ``Figure`` that still carries its caption and alt text (the report
prints them under the inline SVG, ``initmem export`` writes them beside the file). Doing that once
here keeps the drawing code of each figure about drawing. :data:`PLOTS` lists every figure
function by name, in definition order; the report's section table names them (reports/sections.py).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import matplotlib
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap, LogNorm, Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from initmem.errors import UserError
from initmem.plot.load import Analysis, as_analysis
from initmem.plot.theme import LITERAL_TEXT, PALETTE

matplotlib.use("Agg")

import matplotlib.pyplot as plt

PANEL_MIN_WIDTH = 1.7  # inches: narrower panels cannot hold their tick labels at paper font sizes
MIN_HEIGHT = 1.3  # inches: a figure scaled down to a column keeps at least this height
MAX_PANEL_HEIGHT = 4.5  # inches: a one-panel figure scaled up to the text width stops growing here


class Skip(Exception):
    """The figure does not apply to this analysis; the message says why."""


@dataclass(frozen=True)
class Description:
    """What a drawn figure says about itself: its file/anchor key, caption and alt text (plain text)."""

    key: str
    caption: str
    alt: str


Drawn = tuple[Figure, str, str]  # (figure, caption, alt) as a drawing function returns them
PLOTS: dict[str, Callable[..., Figure]] = {}


class FigureFunction(Protocol):
    """A public figure function: an analysis (folder or loaded) in, a matplotlib ``Figure`` out."""

    figure_key: str
    __name__: str

    def __call__(self, analysis: Analysis | str | os.PathLike[str], *, width: float | None = None,
                 ax: Any = None) -> Figure: ...


def figure(key: str, *, one_panel: bool = False) -> Callable[[Callable[..., Drawn]], FigureFunction]:
    """Make a drawing function ``draw(a, *, width, ax) -> (fig, caption, alt)`` a public figure
    function ``f(analysis_or_path, *, width=None, ax=None) -> Figure`` and register it in :data:`PLOTS`.

    ``key`` names the figure (the report's anchor ``fig-KEY``, export's file name); ``width`` is the
    figure's width in inches (None: the report's size); ``one_panel`` figures can draw on a given
    ``ax`` (the others lay out several panels and refuse one)."""

    def wrap(draw: Callable[..., Drawn]) -> FigureFunction:
        @functools.wraps(draw)
        def public(analysis: Analysis | str | os.PathLike[str], *, width: float | None = None,
                   ax: Any = None) -> Figure:
            if ax is not None and not one_panel:
                raise UserError(f"{draw.__name__} draws several panels, so it cannot draw on one given ax "
                                "(call it without ax; it returns the figure)")
            if width is not None and not width > 0:
                raise UserError(f"{draw.__name__}: width must be a positive number of inches, not {width!r}")
            a = as_analysis(analysis)
            with matplotlib.rc_context(LITERAL_TEXT):
                fig, caption, alt = draw(a, width=width, ax=ax)
            fig.set_label(key)
            fig.initmem_description = Description(key=key, caption=caption, alt=alt)
            return fig

        typed = cast(FigureFunction, public)
        typed.figure_key = key
        PLOTS[draw.__name__] = typed
        return typed

    return wrap


def is_figure_function(fn: Any) -> bool:
    """Whether ``fn`` is one of the report's figure functions.

    Parameters
    ----------
    fn : object
        Any object.

    Returns
    -------
    bool
        True for the functions of ``initmem.plot`` that draw a report figure.
    """
    return any(fn is f for f in PLOTS.values())


def description(fig: Figure) -> Description:
    """The key, caption and alt text a figure function attached to ``fig``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure returned by a function of ``initmem.plot``.

    Returns
    -------
    Description
        ``key`` (the figure's name in the report and in export's files), ``caption`` and ``alt``.

    Raises
    ------
    ValueError
        ``fig`` was not drawn by an ``initmem.plot`` function.
    """
    d = getattr(fig, "initmem_description", None)
    if d is None:
        raise ValueError("this figure was not drawn by an initmem.plot function (it has no caption)")
    return d


def single_axes(ax: Any, width: float | None, default: tuple[float, float],
                min_h: float = MIN_HEIGHT) -> tuple[Figure, Any]:
    """The figure and axes to draw a one-panel figure on: the caller's ``ax``, else a new figure."""
    if ax is not None:
        return ax.figure, ax
    fig, axes = new_figure(*size(*default, width, min_h, MAX_PANEL_HEIGHT))
    return fig, axes[0, 0]


def finish(fig: Figure, ax: Any) -> None:
    """Lay out a figure this module made (not the caller's, whose layout is the caller's business)."""
    if ax is None:
        fig.tight_layout()


def narrow(width: float | None) -> bool:
    """A paper column rather than the report's page width: titles wrap, labels shorten."""
    return width is not None and width < 5


def title_with(name: str, stats: str, width: float | None) -> str:
    """A panel title with its statistics: on the same line, or on a second one in a narrow figure."""
    if not stats:
        return name
    return f"{name}\n{stats}" if narrow(width) else f"{name}   {stats}"


def size(w: float, h: float, width: float | None, min_h: float = MIN_HEIGHT,
         max_h: float = math.inf) -> tuple[float, float]:
    """The report's (w, h), or the same aspect at ``width`` inches, at least ``min_h`` tall (text
    does not shrink with the figure, so a narrow figure needs relatively more height)."""
    if width is None:
        return w, h
    return width, max(min_h, min(max_h, h * width / w))


def panels(n: int, panel_w: float, panel_h: float, width: float | None, *, max_cols: int = 3,
           extra_h: float = 0.0, extra_w: float = 0.0) -> tuple[int, int, float, float]:
    """(rows, cols, width, height) of a grid of ``n`` panels: the report's up to ``max_cols`` wide, or
    as many panels of at least :data:`PANEL_MIN_WIDTH` as fit in ``width``, each keeping its aspect."""
    if width is None:
        nrows, ncols = grid_shape(n, max_cols)
        return nrows, ncols, panel_w * ncols + extra_w, panel_h * nrows + extra_h
    ncols = max(1, min(n, max_cols, int(width // PANEL_MIN_WIDTH)))
    nrows = math.ceil(n / ncols)
    scale = (width - extra_w) / ncols / panel_w
    return nrows, ncols, width, panel_h * scale * nrows + extra_h


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **kw: Any):
    """A figure and its (rows, cols) array of axes, drawn with the rcParams in force."""
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def grid_shape(n: int, max_cols: int = 3) -> tuple[int, int]:
    ncols = min(max_cols, n)
    return math.ceil(n / ncols), ncols


def sigma_norm(values: np.ndarray):
    vals = np.asarray(values, dtype=float)
    if len(vals) > 1 and vals.min() > 0:
        return LogNorm(vmin=vals.min(), vmax=vals.max())
    return Normalize(vmin=vals.min() - 1e-9, vmax=vals.max() + 1e-9)


def sigma_colorbar(fig, axes, sig: np.ndarray, norm, cmap, shrink: float) -> None:
    """A discrete colour bar, one block per sigma_w level (vector, not a raster image)."""
    colours = ListedColormap([cmap(norm(s)) for s in sig])
    bounds = BoundaryNorm(np.arange(len(sig) + 1) - 0.5, len(sig))
    cb = fig.colorbar(ScalarMappable(norm=bounds, cmap=colours), ax=axes, label="σ_w", shrink=shrink, pad=0.02,
                      aspect=30, ticks=np.arange(len(sig)))
    cb.ax.set_yticklabels([f"{s:.3g}" for s in sig])
    cb.solids.set_rasterized(False)


def plain_log(ax, axis: str = "x", ticks: np.ndarray | None = None) -> None:
    """Log-axis tick labels as plain numbers (mathtext is off so user strings stay literal)."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is not None:
        target.set_ticks(ticks)
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    target.set_minor_formatter(NullFormatter())


def hide_unused(axes, n: int) -> None:
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)


__all__ = ["PLOTS", "Description", "Skip", "colour", "description", "figure", "is_figure_function", "finish",
           "grid_shape", "hide_unused",
           "narrow", "new_figure", "panels", "plain_log", "sigma_colorbar", "sigma_norm", "single_axes", "size",
           "title_with"]

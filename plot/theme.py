"""The figures' looks: colours, the report's screen style and the paper style.

Why two styles and one palette: the HTML report is read on a screen at about 100 dpi with figures
6-9 inches wide, a paper prints them 3.5 or 7.16 inches wide (one or two columns) at 300 dpi, so
font sizes and line widths differ; the colours do not (Okabe-Ito, safe for colour-blind readers,
in both). Every figure function draws under the rcParams in force when it is called, so
``with initmem.plot.style(): fig = initmem.plot.metric_vs_sigma(path)`` draws a paper figure and
the report wraps its calls in :func:`screen_style`. Both keep text literal (no mathtext, no TeX):
a ``$`` in a pipeline name is a character (:data:`LITERAL_TEXT`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")

from initmem import names

# Colour-blind safe (Okabe-Ito), yellow last: it is hard to read on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
# Keyed by how a verdict is shown (names.verdict_text): a borderline undecided verdict has its own colour.
VERDICT_COLOURS = {names.REMEMBERS: "#D55E00", names.FORGETS: "#009E73",
                   names.verdict_text(names.UNDECIDED, borderline=True): "#CC79A7", names.UNDECIDED: "#6E6E6E"}
SIGMA_CMAP = "viridis"  # perceptually uniform and colour-blind safe: sigma_w levels as a sequence

# Paper widths in inches: one column and two columns of a typical two-column layout (IEEE, ACM,
# NeurIPS/ICML single-column text is about 5.5 in; give --width double there).
WIDTHS = {"single": 3.5, "double": 7.16}

# Always in force while a figure is drawn: user strings stay text.
LITERAL_TEXT = {"text.parse_math": False, "text.usetex": False}

_COMMON = {
    **LITERAL_TEXT,
    "svg.fonttype": "none",  # text stays text: small files, searchable, selectable
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e6e6e6",
    "axes.axisbelow": True,
    "legend.frameon": False,
    "savefig.transparent": False,
    "axes.prop_cycle": matplotlib.cycler(color=list(PALETTE)),
}

SCREEN = {
    **_COMMON,
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "grid.linewidth": 0.6,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "lines.linewidth": 1.4,
    "figure.dpi": 100,
}

PAPER = {
    **_COMMON,
    "font.size": 7,
    "axes.titlesize": 7.5,
    "axes.labelsize": 7,
    "legend.fontsize": 6.5,
    "xtick.labelsize": 6.5,
    "ytick.labelsize": 6.5,
    "axes.linewidth": 0.6,
    "grid.linewidth": 0.4,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "lines.linewidth": 1.0,
    "lines.markersize": 3.5,
    "patch.linewidth": 0.5,
    "figure.dpi": 150,
    "savefig.dpi": 300,
    "figure.figsize": (WIDTHS["single"], 2.4),
    "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers (no Type 3 fonts)
    "ps.fonttype": 42,
}


@contextmanager
def style() -> Iterator[None]:
    """The paper style (a context manager): small fonts, thin lines, the colour-blind palette.

    ``initmem export`` draws every figure inside it; in a notebook, ``with initmem.plot.style():``
    around a figure call gives the same look.

    Returns
    -------
    contextlib.AbstractContextManager
        Inside it, matplotlib draws in the paper style.
    """
    with matplotlib.rc_context(PAPER):
        yield


@contextmanager
def screen_style() -> Iterator[None]:
    """The HTML report's style (figures read on a screen).

    Returns
    -------
    contextlib.AbstractContextManager
        Inside it, matplotlib draws in the report's style.
    """
    with matplotlib.rc_context(SCREEN):
        yield


__all__ = ["LITERAL_TEXT", "PALETTE", "PAPER", "SCREEN", "SIGMA_CMAP", "VERDICT_COLOURS", "WIDTHS", "screen_style",
           "style"]

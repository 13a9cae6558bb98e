"""The report's figures: the :mod:`initmem.plot` functions, drawn in the screen style, as inline SVG.

Why a lookup by name: the report must show exactly what the public figure functions return (one
drawing for the report, ``initmem export`` and a notebook), so :func:`report_figure` asks
``initmem.plot`` for the function when it draws, and a test that replaces one sees the report
change. The figure names live in one place, :mod:`initmem.plot`; the report's sections name the ones they show
(reports/sections.py).
"""

from __future__ import annotations

from initmem import plot
from initmem.plot.core import Skip
from initmem.plot.load import Analysis
from initmem.plot.theme import screen_style
from initmem.reports.svg import Figure, embed


def report_figure(name: str, a: Analysis) -> Figure:
    """``initmem.plot.<name>(a)`` drawn in the report's screen style and embedded; raises
    :class:`~initmem.plot.core.Skip` when the figure does not apply."""
    draw = getattr(plot, name)
    with screen_style():
        return embed(draw(a))


__all__ = ["Skip", "report_figure"]

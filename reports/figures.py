"""The report's figures: the :mod:`initmem.plot` functions, drawn in the screen style, as inline SVG.

Why a lookup by name: the report must show exactly what the public figure functions return (one
drawing for the report, ``initmem export`` and a notebook), so :func:`report_figure` asks
``initmem.plot`` for the function when it draws, and a test that replaces one sees the report
change. The names below keep ``reports.figures.metric_vs_sigma(a)`` (a report
:class:`~initmem.reports.svg.Figure`: SVG, caption, alt text) for callers of the old module.
"""

from __future__ import annotations

from collections.abc import Callable

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


def _as_report_figure(name: str) -> Callable[[Analysis], Figure]:
    def draw(a: Analysis) -> Figure:
        return report_figure(name, a)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = f"``initmem.plot.{name}`` as the report shows it (inline SVG with caption and alt text)."
    return draw


metric_vs_sigma = _as_report_figure("metric_vs_sigma")
variance_shares = _as_report_figure("variance_shares")
spread_forest = _as_report_figure("spread_forest")
training_curves = _as_report_figure("training_curves")
tau_scatter = _as_report_figure("tau_scatter")
kernel_norms = _as_report_figure("kernel_norms")
rho_curves = _as_report_figure("rho_curves")
clock_panels = _as_report_figure("clock_panels")
forgetting_times = _as_report_figure("forgetting_times")
forgetting_dose = _as_report_figure("forgetting_dose")
curves_side_by_side = _as_report_figure("curves_side_by_side")
ppc_intervals = _as_report_figure("ppc_intervals")

__all__ = ["Skip", "clock_panels", "curves_side_by_side", "forgetting_dose", "forgetting_times", "kernel_norms",
           "metric_vs_sigma", "ppc_intervals", "report_figure", "rho_curves", "spread_forest", "tau_scatter",
           "training_curves", "variance_shares"]

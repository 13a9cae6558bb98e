"""Every figure of the report as a public function (docs/export.md): ``initmem.plot``.

Each figure function takes an analysis folder (a path) or a loaded analysis
(:func:`load_analysis`) and returns a matplotlib ``Figure``; the one-panel figures also draw on a
given ``ax``. The HTML report embeds what these same functions return (as inline SVG) and
``initmem export`` saves it as PDF, SVG and PNG, so no figure is drawn twice. A figure that does
not apply (e.g. no curves in the cube) raises :class:`Skip` with the reason; :func:`description`
gives a drawn figure's key, caption and alt text. :func:`style` is the paper style (a context
manager)::

    import initmem.plot as ip

    with ip.style():
        fig = ip.metric_vs_sigma("runs/quick/analysis", width=ip.WIDTHS["single"])
    fig.savefig("metric.pdf")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from initmem.lazy import lazy_dir, lazy_getattr

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name is imported on first use
    from initmem.plot.clocks import curves_side_by_side as curves_side_by_side
    from initmem.plot.clocks import forgetting_dose as forgetting_dose
    from initmem.plot.core import Description as Description
    from initmem.plot.core import Skip as Skip
    from initmem.plot.core import description as description
    from initmem.plot.core import is_figure_function as is_figure_function
    from initmem.plot.crossed import crossed_components as crossed_components
    from initmem.plot.crossed import init_share_curve as init_share_curve
    from initmem.plot.curves import clock_panels as clock_panels
    from initmem.plot.curves import forgetting_times as forgetting_times
    from initmem.plot.curves import kernel_norms as kernel_norms
    from initmem.plot.curves import rho_curves as rho_curves
    from initmem.plot.curves import tau_scatter as tau_scatter
    from initmem.plot.curves import training_curves as training_curves
    from initmem.plot.load import Analysis as Analysis
    from initmem.plot.load import load_analysis as load_analysis
    from initmem.plot.model import metric_vs_sigma as metric_vs_sigma
    from initmem.plot.model import ppc_intervals as ppc_intervals
    from initmem.plot.model import spread_forest as spread_forest
    from initmem.plot.model import variance_shares as variance_shares
    from initmem.plot.theme import PALETTE as PALETTE
    from initmem.plot.theme import WIDTHS as WIDTHS
    from initmem.plot.theme import screen_style as screen_style
    from initmem.plot.theme import style as style

_API: dict[str, tuple[str, str]] = {
    # the figure functions, in the report's order (its section table, reports/sections.py, names them)
    "metric_vs_sigma": ("initmem.plot.model", "metric_vs_sigma"),
    "variance_shares": ("initmem.plot.model", "variance_shares"),
    "spread_forest": ("initmem.plot.model", "spread_forest"),
    "crossed_components": ("initmem.plot.crossed", "crossed_components"),
    "init_share_curve": ("initmem.plot.crossed", "init_share_curve"),
    "training_curves": ("initmem.plot.curves", "training_curves"),
    "tau_scatter": ("initmem.plot.curves", "tau_scatter"),
    "kernel_norms": ("initmem.plot.curves", "kernel_norms"),
    "rho_curves": ("initmem.plot.curves", "rho_curves"),
    "clock_panels": ("initmem.plot.curves", "clock_panels"),
    "forgetting_times": ("initmem.plot.curves", "forgetting_times"),
    "forgetting_dose": ("initmem.plot.clocks", "forgetting_dose"),
    "curves_side_by_side": ("initmem.plot.clocks", "curves_side_by_side"),
    "ppc_intervals": ("initmem.plot.model", "ppc_intervals"),
    # loading, style and what a drawn figure says about itself
    "load_analysis": ("initmem.plot.load", "load_analysis"),
    "Analysis": ("initmem.plot.load", "Analysis"),
    "style": ("initmem.plot.theme", "style"),
    "screen_style": ("initmem.plot.theme", "screen_style"),
    "WIDTHS": ("initmem.plot.theme", "WIDTHS"),
    "PALETTE": ("initmem.plot.theme", "PALETTE"),
    "Skip": ("initmem.plot.core", "Skip"),
    "Description": ("initmem.plot.core", "Description"),
    "description": ("initmem.plot.core", "description"),
    "is_figure_function": ("initmem.plot.core", "is_figure_function"),
}

__getattr__ = lazy_getattr(__name__, _API)
__dir__ = lazy_dir(__name__, _API)


__all__ = list(_API)

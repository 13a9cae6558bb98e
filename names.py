"""One owner for every output name that several modules share (no imports: anything may read it).

Each name below is read by two to four modules (the verdicts by models, stats and the report; the R-hat /
ESS goals and ALPHA by the analysis and the report; the grid folder's file names by collect and results; the
curves.nc variables by stats and results), so a name spelled twice could drift apart. They are defined
here once; the modules that write or read them import them, and
tests/test_owners.py fails when one is defined a second time. Cube variable names are owned by
cube/schema.py (clock names by clocks.py), the interpolation threshold's default by grid/schema.py.
"""

from __future__ import annotations

# Verdicts of the memory model (docs/memory-model.md, "Verdict") ---------------------------------
# One word per state, the same in the command line, summary.json, the report and the docs. "forgets" reads
# "memory below delta". A verdict probability within two Monte Carlo errors of its threshold leaves the verdict
# "undecided" with the flag ``borderline`` (shown "undecided (borderline)"): another sampler run could decide it.
REMEMBERS, FORGETS, UNDECIDED = "remembers", "forgets", "undecided"
VERDICTS = (REMEMBERS, FORGETS, UNDECIDED)  # what every decision rule (Bayesian or frequentist) says
BORDERLINE = "borderline"                   # the flag's name: a field of summary.json, never a verdict
# Words an older summary.json wrote for the undecided state; read as UNDECIDED (results/records.py), "borderline"
# also setting the flag.
RETIRED_VERDICTS = {"inconclusive": UNDECIDED, "borderline": UNDECIDED}


def verdict_text(verdict: str, borderline: bool | None = False) -> str:
    """How a verdict is shown to a reader: the word, and "(borderline)" after an undecided one so flagged.

    Examples
    --------
    >>> verdict_text("undecided", borderline=True), verdict_text("remembers")
    ('undecided (borderline)', 'remembers')
    """
    return f"{verdict} ({BORDERLINE})" if borderline and verdict == UNDECIDED else verdict

# Sampler diagnostics: the goals every reported quantity must meet (docs/memory-model.md).
RHAT_MAX, ESS_MIN = 1.01, 400.0

# The analysis folder (docs/analysis-folder.md) ------------------------------------------------
SUMMARY_JSON = "summary.json"
COLLAPSE_JSON = "collapse.json"
CURVES_NC = "curves.nc"
POSTERIOR_NC = "posterior.nc"
REPORT_HTML = "report.html"
RUN_ANALYSIS_DIR = "analysis"  # the analysis folder inside an ``initmem run`` folder

# The grid folder (docs/collect-runs.md; layout in collect/execution/grid_folder.py) ------------------------------
CUBE_NC = "cube.nc"            # the merged cube; ``initmem run`` puts it beside the analysis folder
EVENTS_JSONL = "events.jsonl"  # the event log

# Variables of curves.nc (written by initmem.stats.curves, drawn by the report) -------------------
CURVE_EPOCH_AXIS = "epoch_axis"
CURVE_RHO, CURVE_RHO_Q05, CURVE_RHO_Q95 = "rho", "rho_q05", "rho_q95"
CURVE_FUNC_SPREAD, CURVE_FUNC_SPREAD_Q05, CURVE_FUNC_SPREAD_Q95 = "func_spread", "func_spread_q05", "func_spread_q95"
CURVE_FUNC_SHARE = "func_share"
CURVE_FS_MEMORY, CURVE_FS_MEMORY_Q05, CURVE_FS_MEMORY_Q95 = "fs_memory", "fs_memory_q05", "fs_memory_q95"

ALPHA = 0.05  # the error rate of every test, check and verdict rule (docs/statistics.md)

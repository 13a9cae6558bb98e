"""``initmem plan`` on a crossed analysis: how many init seeds would decide each pipeline's draw verdict?

The draw verdict (stats/crossed.py) compares SD_init's one-sided bounds with a margin; the lower bound has at most
I - 1 degrees of freedom, so the init seeds, not the runs, set its power. From a finished analysis of a crossed
cube, the plan simulates the same design with more init seeds at the pipeline's own estimates of SD_init, SD_data
and SD_resid, and decides each simulated table by the same bounds (:func:`~initmem.stats.crossed.draw_verdict_rates`).

Two things the pilot cannot tell are shown instead of assumed:

* whether an init seed's effect is the same at every sigma_w level (``shared`` 1, the fewest degrees of freedom)
  or drawn anew at each (``shared`` 0): the plan gives both, and its "init seeds needed" is the larger;
* SD_init itself, known only to its interval: the plan is also made at the two ends of SD_init's 90% interval,
  which bracket the design a study should budget for.

The simulated effects are normal. With skewed or heavy-tailed init effects the verdict's degrees of freedom
shrink and the plan overstates its power (studies/crossed_plan_check.py: 73% planned against 44% with Student t
init effects at 8 x 4); the table's last line says so.

Docs: docs/crossed.md, "Planning a crossed design".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from initmem.errors import OptionError, UserError, option
from initmem.results import SUMMARY_JSON, load_summary
from initmem.results.records import FRACTION
from initmem.stats.crossed import draw_verdict_rates

INIT_LADDER = (4, 6, 8, 10, 12, 16, 24, 32)
TARGET = 0.8
SHARED = (1.0, 0.0)   # the worst case for the verdict's power first
AT = ("estimate", "lower", "upper")


def _needed(rates: dict[int, dict[str, float]]) -> int | None:
    """The fewest init seeds of the ladder at which the verdict decides with probability >= TARGET."""
    return next((n for n, r in sorted(rates.items()) if r["keeps"] + r["forgets"] >= TARGET), None)


def plan_draw(analysis_dir: str | os.PathLike, *, n_sim: int = 4000, seed: int = 0,
              ladder: Sequence[int] = INIT_LADDER) -> dict[str, Any]:
    """Init seeds needed for a decided draw verdict with probability >= 0.8, per pipeline of a crossed analysis.

    Parameters
    ----------
    analysis_dir : str or os.PathLike
        A folder written by ``initmem analyze`` from a cube with a crossed seed design.
    n_sim : int, default 4000
        Simulated tables per design and case (at least 100).
    seed : int, default 0
        The random seed of the simulations.
    ladder : sequence of int
        The init seed counts to try (each at least 2), at the analysis's data seeds and sigma_w levels.

    Returns
    -------
    dict
        The margin, the design now and, per pipeline, the components planned for and, at SD_init's estimate and at
        the ends of its 90% interval, P(keeps), P(forgets) per init seed count with the draw shared across levels
        and drawn anew, and the init seeds needed (the larger of the two cases; None beyond the ladder).

    Raises
    ------
    UserError
        Not an analysis folder, an analysis without a crossed block, or one without a draw margin (a metric other
        than an accuracy analysed without ``--draw-margin``).
    OptionError
        ``n_sim`` below 100 or a ladder entry below 2.
    """
    folder = Path(analysis_dir)
    summary = load_summary(folder)
    block = summary.crossed
    if block is None:
        raise UserError(f"{folder / SUMMARY_JSON} is not an analysis of a crossed seed design: the draw plan needs "
                        "init and data seeds (docs/crossed.md)")
    if block.margin is None:
        raise UserError(f"{folder / SUMMARY_JSON} has no draw margin (a metric other than an accuracy): analyze "
                        f"it again with {option('draw_margin')} set")
    if n_sim < 100:
        raise OptionError("n_sim", "{option} must be at least 100 for the draw plan")
    ladder = sorted({int(n) for n in ladder} | {int(block.n_init)})
    if ladder[0] < 2:
        raise OptionError("ladder", "{option}: every init seed count must be at least 2")
    out: dict[str, Any] = {"margin": block.margin, "alpha": block.alpha, "units": block.units, "target": TARGET,
                           "n_sim": n_sim,
                           "n_init_now": block.n_init, "n_data": block.n_data, "ladder": ladder, "pipelines": {}}
    for k, (pipe, entry) in enumerate(block.pipelines.items()):
        sd = {name: getattr(entry, name) for name in ("sd_init", "sd_data", "sd_resid")}
        if any(b.estimate is None for b in sd.values()):
            out["pipelines"][pipe] = {"skipped": "its components were not estimated"}
            continue
        n_levels = len(entry.by_sigma_w) or summary.pipelines[pipe].n_sigma
        result: dict[str, Any] = {"draw_verdict_now": entry.draw_verdict, "n_levels": n_levels,
                                  "components": {name: b.estimate for name, b in sd.items()},
                                  "sd_init_interval": [sd["sd_init"].lower, sd["sd_init"].upper]}
        for at in AT:
            sd_init = getattr(sd["sd_init"], at)
            if sd_init is None:
                continue
            cases = {}
            for shared in SHARED:
                cases[shared] = {n: draw_verdict_rates(
                    float(sd_init), float(sd["sd_data"].estimate), float(sd["sd_resid"].estimate), n_levels=n_levels,
                    n_init=n, n_data=block.n_data, margin=block.margin, alpha=block.alpha, shared=shared,
                    reps=n_sim, seed=seed + 1000 * k + n) for n in ladder}
            needed = [_needed(c) for c in cases.values()]
            result[at] = {"sd_init": float(sd_init),
                          "shared": {str(n): r for n, r in cases[1.0].items()},
                          "anew": {str(n): r for n, r in cases[0.0].items()},
                          "n_init_needed": None if None in needed else max(needed)}
        out["pipelines"][pipe] = result
    return out


def render_draw_plan(result: dict[str, Any]) -> str:
    """A plain-text table of :func:`plan_draw` (one row per pipeline)."""
    top = result["ladder"][-1]
    unit, label = (100.0, " points") if result["units"] == FRACTION else (1.0, "")   # accuracies: in points
    head = (f"init seeds (x {result['n_data']} data seeds) for a decided draw verdict with probability >= "
            f"{result['target']:.0%} (margin {unit * result['margin']:.2g}{label} on SD_init, {result['n_sim']} "
            "simulated tables per design; the larger of: each seed's effect the same at every sigma_w level, or "
            "drawn anew)")
    cols = (f"{'pipeline':<20} {'verdict now':<17} {'SD_init [90%]':<24} {'at estimate':>11} "
            f"{'at lower end':>13} {'at upper end':>13}  P(decided) now, shared / anew")
    lines = [head, cols, "-" * len(cols)]
    now = str(result["n_init_now"])
    for pipe, r in result["pipelines"].items():
        if "skipped" in r:
            lines.append(f"{pipe:<20} skipped: {r['skipped']}")
            continue

        def need(at: str, r: dict[str, Any] = r) -> str:
            if at not in r:
                return "-"
            n = r[at]["n_init_needed"]
            return str(n) if n is not None else f">{top}"

        est, (lo, hi) = r["estimate"], r["sd_init_interval"]
        p_now = " / ".join(f"{sum(est[case][now][v] for v in ('keeps', 'forgets')):.2f}" for case in ("shared", "anew"))
        interval = f"{unit * est['sd_init']:.2f} [{unit * (lo or 0.0):.2f}, {unit * (hi or 0.0):.2f}]"
        lines.append(f"{pipe:<20} {str(r['draw_verdict_now']):<17} {interval:<24} {need('estimate'):>11} "
                     f"{need('lower'):>13} {need('upper'):>13}  {p_now}")
    lines.append("rule: the analysis's own draw verdict (SD_init's one-sided bounds against the margin) on tables "
                 "simulated at each pipeline's estimates of SD_init, SD_data and SD_resid, with normal effects: "
                 "skewed or heavy-tailed init seeds need more than this (docs/crossed.md)")
    return "\n".join(lines)


__all__ = ["INIT_LADDER", "plan_draw", "render_draw_plan"]

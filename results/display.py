"""How the results of an analysis read in a notebook: a short repr, the same table as HTML, and a tidy frame.

``Summary`` (results/records.py) reads as one line per pipeline; the crossed block of a crossed seed design
(:class:`~initmem.results.records.Crossed`) and the seed plan of ``initmem.plan`` (:class:`PlanResult`) read
the same way, from the helpers here: a title line, then one aligned row per pipeline. Accuracies are shown in
points, the way the report shows them; ``to_frame()`` keeps the analysis's own units (fractions for an
accuracy), one row per pipeline and quantity, so that the numbers can be computed with.
"""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from initmem.results.records import Crossed

ACCURACY_UNITS = ("fraction", "points")   # a crossed block's units for an accuracy ("points" in older files)
CROSSED_QUANTITIES = ("sd_init", "sd_data", "sd_resid", "init_share")


def number(value: float | None, *, points: bool) -> str:
    """``value`` for reading: an accuracy's fraction in points to two decimals, else four significant digits;
    a dash for a statistic that could not be computed."""
    if value is None or not math.isfinite(value):
        return "-"
    return format(100 * value, ".2f") if points else format(value, ".4g")


def interval(median: float | None, low: float | None, high: float | None, *, points: bool) -> str:
    """``median [low, high]`` in the units :func:`number` shows."""
    return f"{number(median, points=points)} [{number(low, points=points)}, {number(high, points=points)}]"


def text_table(title: str, rows: list[tuple[str, ...]]) -> str:
    """A title line, then one row per line, each column padded to its widest cell (the last one not)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)] if rows else []
    lines = ["  " + "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
             for row in rows]
    return "\n".join([title, *lines])


def html_table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """The same table as HTML, every cell escaped (Jupyter shows it in place of the repr)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<p>{escape(title)}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# --- the crossed block of a crossed seed design ---------------------------------------------------------------

CROSSED_HEADER = ("pipeline", "draw verdict", "SD_init [90%]", "init share [90%]")


def _crossed_title(crossed: Crossed) -> str:
    points = crossed.units in ACCURACY_UNITS
    unit = " points" if points else ""
    margin = "no margin" if crossed.margin is None else f"margin {number(crossed.margin, points=points)}{unit}"
    return (f"Crossed: {crossed.n_init} init x {crossed.n_data} data seeds, {margin}, alpha {crossed.alpha:g}; "
            f"SD_init median [90%]{unit}")


def crossed_rows(crossed: Crossed) -> list[tuple[str, str, str, str]]:
    """(pipeline, draw verdict, SD_init, init share) per pipeline; SD_init in points for an accuracy, the init
    share (a share of the variance, no unit) to two decimals."""
    points = crossed.units in ACCURACY_UNITS
    rows = []
    for name, p in crossed.pipelines.items():
        sd, share = p.sd_init, p.init_share
        shown_share = "-" if share.estimate is None or not math.isfinite(share.estimate) else (
            f"{share.estimate:.2f} [{number(share.lower, points=False)}, {number(share.upper, points=False)}]")
        rows.append((name, p.draw_verdict or "no verdict (no margin)",
                     interval(sd.estimate, sd.lower, sd.upper, points=points), shown_share))
    return rows


def crossed_text(crossed: Crossed) -> str:
    """The crossed block at a glance: one line per pipeline with its draw verdict and SD_init [90%]."""
    return text_table(_crossed_title(crossed), crossed_rows(crossed))


def crossed_html(crossed: Crossed) -> str:
    """:func:`crossed_text` as an HTML table."""
    return html_table(_crossed_title(crossed), CROSSED_HEADER, crossed_rows(crossed))


def crossed_frame(crossed: Crossed) -> pd.DataFrame:
    """A tidy frame of the crossed block: one row per pipeline, method (the frequentist bounds the verdict reads,
    and the Bayesian crossed model's posterior) and quantity, in the analysis's units."""
    import pandas as pd

    rows = []
    for name, p in crossed.pipelines.items():
        for quantity in CROSSED_QUANTITIES:
            b = getattr(p, quantity)
            rows.append({"pipeline": name, "draw_verdict": p.draw_verdict, "method": "bounds", "quantity": quantity,
                         "estimate": b.estimate, "lower": b.lower, "upper": b.upper})
        if p.bayes is not None:
            for quantity in CROSSED_QUANTITIES:
                b = getattr(p.bayes, quantity)
                rows.append({"pipeline": name, "draw_verdict": p.draw_verdict, "method": "posterior",
                             "quantity": quantity, "estimate": b.median, "lower": b.lower, "upper": b.upper})
    return pd.DataFrame(rows, columns=["pipeline", "draw_verdict", "method", "quantity", "estimate", "lower",
                                       "upper"])


# --- the seed plan of initmem.plan -----------------------------------------------------------------------------

PLAN_HEADER = ("pipeline", "verdict now", "seeds now", "seeds needed", "sequential design")


class PlanResult(dict[str, Any]):
    """What ``initmem.plan`` returns: the plan as a dict (the keys ``initmem plan --json`` prints), read at a glance.

    Its repr is one line per pipeline (the verdict now, the seeds per cell it has, the seeds the posterior says
    a decisive verdict needs with probability ``target``, and what the sequential design would spend);
    ``_repr_html_`` is the same table; :meth:`to_frame` is one row per pipeline, rule and seed count.

    Examples
    --------
    >>> plan = PlanResult({"delta": 0.01, "target": 0.8, "n_sim": 200, "metric": "selected_test_acc",
    ...                    "pipelines": {"sgd": {"n_seed_now": 4, "verdict_now": "undecided",
    ...                                          "posterior": {"seeds_needed": 12, "p_decisive": {4: 0.3, 12: 0.85},
    ...                                                        "p_remembers": {4: 0.3, 12: 0.85},
    ...                                                        "p_forgets": {4: 0.0, 12: 0.0}},
    ...                                          "sequential": {"looks": [4, 8, 12], "p_decided": 0.9,
    ...                                                         "seeds_mean": 7.5}}}}, is_accuracy=True)
    >>> print(plan)
    Plan: selected_test_acc, delta = 1 points, a decisive verdict with probability 0.8 (200 simulated experiments)
      sgd  undecided  4 seeds now  12 seeds needed  looks 4,8,12: decided 0.90, 7.5 seeds on average
    >>> plan["pipelines"]["sgd"]["posterior"]["seeds_needed"]
    12
    """

    def __init__(self, plan: dict[str, Any], *, is_accuracy: bool | None = None) -> None:
        super().__init__(plan)
        self.is_accuracy = bool(is_accuracy)

    def _title(self) -> str:
        delta = self.get("delta")
        shown = "-" if delta is None else (format(100 * delta, "g") + " points" if self.is_accuracy
                                            else format(delta, "g"))
        return (f"Plan: {self.get('metric', 'the metric')}, delta = {shown}, a decisive verdict with probability "
                f"{self.get('target', 0.8):g} ({self.get('n_sim')} simulated experiments)")

    def _rows(self) -> list[tuple[str, str, str, str, str]]:
        rows = []
        for name, p in self.get("pipelines", {}).items():
            needed = (p.get("posterior") or {}).get("seeds_needed")
            seq = p.get("sequential") or {}
            looks = ",".join(str(n) for n in seq.get("looks", []))
            spent = (f"looks {looks}: decided {seq['p_decided']:.2f}, {seq['seeds_mean']:.3g} seeds on average"
                     if seq.get("p_decided") is not None and seq.get("seeds_mean") is not None else "-")
            rows.append((name, str(p.get("verdict_now", "-")), f"{p.get('n_seed_now', '-')} seeds now",
                         f"{needed} seeds needed" if needed is not None else "more seeds than the ladder's",
                         spent))
        return rows

    def __repr__(self) -> str:
        return text_table(self._title(), self._rows())

    __str__ = __repr__

    def _repr_html_(self) -> str:
        rows = [(n, v, now.removesuffix(" seeds now"), need.removesuffix(" seeds needed"), seq)
                for n, v, now, need, seq in self._rows()]
        return html_table(self._title(), PLAN_HEADER, rows)

    def to_frame(self) -> pd.DataFrame:
        """A tidy frame: one row per pipeline, rule (``posterior``: the analysis's own; ``reml``: the
        frequentist components) and seed count, with P(decisive), P(remembers) and P(forgets) there."""
        import pandas as pd

        rows = []
        for name, p in self.get("pipelines", {}).items():
            for rule in ("posterior", "reml"):
                power = p.get(rule)
                if not power:
                    continue
                for n_seed, p_dec in power.get("p_decisive", {}).items():
                    rows.append({"pipeline": name, "verdict_now": p.get("verdict_now"), "rule": rule,
                                 "n_seed": int(n_seed), "p_decisive": p_dec,
                                 "p_remembers": power.get("p_remembers", {}).get(n_seed),
                                 "p_forgets": power.get("p_forgets", {}).get(n_seed)})
        return pd.DataFrame(rows, columns=["pipeline", "verdict_now", "rule", "n_seed", "p_decisive", "p_remembers",
                                           "p_forgets"])


__all__ = ["PlanResult", "crossed_frame", "crossed_html", "crossed_text", "html_table", "interval", "number",
           "text_table"]

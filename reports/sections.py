"""The report-section table: every section of the HTML report, one entry each.

A section's id is needed by the contents, the figures, the context builder, the show rule and the
template, so one entry holds all of it, and nothing else spells it: id, title, figures, tables (the
context rows it needs), the rule that decides whether it is shown, and the template partial that draws
it. ``reports/html.py`` reads :data:`SECTIONS` for the table of contents, the section numbers, the
figures, the skipped-section notes and the partials. How to add a section: docs/extending.md.

Every section is drawn from its own partial, ``templates/sections/<partial>``: report.html.j2
holds the page's frame (head, contents, alerts, footer) and includes the partials in table order,
so the page order is the table order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from initmem import plot
from initmem.plot.load import Analysis
from initmem.reports import tables
from initmem.reports.svg import Figure


@dataclass(frozen=True)
class Drawn:
    """What a show rule decides on: the analysis and the section's figures that could be drawn."""

    analysis: Analysis
    figures: list[Figure]


ShowRule = Callable[[Drawn], bool]


def with_figures(drawn: Drawn) -> bool:
    """Shown when at least one of its figures could be drawn."""
    return bool(drawn.figures)


def with_figures_or_collapse(drawn: Drawn) -> bool:
    """Shown when a figure could be drawn or the collapse test ran (its table needs no figure)."""
    return bool(drawn.figures) or drawn.analysis.collapse is not None


def with_cube(drawn: Drawn) -> bool:
    """Shown when the analysed cube could be read."""
    return drawn.analysis.cube is not None


def with_settings(drawn: Drawn) -> bool:
    """Shown when the cube records how its pipelines trained."""
    return bool(tables.settings_rows(drawn.analysis))


def with_crossed(a: Analysis) -> bool:
    """The analysed cube was a crossed (init x data seeds) design: summary.json has a ``crossed`` block."""
    return getattr(a.summary, "crossed", None) is not None


@dataclass(frozen=True)
class Section:
    """One report section.

    ``figures`` names the :mod:`initmem.plot` functions it shows (looked up when the report is
    drawn, so the report shows what those public functions return); ``tables`` maps a
    template-context name to the function that builds its rows from the analysis; ``show`` gets
    the analysis and the figures that could be drawn (None: always shown); ``partial`` is the
    file under ``templates/sections/`` that draws it. ``skip_reason`` is the note a skipped
    section gets when no figure said why. A skipped section is left off the page (the contents and
    the notes at the top list it) unless ``kept_when_skipped``: then its heading stays, with the note
    under it (the figure sections do this, so a reader finds the figures' place and why they are absent).
    ``applies`` says whether the section belongs to an analysis at all (:meth:`applies_to`).
    """

    id: str
    title: str
    figures: tuple[str, ...] = ()
    tables: tuple[tuple[str, Callable[[Analysis], Any]], ...] = ()
    show: ShowRule | None = None
    partial: str = ""
    skip_reason: str = "nothing to show"
    kept_when_skipped: bool = False
    applies: Callable[[Analysis], bool] | None = None

    def shown(self, a: Analysis, figures: list[Figure]) -> bool:
        """Whether the section is on the page, by its rule."""
        return self.show is None or self.show(Drawn(a, figures))

    def applies_to(self, a: Analysis) -> bool:
        """Whether the section belongs to this kind of analysis at all (None: every analysis). A section that
        does not apply is not drawn, numbered, listed in the contents or noted as skipped: the report of an
        analysis without a crossed design is the report it was before crossed designs existed."""
        return self.applies is None or self.applies(a)


SECTIONS: tuple[Section, ...] = (
    Section("summary", "Summary", tables=(
        ("summary_rows", tables.summary_rows), ("interpolation_rows", tables.interpolation_rows),
        ("verdict_rows", tables.verdict_rows)), partial="summary.html.j2"),
    Section("metric", "Metric against σ_w", figures=("metric_vs_sigma",), show=with_figures,
            partial="metric.html.j2", kept_when_skipped=True),
    Section("variance", "Variance decomposition", figures=("variance_shares", "spread_forest"), show=with_figures,
            partial="variance.html.j2", kept_when_skipped=True),
    Section("crossed", "Crossed seeds: the memory of the draw", figures=("crossed_components", "init_share_curve"),
            tables=(("crossed_rows", tables.crossed_rows), ("crossed_level_rows", tables.crossed_level_rows)),
            partial="crossed.html.j2", applies=with_crossed),
    Section("training", "Training curves", figures=("training_curves", "tau_scatter"), show=with_figures,
            partial="training.html.j2", kept_when_skipped=True),
    Section("radial", "Radial memory", figures=("kernel_norms", "rho_curves"), show=with_figures,
            partial="radial.html.j2", kept_when_skipped=True),
    Section("clocks", "Forgetting clocks", figures=("clock_panels", "forgetting_times", "forgetting_dose",
                                                    "curves_side_by_side"),
            tables=(("collapse_rows", tables.collapse_rows),), show=with_figures_or_collapse, partial="clocks.html.j2",
            kept_when_skipped=True),
    Section("frequentist", "Frequentist cross-checks", tables=(("frequentist_rows", tables.frequentist_rows),),
            partial="frequentist.html.j2"),
    Section("diagnostics", "Diagnostics", figures=("ppc_intervals",),
            tables=(("diagnostics_rows", tables.diagnostics_rows), ("assumption_rows", tables.assumption_rows)),
            partial="diagnostics.html.j2"),
    Section("settings", "Pipeline settings", tables=(("settings_rows", tables.settings_rows),), show=with_settings,
            partial="settings.html.j2", skip_reason="the cube records no per-pipeline settings"),
    Section("methods", "Methods", partial="methods.html.j2"),
    Section("provenance", "Provenance", partial="provenance.html.j2"),
)

BY_ID: dict[str, Section] = {s.id: s for s in SECTIONS}


def applicable(a: Analysis) -> tuple[Section, ...]:
    """The sections that belong to this analysis (:meth:`Section.applies_to`), in table order."""
    return tuple(s for s in SECTIONS if s.applies_to(a))


def numbers(secs: tuple[Section, ...] = SECTIONS) -> dict[str, int]:
    """Section id -> its number on the page (1-based, table order), over ``secs`` (the sections that apply)."""
    return {s.id: i for i, s in enumerate(secs, 1)}


def _check() -> None:
    """The table's invariants: unique ids, and every section drawn by a partial of its own (an id
    typed once, a partial used once)."""
    if len(BY_ID) != len(SECTIONS):
        raise ValueError("reports.sections: a section id appears twice")
    partials = [s.partial for s in SECTIONS]
    if not all(p.endswith(".html.j2") for p in partials) or len(set(partials)) != len(partials):
        raise ValueError("reports.sections: every section needs a partial of its own (templates/sections/*.html.j2)")
    unknown = [f for s in SECTIONS for f in s.figures if not plot.is_figure_function(getattr(plot, f, None))]
    if unknown:
        raise ValueError(f"reports.sections: no initmem.plot figure function {', '.join(unknown)}")


_check()

__all__ = ["BY_ID", "SECTIONS", "Drawn", "Section", "applicable", "numbers", "with_crossed", "with_cube",
           "with_figures", "with_figures_or_collapse", "with_settings"]

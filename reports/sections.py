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

from initmem import cube as C
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


# What the input lacks, by design ------------------------------------------------------------------
# A cube that was read but never held some data (an imported table has no per-epoch curves, no
# tau_interp, no training settings) makes sections and figures absent by design: the report lists them
# once as "not in this input", not as warnings. Each check names what is missing, as a noun phrase
# ("per-epoch curves"), or None when the input holds it (or the cube could not be read: then the absence
# is a problem, and the notes at the top say why).

InputCheck = Callable[[Analysis], str | None]


def _no_epochs(a: Analysis) -> str | None:
    return "per-epoch curves" if C.EPOCH not in a.cube.dims else None


def _lacks_training_curves(a: Analysis) -> str | None:
    return _no_epochs(a) or (None if a.cube_has(C.TRAIN_ACC, C.VAL_ACC) else "train_acc and val_acc curves")


def _lacks_taus(a: Analysis) -> str | None:
    return None if a.cube_has(C.TAU_INTERP, C.TAU_BEST) else "tau_interp and tau_best"


def _lacks_kernel_norms(a: Analysis) -> str | None:
    return _no_epochs(a) or (None if a.cube_has(C.KERNEL_NORM) else "kernel_norm curves")


def _lacks_settings(a: Analysis) -> str | None:
    return None if tables.settings_rows(a) else "per-pipeline training settings"


# Figure name -> the check of what it draws from the cube (figures drawn from summary.json alone have none).
FIGURE_INPUT: dict[str, InputCheck] = {
    "training_curves": _lacks_training_curves, "tau_scatter": _lacks_taus,
    "kernel_norms": _lacks_kernel_norms, "rho_curves": _lacks_kernel_norms,
    "clock_panels": _no_epochs, "forgetting_times": _no_epochs, "forgetting_dose": _no_epochs,
    "curves_side_by_side": _no_epochs,
}


def figure_not_in_input(a: Analysis, name: str) -> str | None:
    """What the read cube lacks for figure ``name`` (None: it holds it, or no cube was read)."""
    check = FIGURE_INPUT.get(name)
    return check(a) if check is not None and a.cube is not None else None


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
    A section absent by design (:meth:`not_in_input`: the read cube never held its data, as an imported
    table holds no curves) is neither drawn, numbered nor noted: the top of the page lists it once, "not in
    this input". ``input_check`` says what the cube lacks for a section without figures.
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
    input_check: InputCheck | None = None

    def shown(self, a: Analysis, figures: list[Figure]) -> bool:
        """Whether the section is on the page, by its rule."""
        return self.show is None or self.show(Drawn(a, figures))

    def not_in_input(self, a: Analysis, figure_lacks: dict[str, str]) -> str | None:
        """What the input lacks when this skipped section is absent by design (None: it is absent for another
        reason, a missing cube say, and the notes at the top say why). ``figure_lacks`` maps each of its figures
        that was not drawn for lack of input to what it lacks; the section is absent by design when every figure
        is, or, for a section without figures, when its ``input_check`` names what the read cube lacks. The
        reason is its first figure's (the main one: training curves before the tau scatter)."""
        if self.figures:
            lacks = [figure_lacks.get(f) for f in self.figures]
            return lacks[0] if all(lacks) else None
        if self.input_check is None or a.cube is None:
            return None
        return self.input_check(a)

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
            partial="settings.html.j2", skip_reason="the cube records no per-pipeline settings",
            input_check=_lacks_settings),
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

__all__ = ["BY_ID", "FIGURE_INPUT", "SECTIONS", "Drawn", "Section", "applicable", "figure_not_in_input", "numbers",
           "with_crossed", "with_cube", "with_figures", "with_figures_or_collapse", "with_settings"]

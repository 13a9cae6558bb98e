"""Command-line parameter types and the option -> flag map (the one place that turns a library
option's name into its flag).

Choices come from results/spec.py (analysis options), clocks.py (truth axes) and
cube/schema.py (cube names), resolved when click first needs them, so ``initmem --help`` imports
neither pydantic nor numpy.
"""

from __future__ import annotations

import math
import re

import click


class SpecChoice(click.Choice):
    """A choice among an analysis option's values, read from results/spec.py on first use (that module
    owns them; importing it, with pydantic, when this module loads would slow down every command)."""

    def __init__(self, vocabulary: str) -> None:  # click.Choice.__init__ would resolve them now
        self.vocabulary = vocabulary
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from initmem.results import spec

        return tuple(getattr(spec, self.vocabulary))


# Flags whose name is not ``--`` + the option's name with '-' for '_' (library messages name options,
# initmem.errors.option; the import options are lists in Python, one repeatable flag each here).
OPTION_FLAGS: dict[str, str] = {"metric_cols": "--metric-col", "ignore_cols": "--ignore-col"}


def option_flag(option: str) -> str:
    """The command-line flag of a library option (``delta`` -> ``--delta``)."""
    return OPTION_FLAGS.get(option, "--" + option.replace("_", "-"))


class FiniteFloatRange(click.FloatRange):
    """A float range that refuses nan and inf: click's range lets both through (``nan < 0`` is false), and
    an infinite SD or delta makes a silently meaningless result, not an error."""

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        out = super().convert(value, param, ctx)
        if not math.isfinite(out):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return out


class Margin(float):
    """A margin (``--delta``, ``--draw-margin``) in the metric's units, remembering whether it was given in
    accuracy points (``2pt``), so that a command can refuse points for a metric that is not an accuracy."""

    points: bool = False

    def __new__(cls, value: float, points: bool = False) -> Margin:
        out = super().__new__(cls, value)
        out.points = points
        return out


_MARGIN = re.compile(r"([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)(pt|pts|points?)?")


class MarginType(click.ParamType):
    """``--delta`` / ``--draw-margin``: accuracy points (``2pt``, stored as the fraction 0.02) or a number in the
    metric's units (a fraction for an accuracy: ``0.02``). Whether a bare number is ambiguous depends on the
    metric, which :func:`check_margin` decides before any work."""

    name = "MARGIN"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> Margin:
        if isinstance(value, Margin):
            return value
        m = _MARGIN.fullmatch(str(value).strip().lower().replace(" ", ""))
        if m is None:
            self.fail(f"{value!r} is not a margin: give accuracy points (2pt) or a number in the metric's units "
                      "(0.02 for an accuracy, as a fraction)", param, ctx)
        number = float(m.group(1))
        if not (math.isfinite(number) and number > 0):
            self.fail(f"{value!r} must be a positive finite number", param, ctx)
        return Margin(number / 100 if m.group(2) else number, points=bool(m.group(2)))


MARGIN = MarginType()


def check_margin(metric: str, value: float | None, flag: str) -> None:
    """Refuse, before any training or sampling, a margin whose unit the metric cannot have: points for a metric
    that is not an accuracy, or a bare number of 1 or more for an accuracy (a fraction of the test set cannot
    reach it: it was meant in points). The check is results/margins.py's ``check_margin``, the one that validates
    a margin; this raises click.BadParameter (exit 2, one line, with the fix)."""
    from initmem.errors import OptionError
    from initmem.results.margins import check_margin as validate

    try:
        validate(flag.lstrip("-").replace("-", "_"), value, metric, points_syntax=True)
    except OptionError as exc:
        raise click.BadParameter(exc.for_flag(flag), param_hint=flag) from None


# Random seeds: numpy's generators take none below 0.
SEED = click.IntRange(min=0)


class TruthAxisChoice(click.Choice):
    """``--truth-axis``: epochs or any clock the clocks table marks as simulated (resolved lazily)."""

    def __init__(self) -> None:  # click.Choice.__init__ would resolve the choices now
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from initmem import clocks, cube

        return (cube.EPOCH, *clocks.simulated())


class JobsType(click.ParamType):
    """``--jobs``: a positive worker count, or ``auto``."""

    name = "N|auto"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if isinstance(value, int) and value >= 1:
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        if text.isdigit() and int(text) >= 1:
            return int(text)
        self.fail(f"{value!r} is neither 'auto' nor a whole number of at least 1", param, ctx)


JOBS = JobsType()


class LooksType(click.ParamType):
    """``--looks``: comma-separated seed counts (``4,8,12,16``); their order and size are checked where the
    looks are used (initmem.analysis.sequential.check_looks), so both commands say the same."""

    name = "N,N,..."

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> list[int]:
        if isinstance(value, list | tuple):
            return [int(n) for n in value]
        try:
            return [int(n) for n in str(value).split(",")]
        except ValueError:
            self.fail(f"must be comma-separated seed counts (got {value!r})", param, ctx)


LOOKS = LooksType()


class ShapeType(click.ParamType):
    """``--compile-shape``: three comma-separated sizes, pipelines, sigma_w levels, seeds (``8,6,16``); their
    range is checked by the analysis options (AnalysisSpec)."""

    name = "P,L,S"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, list | tuple):
            return tuple(int(n) for n in value)
        try:
            out = tuple(int(n) for n in str(value).split(","))
        except ValueError:
            out = ()
        if len(out) != 3:
            self.fail(f"must be three comma-separated sizes: pipelines, sigma_w levels, seeds (got {value!r})",
                      param, ctx)
        return out


SHAPE = ShapeType()


class CubeNameChoice(click.Choice):
    """A choice among cube variable names, given by their constants in initmem.cube and resolved on
    first use: importing initmem.cube (numpy, xarray) when this module loads would slow down every
    command, ``--help`` included."""

    def __init__(self, *constants: str) -> None:  # click.Choice.__init__ would resolve them now
        self.constants = constants
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from initmem import cube

        return tuple(getattr(cube, c) for c in self.constants)

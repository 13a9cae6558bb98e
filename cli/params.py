"""Command-line parameter types and the option -> flag map (the one place that turns a library
option's name into its flag).

Choices come from initmem/spec.py (analysis options), initmem/clocks.py (truth axes) and
initmem/cube.py (cube names), resolved when click first needs them, so ``initmem --help`` imports
neither pydantic nor numpy.
"""

from __future__ import annotations

import math

import click


class SpecChoice(click.Choice):
    """A choice among an analysis option's values, read from initmem/spec.py on first use (that module
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

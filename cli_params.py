"""Command-line parameter types that read the project's tables on first use, and the option -> flag map.

Kept apart from cli.py (which stays under the module-size limit): choices come from
initmem/spec.py (analysis options) and initmem/clocks.py (truth axes), resolved when click first
needs them, so ``initmem --help`` imports neither pydantic nor numpy.
"""

from __future__ import annotations

import click


class SpecChoice(click.Choice):
    """A choice among an analysis option's values, read from initmem/spec.py on first use (that module
    owns them; importing it, with pydantic, when this module loads would slow down every command)."""

    def __init__(self, vocabulary: str) -> None:  # click.Choice.__init__ would resolve them now
        self.vocabulary = vocabulary
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from initmem import spec

        return tuple(getattr(spec, self.vocabulary))


# Flags whose name is not ``--`` + the option's name with '-' for '_' (library errors name options).
OPTION_FLAGS: dict[str, str] = {}


def option_flag(option: str) -> str:
    """The command-line flag of a library option (``delta`` -> ``--delta``)."""
    return OPTION_FLAGS.get(option, "--" + option.replace("_", "-"))


class TruthAxisChoice(click.Choice):
    """``--truth-axis``: epochs or any clock the clocks table marks as simulated (resolved lazily)."""

    def __init__(self) -> None:  # click.Choice.__init__ would resolve the choices now
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from initmem import clocks, cube

        return (cube.EPOCH, *clocks.simulated())

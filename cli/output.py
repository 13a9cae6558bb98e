"""What the command line prints: the process-wide verbosity (--quiet / --verbose), ``echo``, and short
terminal formats shared by the command modules.

Kept in its own module, not in cli.py: ``python -m initmem.cli`` runs cli.py as ``__main__``, so a
command module that imported its verbosity from ``initmem.cli`` would read a second copy of it.
"""

from __future__ import annotations

import click


class Verbosity:
    """Process-wide verbosity set by --quiet / --verbose: 0 quiet, 1 normal, 2 verbose."""

    level: int = 1


def is_quiet() -> bool:
    return Verbosity.level == 0


def echo(msg: str = "", *, err: bool = False) -> None:
    """Print unless --quiet (errors are never silenced: they travel as UserError)."""
    if not is_quiet():
        click.echo(msg, err=err)


def shape(ds: object) -> str:
    """'P pipeline(s) x L sigma_w x S seed(s)' of a cube."""
    from initmem import cube

    n = ds.sizes  # type: ignore[attr-defined]
    return f"{n[cube.PIPELINE]} pipeline(s) x {n[cube.SIGMA]} sigma_w x {n[cube.SEED]} seed(s)"


def fmt_stat(v: float | None, spec: str = ".4g") -> str:
    """A statistic for the terminal; '-' when it could not be computed (null in summary.json)."""
    return "-" if v is None else format(v, spec)

"""What the command line prints: the process-wide verbosity (--quiet / --verbose), ``echo``, and short
terminal formats shared by the command modules.

Kept in its own module, not in cli.py: ``python -m initmem.cli`` runs cli.py as ``__main__``, so a
command module that imported its verbosity from ``initmem.cli`` would read a second copy of it.
"""

from __future__ import annotations

from pathlib import Path

import click

from initmem.errors import UserError


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


def check_not_run_folder(analysis_dir: Path) -> None:
    """A run folder given where its analysis folder belongs: say which folder to give."""
    from initmem import results as R

    inner = analysis_dir / R.RUN_ANALYSIS_DIR
    if not (analysis_dir / R.SUMMARY_JSON).is_file() and (inner / R.SUMMARY_JSON).is_file():
        raise UserError(f"{analysis_dir} is a run folder, not an analysis folder: give {inner}")


def output_error(exc: OSError, out: Path) -> Exception:
    """An OSError met while creating the output ``out`` (or a folder above it, or a file in it or beside it) as
    the one-line user error naming the path; any other OSError is returned as it is (an internal fault)."""
    if exc.filename is None:
        return exc
    failed = Path(str(exc.filename)).absolute()
    target = out.absolute()
    related = (failed == target or failed in target.parents or target in failed.parents
               or failed.parent == target.parent)
    if not related:
        return exc
    why = exc.strerror or exc.__class__.__name__
    if failed == target:
        return UserError(f"cannot write {out}: {why}")
    if failed in target.parents and failed.exists() and not failed.is_dir():
        why = "it is a file, not a folder"
    return UserError(f"cannot write {out}: {exc.filename}: {why}")

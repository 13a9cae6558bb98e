"""What the command line prints: the process-wide verbosity (--quiet / --verbose), ``echo``, and short
terminal formats shared by the command modules.

Kept in its own module, not in cli/main.py: the group's module imports the command modules to register them, so
a command module that imported its verbosity from there would import in a cycle.
"""

from __future__ import annotations

import shlex
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


# The first bytes of a NetCDF file: classic (CDF) or NetCDF-4 (HDF5).
_NETCDF_MAGIC = (b"CDF", b"\x89HDF")


def check_not_grid_folder(analysis_dir: Path) -> None:
    """Something else given where an analysis folder belongs (``report``, ``plan``, ``export``): a grid folder (say
    which folder inside it to give) or a cube file (say to analyze it into a folder of its own first, and give the
    command to run then). Why: the library's message for a missing folder suggests ``--out`` with the path given,
    which for a cube would be the cube's own path."""
    from initmem import results as R

    inner = analysis_dir / R.RUN_ANALYSIS_DIR
    if not (analysis_dir / R.SUMMARY_JSON).is_file() and (inner / R.SUMMARY_JSON).is_file():
        raise UserError(f"{analysis_dir} is a grid folder, not an analysis folder: give {inner}")
    if analysis_dir.is_file():
        ctx = click.get_current_context(silent=True)
        command = ctx.info_name if ctx is not None and ctx.info_name else "report"
        target = analysis_dir.with_name(f"{analysis_dir.stem}-analysis")
        with analysis_dir.open("rb") as f:
            head = f.read(4)
        if analysis_dir.suffix == ".nc" or head.startswith(_NETCDF_MAGIC):
            cube, out = shlex.quote(str(analysis_dir)), shlex.quote(str(target))
            raise UserError(f"{analysis_dir} is a cube, not an analysis folder: analyze it first, "
                            f"initmem analyze {cube} --out {out}, then initmem {command} {out}"
                            + (" --out DIR" if command == "export" else ""))
        raise UserError(f"{analysis_dir} is a file, not an analysis folder (the folder initmem analyze --out wrote)")


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

"""The ``initmem`` command line (click).

Conventions (docs/analysis.md, "Command line"): bad input exits 2 with one line ``initmem: error: ...`` and no
traceback; an internal fault exits 1; no command leaves a half-written file behind. Commands
import their heavy modules lazily so ``initmem --help`` stays fast.

This module holds the group, ``inspect``, ``report``, ``run`` and :func:`main` (which turns errors
into exit codes and a library option's name into its flag). The commands that make a cube are in
cli/cubes.py, those that analyze one in cli/analyze.py; parameter types and the option -> flag map
in cli/params.py; verbosity and ``echo`` in cli/output.py. ``run`` and ``import`` call the public functions
``initmem.run`` and ``initmem.import_table``, and ``collect`` the entry point behind ``initmem.collect_cube`` with
one ``CollectOptions`` record, so a script and the command do the same thing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

import click

from initmem.cli import analyze as cli_analyze
from initmem.cli import cubes as cli_cubes
from initmem.cli import export as cli_export
from initmem.cli.output import Verbosity, check_not_grid_folder, echo, is_quiet, output_error
from initmem.cli.params import JOBS, LOOKS, MARGIN, check_margin, option_flag
from initmem.errors import OptionError, UserError, options_as_flags

log = logging.getLogger("initmem")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors and requested output.")
@click.option("--verbose", "-v", is_flag=True, help="Print more detail, with debug logging.")
@click.version_option(package_name="initmem", prog_name="initmem")
def app(quiet: bool, verbose: bool) -> None:
    """initmem: does my network still remember its initialization?

    Collect seed-replicated sigma_w grids, analyze how much each training pipeline remembers,
    and write one HTML statistical report.
    """
    if quiet and verbose:
        raise UserError("--quiet and --verbose exclude each other")
    Verbosity.level = 0 if quiet else 2 if verbose else 1
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(name)s: %(message)s")


# --- inspect -----------------------------------------------------------------------------

@app.command()
@click.argument("cube_path", metavar="CUBE.nc", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
def inspect(cube_path: Path, as_json: bool) -> None:
    """Validate a cube and print what it holds; exit 2 when it is invalid."""
    from initmem import cube
    from initmem.cli.inspect_view import render_description

    ds = cube.open_cube(cube_path, check=False)
    info = cube.describe(ds)
    if as_json:
        click.echo(json.dumps(info, indent=2, default=str))
    elif not is_quiet():
        render_description(info, str(cube_path))
    if not info["valid"]:
        errs = [p for p in info["problems"] if p["severity"] == "error"]
        more = f" (and {len(errs) - 1} more problem(s) listed above)" if len(errs) > 1 else ""
        raise UserError(f"{cube_path} is not a valid cube: {errs[0]['message']}{more}")


# --- the commands that make a cube (cli/cubes.py) and read it (cli/analyze.py) -------------------

for _command in (cli_cubes.import_, cli_cubes.simulate, cli_cubes.collect,
                 cli_analyze.analyze, cli_analyze.collapse, cli_analyze.plan, cli_export.export):
    app.add_command(_command)


# --- report and run --------------------------------------------------------------

@app.command()
@click.argument("analysis_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_file", metavar="FILE", type=click.Path(path_type=Path), default=None,
              help="Where to write the HTML report (default DIR/report.html).")
def report(analysis_dir: Path, out_file: Path | None) -> None:
    """Write the self-contained HTML report of an analysis folder; print its path."""
    from initmem import results as R
    from initmem.reports.html import build_report

    check_not_grid_folder(analysis_dir)
    try:
        path = build_report(analysis_dir, out_file)
    except OSError as exc:
        raise output_error(exc, out_file if out_file is not None else analysis_dir / R.REPORT_HTML) from None
    click.echo(str(path))


@app.command("run")
@click.argument("grid_file", metavar="GRID.yaml", required=False)
@click.option("--preset", default=None, metavar="NAME",
              help="A packaged grid instead of GRID.yaml: quick (default; MNIST-1D), digits, paper, clocks, arms, "
                   "atlas or crossed.")
@click.option("--out", "-o", "out", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Grid folder for cube.nc, analysis/ and report.html (default runs/<grid name>).")
@click.option("--jobs", type=JOBS, metavar="N|auto", default="auto", show_default=True,
              help="CPU worker processes, or auto: one per engine.cpu_threads cores.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps"]), default="auto", show_default=True,
              help="Where to train: auto picks a GPU when there is one.")
@click.option("--reanalyze", is_flag=True, help="Redo the analysis even if it is newer than the cube.")
@click.option("--delta", type=MARGIN, default=None,
              help="Smallest spread that matters: accuracy points (2pt) or a fraction (0.02); default 1pt.")
@click.option("--draw-margin", type=MARGIN, default=None,
              help="Crossed seed designs: the SD of the initial draw's effect that matters, in points (0.5pt) or "
                   "as a fraction (0.005, the default).")
@click.option("--draws", type=click.IntRange(min=50), default=None, help="Posterior draws per chain.")
@click.option("--chains", type=click.IntRange(min=1), default=None, help="Sampler chains.")
@click.option("--until-decided/--fixed", default=None,
              help="Add seeds only to undecided pipelines, look by look, with the error spent across looks; or a "
                   "fixed design on the grid's seeds. Default: as the grid's decide block says (fixed without one).")
@click.option("--looks", type=LOOKS, default=None,
              help="Seed counts at which --until-decided analyzes (default: the grid's decide.looks, else "
                   "4,8,12,16; many levels, few seeds: 3,4,5,6); a grid folder keeps the looks and cap it started "
                   "with.")
@click.option("--max-seeds", type=click.IntRange(min=2), default=None, metavar="N",
              help="Cap on seeds per pipeline for --until-decided (looks above it are dropped).")
def run_(grid_file: str | None, preset: str | None, out: Path | None, jobs: int | Literal["auto"], device: str,
         reanalyze: bool, delta: float | None, draw_margin: float | None, draws: int | None, chains: int | None,
         until_decided: bool | None, looks: list[int] | None, max_seeds: int | None) -> None:
    """Collect (resumably), analyze and report in one go; print where the report is.

    \b
    initmem run --preset quick
    initmem run GRID.yaml --out runs/mine
    initmem run --preset quick --until-decided --looks 4,8,12,16 --delta 2pt
    """
    from rich.console import Console

    from initmem.analysis.run import run
    from initmem.reports.html import default_command
    from initmem.results.spec import AnalysisSpec

    console = Console(highlight=False, soft_wrap=True)

    def say(msg: str) -> None:
        if not is_quiet():
            console.print(msg, style="bold" if msg.startswith("[") else None, markup=False)

    for hint, value in (("--max-seeds", max_seeds), ("--looks", looks)):
        if value is not None and not until_decided:   # explicit, also over a grid's decide block
            raise click.BadParameter("only with --until-decided", param_hint=hint)
    from initmem.cube import SELECTED_TEST_ACC

    check_margin(SELECTED_TEST_ACC, delta, "--delta")            # before any training: the grid's accuracy
    check_margin(SELECTED_TEST_ACC, draw_margin, "--draw-margin")
    spec = AnalysisSpec.of(**{k: v for k, v in (("delta", delta), ("draw_margin", draw_margin),
                                                     ("draws", draws), ("chains", chains)) if v is not None})
    result = run(grid_file, out, preset=preset, jobs=jobs, device=device, reanalyze=reanalyze, spec=spec,
                 until_decided=until_decided, looks=looks, max_seeds=max_seeds, quiet=is_quiet(), say=say,
                 command=default_command())
    total = sum(result.seconds.values())
    echo("stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.seconds.items()) + f"; total {total:.1f}")
    click.echo(str(result.report))



def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input -> exit 2 with one line; an internal fault -> exit 1. Library messages
    name options; within this call they name the flags instead (errors.options_as_flags)."""
    with options_as_flags(option_flag):
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    try:
        app.main(args=argv, prog_name="initmem", standalone_mode=False)
    except OptionError as exc:  # the library names the option; the command line names its flag
        click.echo(f"initmem: error: {_one_line(exc.for_flag(option_flag(exc.option)))}", err=True)
        return 2
    except UserError as exc:
        click.echo(f"initmem: error: {_one_line(str(exc))}", err=True)
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("initmem: error: aborted", err=True)
        return 130
    except click.UsageError as exc:
        name = exc.ctx.command_path if exc.ctx is not None else "initmem"
        click.echo(f"initmem: error: {_one_line(exc.format_message())} (see '{name} --help')", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"initmem: error: {_one_line(exc.format_message())}", err=True)
        return 2
    except KeyboardInterrupt:
        click.echo("initmem: error: interrupted", err=True)
        return 130
    except Exception as exc:  # an internal fault; the traceback only with --verbose
        if Verbosity.level >= 2:
            import traceback

            traceback.print_exc()
        click.echo(f"initmem: internal error: {exc.__class__.__name__}: {_one_line(str(exc))}", err=True)
        click.echo("initmem: this is a bug: rerun with --verbose for the traceback", err=True)
        return 1
    return 0


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split())


"""The ``initmem`` command line (click).

Conventions (SPEC.md section 4): bad input exits 2 with one line ``initmem: error: ...`` and no
traceback; an internal fault exits 1; no command leaves a half-written file behind. Commands
import their heavy modules lazily so ``initmem --help`` stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from initmem.errors import UserError

log = logging.getLogger("initmem")


class Verbosity:
    """Process-wide verbosity set by --quiet / --verbose: 0 quiet, 1 normal, 2 verbose."""

    level: int = 1


def is_quiet() -> bool:
    return Verbosity.level == 0


def echo(msg: str = "", *, err: bool = False) -> None:
    """Print unless --quiet (errors are never silenced: they travel as UserError)."""
    if not is_quiet():
        click.echo(msg, err=err)


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
    from initmem.inspect_view import render_description

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


# --- import ------------------------------------------------------------------------------

@app.command("import")
@click.argument("table", metavar="TABLE.csv", type=click.Path(path_type=Path))
@click.option("--out", "-o", required=True, metavar="CUBE.nc", type=click.Path(path_type=Path),
              help="Where to write the cube.")
@click.option("--n-test", type=click.IntRange(min=1), default=None,
              help="Test-set size, so accuracies can be analyzed as binomial counts.")
def import_(table: Path, out: Path, n_test: int | None) -> None:
    """Turn a long results table (pipeline, sigma_w, seed, [epoch], metrics) into a cube."""
    from initmem import cube
    from initmem.table_import import table_to_cube

    ds = table_to_cube(table, n_test=n_test)
    cube.write_cube(ds, out)
    echo(f"wrote {out}: {ds.sizes['pipeline']} pipeline(s) x {ds.sizes['sigma_w']} sigma_w x "
         f"{ds.sizes['seed']} seed(s)")


# --- simulate ----------------------------------------------------------------------------

@app.command()
@click.option("--out", "-o", required=True, metavar="CUBE.nc", type=click.Path(path_type=Path),
              help="Where to write the simulated cube.")
@click.option("--preset", default=None, help="A named scenario (see --list-presets).")
@click.option("--list-presets", is_flag=True, help="List the presets and exit.")
@click.option("--pipelines", type=click.IntRange(min=1), default=3, show_default=True,
              help="Number of pipelines (without --preset).")
@click.option("--n-sigma", type=click.IntRange(min=1), default=6, show_default=True,
              help="sigma_w levels, log-spaced from 1/4 to 8.")
@click.option("--n-seed", type=click.IntRange(min=1), default=4, show_default=True, help="Seeds per cell.")
@click.option("--sigma-sd", type=click.FloatRange(min=0), default=0.3, show_default=True,
              help="SD of the sigma_w-level effects (logit scale for binomial).")
@click.option("--seed-sd", type=click.FloatRange(min=0), default=0.1, show_default=True,
              help="SD of the seed effects shared across sigma_w.")
@click.option("--residual-sd", type=click.FloatRange(min=0), default=0.1, show_default=True,
              help="SD of the residual (sigma_w x seed).")
@click.option("--family", type=click.Choice(["binomial", "gaussian"]), default="binomial", show_default=True,
              help="Binomial counts out of --n-test, or a gaussian metric.")
@click.option("--n-test", type=click.IntRange(min=1), default=450, show_default=True,
              help="Test-set size for binomial counts.")
@click.option("--curves/--no-curves", default=False, show_default=True,
              help="Add training curves whose radial memory decays along --truth-axis.")
@click.option("--truth-axis", type=click.Choice(["epoch", "T_sgd", "T_l2", "T_adapt"]), default="T_sgd",
              show_default=True, help="Time axis along which the simulated memory decays.")
@click.option("--epochs", type=click.IntRange(min=1), default=30, show_default=True,
              help="Epochs of simulated curves.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the simulation.")
def simulate(out: Path, preset: str | None, list_presets: bool, pipelines: int, n_sigma: int, n_seed: int,
             sigma_sd: float, seed_sd: float, residual_sd: float, family: str, n_test: int, curves: bool,
             truth_axis: str, epochs: int, seed: int) -> None:
    """Make a cube with a known truth (stored in its 'truth' attribute)."""
    from initmem import cube
    from initmem.simulate import PRESETS, SimPipeline, preset_pipelines, simulate_cube

    if list_presets:
        for name, (desc, _) in PRESETS.items():
            click.echo(f"{name:<16} {desc}")
        return
    if preset is not None:
        specs = preset_pipelines(preset)
    else:
        specs = [SimPipeline(name=f"p{i}", sigma_sd=sigma_sd, seed_sd=seed_sd, residual_sd=residual_sd,
                             family=family, n_sigma=n_sigma, n_seed=n_seed) for i in range(pipelines)]
    ds = simulate_cube(specs, n_test=n_test, curves=curves, truth_axis=truth_axis, epochs=epochs, seed=seed)
    cube.write_cube(ds, out)
    echo(f"wrote {out}: {ds.sizes['pipeline']} pipeline(s) x {ds.sizes['sigma_w']} sigma_w x "
         f"{ds.sizes['seed']} seed(s); the truth is in its 'truth' attribute")


# --- collect (issues 3-4) ------------------------------------------------------------------

# --- analyze and plan (issues 5-6) ---------------------------------------------------------

# --- report and run (issue 7) --------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input -> exit 2 with one line; an internal fault -> exit 1."""
    try:
        app.main(args=argv, prog_name="initmem", standalone_mode=False)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

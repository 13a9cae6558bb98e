"""The ``initmem`` command line (click).

Conventions (docs/analysis.md, "Command line"): bad input exits 2 with one line ``initmem: error: ...`` and no
traceback; an internal fault exits 1; no command leaves a half-written file behind. Commands
import their heavy modules lazily so ``initmem --help`` stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from initmem.cli_params import SpecChoice, TruthAxisChoice, option_flag
from initmem.errors import OptionError, UserError

log = logging.getLogger("initmem")


class Verbosity:
    """Process-wide verbosity set by --quiet / --verbose: 0 quiet, 1 normal, 2 verbose."""

    level: int = 1


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
@click.argument("source", metavar="SOURCE", type=click.Path(path_type=Path))
@click.option("--out", "-o", required=True, metavar="CUBE.nc", type=click.Path(path_type=Path),
              help="Where to write the cube.")
@click.option("--seeds", type=click.Choice(["paired", "independent"]), default=None,
              help="Required. paired: one seed number gives the same initial direction and data order at every "
                   "sigma_w; independent: each run drew its own randomness.")
@click.option("--format", "fmt", type=click.Choice(["auto", "csv", "wandb", "mlflow", "tensorboard"]),
              default="auto", show_default=True,
              help="The source: a CSV table, a W&B runs CSV export, an MLflow mlruns/ folder or a TensorBoard "
                   "log folder (auto: by what SOURCE looks like).")
@click.option("--n-test", type=click.IntRange(min=1), default=None,
              help="Test-set size: every test accuracy must be a whole count out of it.")
@click.option("--scale", type=click.Choice(["fraction", "percent"]), default="fraction", show_default=True,
              help="Unit of the accuracy columns.")
@click.option("--metric-col", multiple=True, metavar="NAME", help="Keep column NAME as a metric (repeatable).")
@click.option("--ignore-col", multiple=True, metavar="NAME", help="Drop column NAME (repeatable).")
@click.option("--pipeline-col", default=None, metavar="NAME", help="The column / config key naming the pipeline.")
@click.option("--sigma-col", default=None, metavar="NAME", help="The column / config key holding sigma_w.")
@click.option("--seed-col", default=None, metavar="NAME", help="The column / config key holding the seed.")
@click.option("--mapping", type=click.Path(path_type=Path), default=None, metavar="MAP.yaml",
              help="The same mapping as a small YAML file (keys pipeline, sigma_w, seed, epoch, metrics, ignore).")
@click.option("--nan-as-missing", is_flag=True, help="Import runs whose results are NaN or infinite as missing.")
@click.option("--n-train", type=click.IntRange(min=1), default=None,
              help="Training examples, for steps per epoch of the clocks (without a step column).")
def import_(source: Path, out: Path, seeds: str | None, fmt: str, n_test: int | None, scale: str,
            metric_col: tuple[str, ...], ignore_col: tuple[str, ...], pipeline_col: str | None,
            sigma_col: str | None, seed_col: str | None, mapping: Path | None, nan_as_missing: bool,
            n_train: int | None) -> None:
    """Turn runs made elsewhere into a cube: a long table (pipeline, sigma_w, seed, [epoch], metrics)
    or a tracker export (docs/import.md)."""
    from initmem import cube
    from initmem.importers.trackers import Mapping, read_source
    from initmem.table_import import frame_to_cube

    cols = Mapping.load(mapping).override(pipeline=pipeline_col, sigma_w=sigma_col, seed=seed_col,
                                          metrics=metric_col, ignore=ignore_col)
    df, label = read_source(source, fmt, cols)
    notes: list[str] = []
    ds = frame_to_cube(df, seeds=seeds, n_test=n_test, source=label, scale=scale, metric_cols=cols.metrics,
                       ignore_cols=cols.ignore, nan_as_missing=nan_as_missing, n_train=n_train, notes=notes)
    cube.write_cube(ds, out)
    for note in notes:
        echo(f"  {note}")
    echo(f"wrote {out}: {_shape(ds)}")


# --- simulate ----------------------------------------------------------------------------

@app.command()
@click.option("--out", "-o", default=None, metavar="CUBE.nc", type=click.Path(path_type=Path),
              help="Where to write the simulated cube (required unless --list-presets).")
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
@click.option("--family", type=SpecChoice("FAMILIES"), default="binomial", show_default=True,
              help="Binomial counts out of --n-test, or a gaussian metric.")
@click.option("--n-test", type=click.IntRange(min=1), default=450, show_default=True,
              help="Test-set size for binomial counts.")
@click.option("--curves/--no-curves", default=False, show_default=True,
              help="Add training curves whose radial memory decays along --truth-axis.")
@click.option("--truth-axis", type=TruthAxisChoice(),
              default=lambda: CubeNameChoice("T_SGD").choices[0],
              show_default=True, help="Time axis along which the simulated memory decays.")
@click.option("--epochs", type=click.IntRange(min=1), default=30, show_default=True,
              help="Epochs of simulated curves.")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the simulation.")
def simulate(out: Path | None, preset: str | None, list_presets: bool, pipelines: int, n_sigma: int, n_seed: int,
             sigma_sd: float, seed_sd: float, residual_sd: float, family: str, n_test: int, curves: bool,
             truth_axis: str, epochs: int, seed: int) -> None:
    """Make a cube with a known truth (stored in its 'truth' attribute)."""
    from initmem import cube
    from initmem.simulate import PRESETS, SimPipeline, preset_pipelines, simulate_cube

    if list_presets:
        for name, (desc, _) in PRESETS.items():
            click.echo(f"{name:<16} {desc}")
        return
    if out is None:
        raise UserError("simulate needs --out CUBE.nc (where to write the cube)")
    if preset is not None:
        specs = preset_pipelines(preset)
    else:
        specs = [SimPipeline(name=f"p{i}", sigma_sd=sigma_sd, seed_sd=seed_sd, residual_sd=residual_sd,
                             family=family, n_sigma=n_sigma, n_seed=n_seed) for i in range(pipelines)]
    ds = simulate_cube(specs, n_test=n_test, curves=curves, truth_axis=truth_axis, epochs=epochs, seed=seed)
    cube.write_cube(ds, out)
    echo(f"wrote {out}: {_shape(ds)}; the truth is in its '{cube.A_TRUTH}' attribute")


# --- collect (issues 3-4) ------------------------------------------------------------------

@app.command()
@click.argument("grid_file", metavar="GRID.yaml", required=False)
@click.option("--out", "-o", "out", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Run folder: shards, checkpoints, events.jsonl and cube.nc go here.")
@click.option("--resume", is_flag=True, help="Continue the run in DIR: train only unfinished cells.")
@click.option("--force-new", is_flag=True, help="If DIR holds a run, start a new run folder DIR-N.")
@click.option("--retry-failed", is_flag=True, help="Resume, and train failed cells again.")
@click.option("--executor", type=click.Choice(["local", "slurm"]), default="local", show_default=True,
              help="Worker processes here, or a Slurm job array (submitit).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps"]), default="auto", show_default=True)
@click.option("--jobs", type=JOBS, metavar="N|auto", default="auto", show_default=True,
              help="CPU worker processes, or auto: one per engine.cpu_threads cores (with GPUs: one per GPU).")
@click.option("--pack-size", type=click.IntRange(min=1), default=None, help="Cells per packed model.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=1, show_default=True,
              help="Checkpoint each pack every N epochs.")
@click.option("--checkpoint-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Also checkpoint when M minutes passed since the last checkpoint.")
@click.option("--status", "status_dir", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Show the progress of the run in DIR and exit.")
@click.option("--merge", "merge_dir", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Merge the shards of the run in DIR into DIR/cube.nc and exit.")
@click.option("--partition", default=None, help="Slurm partition (overrides the grid's slurm: block).")
@click.option("--gpus-per-job", type=click.IntRange(min=0), default=None, help="Slurm GPUs per array task.")
@click.option("--time-min", type=click.IntRange(min=1), default=None, help="Slurm time limit per task (minutes).")
@click.option("--mem-gb", type=click.IntRange(min=1), default=None, help="Slurm memory per task (GB).")
@click.option("--cpus-per-task", type=click.IntRange(min=1), default=None, help="Slurm CPUs per task.")
@click.option("--array-parallelism", type=click.IntRange(min=1), default=None,
              help="Slurm: at most this many array tasks at once.")
@click.option("--no-wait", is_flag=True, help="Slurm: return after submitting (the last task merges).")
@click.option("--quiet", "-q", "quiet_here", is_flag=True, help="No progress bars or tables (batch jobs).")
def collect(grid_file: str | None, out: Path | None, resume: bool, force_new: bool, retry_failed: bool,
            executor: str, device: str, jobs: int | str, pack_size: int | None, checkpoint_every: int,
            checkpoint_minutes: float | None, status_dir: Path | None, merge_dir: Path | None,
            partition: str | None, gpus_per_job: int | None, time_min: int | None, mem_gb: int | None,
            cpus_per_task: int | None, array_parallelism: int | None, no_wait: bool, quiet_here: bool) -> None:
    """Train a grid into DIR (shards, resumable); write DIR/cube.nc.

    \b
    initmem collect GRID.yaml --out DIR [--resume] [--executor local|slurm] ...
    initmem collect --status DIR
    initmem collect --merge DIR
    """
    if quiet_here:
        Verbosity.level = 0
    if status_dir is not None or merge_dir is not None:
        if status_dir is not None and merge_dir is not None:
            raise UserError("--status and --merge exclude each other")
        if grid_file is not None or out is not None:
            raise UserError("--status DIR and --merge DIR take no GRID.yaml or --out")
        from initmem.collect.run.assemble import corrupt_error, merge_run, print_summary
        from initmem.collect.run.run_folder import RunDir
        from initmem.collect.run.status import render_status, run_status

        if status_dir is not None:
            click.echo(render_status(run_status(status_dir)))
            return
        report = merge_run(merge_dir)
        print_summary(report, RunDir(merge_dir), is_quiet())
        if report.corrupt:
            raise corrupt_error(report, RunDir(merge_dir))
        return
    if grid_file is None or out is None:
        raise UserError("collect needs GRID.yaml and --out DIR (or --status DIR / --merge DIR)")
    from initmem.collect.run.runner import collect as run_collect

    slurm = {"partition": partition, "gpus_per_job": gpus_per_job, "time_min": time_min, "mem_gb": mem_gb,
             "cpus_per_task": cpus_per_task, "array_parallelism": array_parallelism}
    run_collect(grid_file, out, resume=resume, force_new=force_new, retry_failed=retry_failed,
                executor=executor, device=device, jobs=jobs, pack_size=pack_size, quiet=is_quiet(),
                checkpoint_every=checkpoint_every, checkpoint_minutes=checkpoint_minutes, slurm=slurm,
                wait=not no_wait)


# --- analyze and plan (issues 5-6) ---------------------------------------------------------

@app.command()
@click.argument("cube_path", metavar="CUBE.nc", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Analysis folder for posterior.nc and summary.json.")
@click.option("--metric", default=None, help="Run variable to analyze (default: selected_test_acc).")
@click.option("--family", type=SpecChoice("FAMILIES"), default=None,
              help="Likelihood (default: binomial when test counts exist, else gaussian).")
@click.option("--delta", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Smallest spread that matters, in outcome units (default 0.01 = 1 point for accuracies; "
                   "required for other metrics).")
@click.option("--gate", type=SpecChoice("GATES"), default="interpolated", show_default=True,
              help="Fit only runs that reached the interpolation threshold, or every run.")
@click.option("--sampler", type=SpecChoice("SAMPLERS"), default="nutpie", show_default=True)
@click.option("--draws", type=click.IntRange(min=1), default=1000, show_default=True, help="Draws per chain.")
@click.option("--tune", type=click.IntRange(min=0), default=1000, show_default=True, help="Tuning steps per chain.")
@click.option("--chains", type=click.IntRange(min=2), default=4, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampler seed (reproducible results).")
@click.option("--memory", type=SpecChoice("MEMORY_KINDS"), default="radial", show_default=True,
              help="Memory curve used by the collapse test.")
def analyze(cube_path: Path, out_dir: Path, metric: str | None, family: str | None, delta: float | None, gate: str,
            sampler: str, draws: int, tune: int, chains: int, seed: int, memory: str) -> None:
    """Fit the hierarchical memory model; write DIR/posterior.nc and DIR/summary.json."""
    from initmem.analysis import analyze_cube
    from initmem.results import SUMMARY_JSON

    summary = analyze_cube(cube_path, out_dir, metric=metric, family=family, delta=delta, gate=gate,
                           sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed, memory=memory,
                           progress=not is_quiet(), command=["initmem", *sys.argv[1:]])
    d = summary.diagnostics
    echo(f"{summary.metric} ({summary.family}), delta = {summary.delta:g}, gate {summary.gate}; sampler "
         f"{d.sampler}: compile {d.compile_seconds or 0:.1f} s, sampling {d.sampling_seconds or 0:.1f} s"
         + (" (retried)" if d.retried else ""))
    for pipe, p in summary.pipelines.items():
        sp = p.spread
        echo(f"  {pipe:<20} {p.verdict:<13} spread {_g(sp.median)} [{_g(sp.q05)}, {_g(sp.q95)}]  "
             f"P(spread > delta) = {_g(p.p_spread_gt_delta, '.3f')}")
    for pipe, reason in summary.skipped.items():
        echo(f"  {pipe:<20} skipped: {reason}")
    if d.flags:
        echo("diagnostics FAILED: " + "; ".join(d.flags), err=True)
    click.echo(str(Path(out_dir) / SUMMARY_JSON))


@app.command("collapse")
@click.argument("cube_path", metavar="CUBE.nc", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Folder for collapse.json and curves.nc.")
@click.option("--memory", type=click.Choice(["radial", "radial_above", "radial_below", "functional"]),
              default="radial", show_default=True,
              help="Memory curve: radial slope over all sigma_w, over sigma_w >= 1 or <= 1, or val_acc spread.")
@click.option("--fraction", type=float, default=0.5, show_default=True,
              help="Radial memory: forgotten when rho falls to this fraction of its start.")
@click.option("--rope", type=float, default=0.01, show_default=True,
              help="Functional memory: forgotten when the spread falls below this (metric units).")
@click.option("--axes", default=None, metavar="A,B,...", help="Only these clocks (epochs are always kept).")
@click.option("--exponents/--no-exponents", default=True, show_default=True, help="Fit the clock-exponent model.")
@click.option("--tolerance", type=float, default=0.25, show_default=True,
              help="A named clock holds when every fitted exponent lies within this of its prediction.")
@click.option("--n-boot", type=click.IntRange(min=0), default=200, show_default=True, help="Bootstrap replicates.")
@click.option("--seed", type=int, default=0, show_default=True)
def collapse(cube_path: Path, out_dir: Path, memory: str, fraction: float, rope: float, axes: str | None,
             exponents: bool, tolerance: float, n_boot: int, seed: int) -> None:
    """The collapse test, forgetting times and clock exponents, without the memory model."""
    from initmem.stats.collapse_run import collapse_main
    collapse_main(cube_path, out_dir, memory=memory, fraction=fraction, rope=rope,
                  axes=[a.strip() for a in axes.split(",") if a.strip()] if axes else None,
                  exponents=exponents, tolerance=tolerance, n_boot=n_boot, seed=seed, say=echo)


def _shape(ds: object) -> str:
    """'P pipeline(s) x L sigma_w x S seed(s)' of a cube."""
    from initmem import cube

    n = ds.sizes  # type: ignore[attr-defined]
    return f"{n[cube.PIPELINE]} pipeline(s) x {n[cube.SIGMA]} sigma_w x {n[cube.SEED]} seed(s)"


def _g(v: float | None, spec: str = ".4g") -> str:
    """A statistic for the terminal; '-' when it could not be computed (null in summary.json)."""
    return "-" if v is None else format(v, spec)


@app.command()
@click.argument("analysis_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--delta", type=float, default=None, help="Smallest spread that matters (default: the analysis's).")
@click.option("--n-sim", type=click.IntRange(min=10), default=200, show_default=True,
              help="Simulated experiments per seed count.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(analysis_dir: Path, delta: float | None, n_sim: int, seed: int, as_json: bool) -> None:
    """Seeds per cell needed for a decisive verdict (80% probability), per pipeline."""
    from initmem.models.plan import plan as make_plan
    from initmem.models.plan import render_table

    result = make_plan(analysis_dir, delta, n_sim=n_sim, seed=seed)
    click.echo(json.dumps(result, indent=2) if as_json else render_table(result))


# --- report and run (issue 7) --------------------------------------------------------------

@app.command()
@click.argument("analysis_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_file", metavar="FILE", type=click.Path(path_type=Path), default=None,
              help="Where to write the HTML report (default DIR/report.html).")
def report(analysis_dir: Path, out_file: Path | None) -> None:
    """Write the self-contained HTML report of an analysis folder; print its path."""
    from initmem.reports.html import build_report

    click.echo(str(build_report(analysis_dir, out_file)))


@app.command("run")
@click.argument("grid_file", metavar="GRID.yaml", required=False)
@click.option("--preset", default=None, metavar="NAME",
              help="A packaged grid instead of GRID.yaml: quick (default), paper, clocks or arms.")
@click.option("--out", "-o", "out", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Run folder for cube.nc, analysis/ and report.html (default runs/<grid name>).")
@click.option("--jobs", type=JOBS, metavar="N|auto", default="auto", show_default=True,
              help="CPU worker processes, or auto: one per engine.cpu_threads cores.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps"]), default="auto", show_default=True)
@click.option("--reanalyze", is_flag=True, help="Redo the analysis even if it is newer than the cube.")
@click.option("--draws", type=click.IntRange(min=50), default=None, help="Posterior draws per chain.")
@click.option("--chains", type=click.IntRange(min=1), default=None, help="Sampler chains.")
def run_(grid_file: str | None, preset: str | None, out: Path | None, jobs: int | str, device: str, reanalyze: bool,
         draws: int | None, chains: int | None) -> None:
    """Collect (resumably), analyze and report in one go; print where the report is.

    \b
    initmem run --preset quick
    initmem run GRID.yaml --out runs/mine
    """
    from rich.console import Console

    from initmem.reports.html import default_command
    from initmem.run_all import resolve_grid, run_all

    console = Console(highlight=False, soft_wrap=True)

    def say(msg: str) -> None:
        if not is_quiet():
            console.print(msg, style="bold" if msg.startswith("[") else None, markup=False)

    options = {k: v for k, v in (("draws", draws), ("chains", chains)) if v is not None}
    result = run_all(resolve_grid(grid_file, preset), out, jobs=jobs, device=device, reanalyze=reanalyze,
                     analyze_options=options, quiet=is_quiet(), say=say, command=default_command())
    total = sum(result.seconds.values())
    echo("stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in result.seconds.items()) + f"; total {total:.1f}")
    click.echo(str(result.report))



def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input -> exit 2 with one line; an internal fault -> exit 1."""
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The commands that make a cube: ``initmem import`` (runs made elsewhere), ``initmem simulate`` (a
known truth) and ``initmem collect`` (train a grid). Registered on the group by cli/main.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from initmem.cli.output import Verbosity, echo, is_quiet, shape
from initmem.cli.params import JOBS, SEED, CubeNameChoice, FiniteFloatRange, SpecChoice, TruthAxisChoice
from initmem.errors import UserError

if TYPE_CHECKING:
    from initmem.importers.source import Scale, SeedDesign, SourceFormat

# --- import ------------------------------------------------------------------------------

@click.command("import")
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
@click.option("--force", is_flag=True, help="Replace CUBE.nc when it holds something else (a cube of another source).")
def import_(source: Path, out: Path, seeds: SeedDesign | None, fmt: SourceFormat, n_test: int | None, scale: Scale,
            metric_col: tuple[str, ...], ignore_col: tuple[str, ...], pipeline_col: str | None,
            sigma_col: str | None, seed_col: str | None, mapping: Path | None, nan_as_missing: bool,
            n_train: int | None, force: bool) -> None:
    """Turn runs made elsewhere into a cube: a long table (pipeline, sigma_w, seed, [epoch], metrics)
    or a tracker export (docs/import.md)."""
    from initmem.importers.source import import_table

    held = _other_cube(out, source)
    if held and not force:
        raise click.UsageError(f"{out} holds {held}; give another --out, or --force to replace it")

    # No --seeds: import_table reads the source first, then says what each design means (seeds_help).
    result = import_table(source, out, seeds=seeds, format=fmt, n_test=n_test,  # type: ignore[arg-type]
                          scale=scale, metric_cols=metric_col, ignore_cols=ignore_col, pipeline_col=pipeline_col,
                          sigma_col=sigma_col, seed_col=seed_col, mapping=mapping, nan_as_missing=nan_as_missing,
                          n_train=n_train)
    for note in result.notes:
        echo(f"  {note}")
    echo(f"wrote {out}: {shape(result.dataset)}")


def _other_cube(out: Path, source: Path) -> str | None:
    """What ``out`` holds that importing ``source`` would replace: a cube imported from another source, or a file
    that is not a cube of this command; None when absent or imported from the same source (a rerun stays
    idempotent)."""
    if not out.is_file() or out.suffix != ".nc" or out.resolve() == Path(source).resolve():
        return None       # absent, or refused by the import's own checks of the output path
    import xarray as xr

    from initmem import cube

    try:
        with xr.open_dataset(out) as ds:
            made = ds.attrs.get(cube.A_SOURCE)
    except (OSError, ValueError):
        return "a file that is not a cube"
    if made != f"initmem import {source}":
        return f"a cube of another source ({made or 'not recorded'})"
    return None


# --- simulate ----------------------------------------------------------------------------

# The options that describe the pipelines themselves, which a preset fixes.
_PIPELINE_FLAGS = ("pipelines", "n_sigma", "n_seed", "sigma_sd", "seed_sd", "residual_sd", "family")

@click.command()
@click.option("--out", "-o", default=None, metavar="CUBE.nc", type=click.Path(path_type=Path),
              help="Where to write the simulated cube (required unless --list-presets).")
@click.option("--preset", default=None, help="A named scenario (see --list-presets).")
@click.option("--list-presets", is_flag=True, help="List the presets and exit.")
@click.option("--pipelines", type=click.IntRange(min=1), default=3, show_default=True,
              help="Number of pipelines (without --preset).")
@click.option("--n-sigma", type=click.IntRange(min=1), default=6, show_default=True,
              help="sigma_w levels, log-spaced from 1/4 to 8.")
@click.option("--n-seed", type=click.IntRange(min=1), default=4, show_default=True, help="Seeds per cell.")
@click.option("--sigma-sd", type=FiniteFloatRange(min=0), default=0.3, show_default=True,
              help="SD of the sigma_w-level effects (logit scale for binomial).")
@click.option("--seed-sd", type=FiniteFloatRange(min=0), default=0.1, show_default=True,
              help="SD of the seed effects shared across sigma_w.")
@click.option("--residual-sd", type=FiniteFloatRange(min=0), default=0.1, show_default=True,
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
@click.option("--seed", type=SEED, default=0, show_default=True, help="Random seed of the simulation.")
def simulate(out: Path | None, preset: str | None, list_presets: bool, pipelines: int, n_sigma: int, n_seed: int,
             sigma_sd: float, seed_sd: float, residual_sd: float, family: str, n_test: int, curves: bool,
             truth_axis: str, epochs: int, seed: int) -> None:
    """Make a cube with a known truth (stored in its 'truth' attribute)."""
    from initmem import cube
    from initmem.simulate import DESIGNS, SimPipeline, preset_pipelines, simulate_cube

    if list_presets:
        for name, (desc, _) in DESIGNS.items():
            click.echo(f"{name:<16} {desc}")
        return
    if out is None:
        raise UserError("simulate needs --out CUBE.nc (where to write the cube)")
    if preset is not None:
        ctx = click.get_current_context()
        given = [f"--{name.replace('_', '-')}" for name in _PIPELINE_FLAGS
                 if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE]
        if given:
            raise UserError(f"--preset {preset} fixes its own pipelines; {', '.join(given)} apply only without "
                            "--preset")
        specs = preset_pipelines(preset)
    else:
        specs = [SimPipeline(name=f"p{i}", sigma_sd=sigma_sd, seed_sd=seed_sd, residual_sd=residual_sd,
                             family=family, n_sigma=n_sigma, n_seed=n_seed) for i in range(pipelines)]
    ds = simulate_cube(specs, n_test=n_test, curves=curves, truth_axis=truth_axis, epochs=epochs, seed=seed)
    cube.write_cube(ds, out)
    echo(f"wrote {out}: {shape(ds)}; the truth is in its '{cube.A_TRUTH}' attribute")


# --- collect -----------------------------------------------------------------------------

@click.command()
@click.argument("grid_file", metavar="GRID.yaml", required=False)
@click.option("--out", "-o", "out", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Grid folder: shards, checkpoints, events.jsonl and cube.nc go here.")
@click.option("--resume", is_flag=True, help="Continue the training in DIR: train only unfinished cells.")
@click.option("--force-new", is_flag=True, help="If DIR holds a training, start a new grid folder DIR-N.")
@click.option("--retry-failed", is_flag=True, help="Resume, and train failed cells again.")
@click.option("--executor", type=click.Choice(["local", "slurm"]), default="local", show_default=True,
              help="Worker processes here, or a Slurm job array (submitit).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps"]), default="auto", show_default=True,
              help="Where to train: auto picks a GPU when there is one.")
@click.option("--jobs", type=JOBS, metavar="N|auto", default="auto", show_default=True,
              help="CPU worker processes, or auto: one per engine.cpu_threads cores (with GPUs: one per GPU).")
@click.option("--pack-size", type=click.IntRange(min=1), default=None, help="Cells per packed model.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=1, show_default=True,
              help="Checkpoint each pack every N epochs.")
@click.option("--checkpoint-minutes", type=FiniteFloatRange(min=0, min_open=True), default=None,
              help="Also checkpoint when M minutes passed since the last checkpoint.")
@click.option("--status", "status_dir", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Show the progress of the training in DIR and exit.")
@click.option("--merge", "merge_dir", metavar="DIR", type=click.Path(path_type=Path), default=None,
              help="Merge the shards in DIR into DIR/cube.nc and exit.")
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
    initmem collect GRID.yaml --out DIR [--resume --executor local|slurm ...]
    initmem collect --status DIR
    initmem collect --merge DIR
    """
    if quiet_here:
        if Verbosity.level == 2:   # as the global flags: --verbose asks for the tracebacks --quiet would hide
            raise UserError("--quiet and --verbose exclude each other")
        Verbosity.level = 0
    if status_dir is not None or merge_dir is not None:
        if status_dir is not None and merge_dir is not None:
            raise UserError("--status and --merge exclude each other")
        if grid_file is not None or out is not None:
            raise UserError("--status DIR and --merge DIR take no GRID.yaml or --out")
        given = [flag for flag, on in (("--resume", resume), ("--force-new", force_new),
                                       ("--retry-failed", retry_failed)) if on]
        if given:
            raise UserError(f"--status DIR and --merge DIR only read the run; {' and '.join(given)} "
                            f"{'apply' if len(given) > 1 else 'applies'} to training (GRID.yaml --out DIR)")
        from initmem.collect.execution.assemble import corrupt_error, merge_folder, print_summary
        from initmem.collect.execution.grid_folder import GridFolder
        from initmem.collect.execution.status import folder_status, render_status

        if status_dir is not None:
            click.echo(render_status(folder_status(status_dir)))
            return
        report = merge_folder(merge_dir)
        print_summary(report, GridFolder(merge_dir), is_quiet())
        if report.corrupt:
            raise corrupt_error(report, GridFolder(merge_dir))
        return
    if grid_file is None or out is None:
        raise UserError("collect needs GRID.yaml and --out DIR (or --status DIR / --merge DIR)")
    from initmem.collect.execution import runner
    from initmem.collect.execution.options import CollectOptions

    slurm = {"partition": partition, "gpus_per_job": gpus_per_job, "time_min": time_min, "mem_gb": mem_gb,
             "cpus_per_task": cpus_per_task, "array_parallelism": array_parallelism}
    options = CollectOptions.of(resume=resume, force_new=force_new, retry_failed=retry_failed, executor=executor,
                                device=device, jobs=jobs, pack_size=pack_size, quiet=is_quiet(),
                                checkpoint_every=checkpoint_every, checkpoint_minutes=checkpoint_minutes,
                                slurm=slurm, wait=not no_wait)
    runner.collect(grid_file, out, options)

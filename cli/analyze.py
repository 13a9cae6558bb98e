"""The commands that read a cube: ``initmem analyze`` (the memory model), ``initmem collapse`` (the
collapse test alone) and ``initmem plan`` (seeds needed). Their options are fields of one
``AnalysisSpec`` (results/spec.py), validated where the library starts; a bad value comes back as an
``OptionError`` naming the option, which cli/main.py prints with the flag. Registered on the group by cli/main.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from initmem.cli.output import check_not_grid_folder, echo, fmt_stat, is_quiet
from initmem.cli.params import LOOKS, MARGIN, SEED, SHAPE, SpecChoice, check_margin

# --- analyze and plan ---------------------------------------------------------------------

def other_output(out_dir: Path, cube_path: Path) -> str | None:
    """What ``out_dir`` holds that an analysis of ``cube_path`` would overwrite: the analysis of another cube, or
    files that are not an analysis; None for a folder that is absent, empty, or the same cube's analysis (a rerun
    stays idempotent)."""
    from initmem.results import SUMMARY_JSON

    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return None
    summary = out_dir / SUMMARY_JSON
    if not summary.is_file():
        return "files that are not an analysis"
    try:
        cube = json.loads(summary.read_text()).get("cube")
    except (OSError, ValueError):
        return "an unreadable summary.json"
    if cube is None or Path(cube).resolve() != Path(cube_path).resolve():
        return f"the analysis of another cube ({cube})"
    return None


@click.command()
@click.argument("cube_path", metavar="CUBE.nc", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Analysis folder for posterior.nc and summary.json.")
@click.option("--metric", default=None, help="Run variable to analyze (default: selected_test_acc).")
@click.option("--family", type=SpecChoice("FAMILIES"), default=None,
              help="Noise scale of the Gaussian likelihood: binomial (the test counts' binomial bound; the default "
                   "when counts exist) or gaussian (the pooled seed SD).")
@click.option("--delta", type=MARGIN, default=None,
              help="Smallest spread that matters: accuracy points (2pt) or the metric's units (0.02 = 2 points for "
                   "an accuracy; default 1pt for accuracies, required for other metrics).")
@click.option("--draw-margin", type=MARGIN, default=None,
              help="Crossed seed designs: the SD of the initial draw's effect that matters, in points (0.5pt) or "
                   "the metric's units (default 0.5pt for accuracies; no draw verdict for other metrics without it).")
@click.option("--gate", type=SpecChoice("GATES"), default="interpolated", show_default=True,
              help="Fit only runs that reached the interpolation threshold, or every run.")
@click.option("--sampler", type=SpecChoice("SAMPLERS"), default="nutpie", show_default=True,
              help="The NUTS sampler of the memory model.")
@click.option("--draws", type=click.IntRange(min=1), default=1000, show_default=True, help="Draws per chain.")
@click.option("--tune", type=click.IntRange(min=0), default=1000, show_default=True, help="Tuning steps per chain.")
@click.option("--chains", type=click.IntRange(min=2), default=4, show_default=True,
              help="Chains to sample (R-hat needs several).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Sampler seed (reproducible results).")
@click.option("--memory", type=SpecChoice("MEMORY_KINDS"), default="radial", show_default=True,
              help="Memory curve used by the collapse test.")
@click.option("--compile-shape", type=SHAPE, default=None,
              help="Compile the memory model for at least this shape (0: the cube's own size), so that smaller "
                   "cubes share one compiled sampler; the posterior is the same, only the draws differ.")
@click.option("--force", is_flag=True,
              help="Replace DIR whole when it holds something else (another cube's analysis, other files).")
def analyze(cube_path: Path, out_dir: Path, metric: str | None, family: str | None, delta: float | None,
            draw_margin: float | None, gate: str, sampler: str, draws: int, tune: int, chains: int, seed: int,
            memory: str, compile_shape: tuple[int, int, int] | None, force: bool) -> None:
    """Fit the hierarchical memory model; write DIR/posterior.nc and DIR/summary.json."""
    from initmem.analysis import analyze_cube
    from initmem.results import SUMMARY_JSON

    held = other_output(out_dir, cube_path)
    if held and not force:
        raise click.UsageError(f"{out_dir} holds {held}; give another --out, or --force to replace the folder whole")

    if delta is not None or draw_margin is not None:    # the unit, before anything is fitted
        from initmem.cube import open_cube
        from initmem.models.data import choose_metric

        chosen = choose_metric(open_cube(cube_path), metric)
        check_margin(chosen, delta, "--delta")
        check_margin(chosen, draw_margin, "--draw-margin")
    summary = analyze_cube(cube_path, out_dir, metric=metric, family=family, delta=delta,
                           draw_margin=draw_margin, gate=gate, sampler=sampler, draws=draws, tune=tune,
                           chains=chains, seed=seed, memory=memory, compile_shape=compile_shape,
                           progress=not is_quiet(), command=["initmem", *sys.argv[1:]], replace=force)
    d = summary.diagnostics
    points = bool(summary.is_accuracy)      # an accuracy speaks in points, as the report does

    def shown(v: float | None) -> str:
        return fmt_stat(None if v is None else 100 * v, ".2f") if points else fmt_stat(v)

    unit = " points" if points else ""
    echo(f"{summary.metric}, delta = {shown(summary.delta)}{unit}, gate {summary.gate}; sampler "
         f"{d.sampler}: compile {d.compile_seconds or 0:.1f} s, sampling {d.sampling_seconds or 0:.1f} s"
         + (" (retried)" if d.retried else ""))
    echo(f"  model: {summary.likelihood_label or summary.family}")
    for pipe, p in summary.pipelines.items():
        sp = p.spread
        echo(f"  {pipe:<20} {p.marked_verdict:<22} spread {shown(sp.median)} [{shown(sp.q05)}, {shown(sp.q95)}]{unit}  "
             f"P(spread > delta) = {fmt_stat(p.p_spread_gt_delta, '.3f')}")
    for pipe, reason in summary.skipped.items():
        echo(f"  {pipe:<20} skipped: {reason}")
    if d.flags:
        echo("diagnostics FAILED: " + "; ".join(d.flags) + " (those pipelines' verdicts rest on the seeds' "
             "design-based tests alone)", err=True)
    click.echo(str(Path(out_dir) / SUMMARY_JSON))


@click.command("collapse")
@click.argument("cube_path", metavar="CUBE.nc", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Folder for collapse.json and curves.nc.")
@click.option("--memory", type=SpecChoice("MEMORY_KINDS"), default="radial", show_default=True,
              help="Memory curve: radial slope over all sigma_w, over sigma_w >= 1 or <= 1, or val_acc spread.")
@click.option("--fraction", type=float, default=None,
              help="Radial memory: forgotten when rho falls to this fraction of its start (default 0.5).")
@click.option("--rope", type=float, default=None,
              help="Functional memory: forgotten when the spread falls below this, in metric units (default 0.01).")
@click.option("--axes", default=None, metavar="A,B,...",
              help="Only these clocks (epochs and step always stay; a clock outside the default family, such as "
                   "T_wd, joins it when named).")
@click.option("--exponents/--no-exponents", default=True, show_default=True, help="Fit the clock-exponent model.")
@click.option("--tolerance", type=float, default=None,
              help="A named clock holds when every fitted exponent lies within this of its prediction (default 0.25).")
@click.option("--n-boot", type=click.IntRange(min=0), default=200, show_default=True, help="Bootstrap replicates.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed (reproducible results).")
def collapse(cube_path: Path, out_dir: Path, memory: str, fraction: float | None, rope: float | None,
             axes: str | None, exponents: bool, tolerance: float | None, n_boot: int, seed: int) -> None:
    """The collapse test, forgetting times and clock exponents, without the memory model.

    The options are AnalysisSpec fields (results/spec.py), checked there before the cube is read."""
    from initmem.analysis.collapse import collapse_main

    collapse_main(cube_path, out_dir, memory=memory, fraction=fraction, rope=rope,
                  axes=None if axes is None else tuple(a.strip() for a in axes.split(",") if a.strip()),
                  exponents=exponents, tolerance=tolerance, n_boot=n_boot, seed=seed, say=echo)


@click.command()
@click.argument("analysis_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--delta", type=MARGIN, default=None,
              help="Smallest spread that matters: accuracy points (2pt) or the metric's units (default: the "
                   "analysis's).")
@click.option("--n-sim", type=click.IntRange(min=10), default=None,
              help="Simulated experiments per seed count (default 200; for a crossed design's draw plan, 4000 "
                   "tables per init seed count).")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the simulated experiments (reproducible plans).")
@click.option("--looks", type=LOOKS, default="4,8,12,16", show_default=True,
              help="The sequential design to plan for (initmem run --until-decided --looks).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan(analysis_dir: Path, delta: float | None, n_sim: int | None, seed: int, looks: list[int],
         as_json: bool) -> None:
    """Seeds per cell needed for a decisive verdict (80% probability), per pipeline, and what the
    sequential design at --looks would spend. For an analysis of a crossed seed design: the init seeds
    needed for a decided draw verdict (docs/crossed.md)."""
    from initmem.analysis.sequential import check_looks
    from initmem.models.plan import plan as make_plan
    from initmem.models.plan import render_table
    from initmem.results import load_summary

    check_not_grid_folder(analysis_dir)
    stored = load_summary(analysis_dir)
    check_margin(stored.metric, delta, "--delta")
    if stored.crossed is not None:
        from initmem.stats.crossed_plan import plan_draw, render_draw_plan

        given = click.get_current_context().get_parameter_source("looks") != click.core.ParameterSource.DEFAULT
        if delta is not None or given:
            raise click.UsageError(f"{'--delta' if delta is not None else '--looks'} plans the scale verdict; a "
                                   "crossed design's plan is for the draw verdict, at the analysis's draw margin")
        draw = plan_draw(analysis_dir, n_sim=4000 if n_sim is None else n_sim, seed=seed)
        click.echo(json.dumps(draw, indent=2) if as_json else render_draw_plan(draw))
        return
    looks = check_looks(looks, None)
    result = make_plan(analysis_dir, delta, n_sim=200 if n_sim is None else n_sim, seed=seed, looks=tuple(looks))
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(render_table(result))
        click.echo("sequential: initmem run GRID --until-decided --looks " + ",".join(map(str, looks)))

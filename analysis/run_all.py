"""``initmem run``: collect, analyze and report in one go, with a progress line per stage.

The three stages write into one folder: ``DIR/cube.nc`` (collect, resumable: rerunning the
command trains only unfinished cells), ``DIR/analysis/`` (analyze; reused while the cube's contents
and the analysis options are unchanged) and ``DIR/report.html``. Stage timings go to ``DIR/timings.json`` so
``benchmarks/end_to_end.py`` can report seconds per stage.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from initmem import cube as C
from initmem import results as R
from initmem.analysis.sequential import check_looks, fixed_analysis_note, run_until_decided
from initmem.errors import UserError, option
from initmem.jsonio import write_json

STAGES = ("collect", "analyze", "report")


@dataclass
class RunResult:
    """Where everything went and how long each stage took (seconds)."""

    out_dir: Path
    cube: Path
    analysis_dir: Path
    report: Path
    seconds: dict[str, float] = field(default_factory=dict)
    reused: dict[str, bool] = field(default_factory=dict)


def resolve_grid(grid_file: str | None, preset: str | None) -> Path:
    """GRID.yaml or --preset NAME (exactly one; neither means the quick preset)."""
    from initmem.grid import resolve_preset

    if grid_file is not None and preset is not None:
        raise UserError(f"give either GRID.yaml or {option('preset', 'NAME')}, not both")
    if grid_file is None:
        return resolve_preset(preset or "quick")
    path = Path(grid_file)
    if not path.is_file():
        raise UserError(f"no such grid file: {path}")
    return path


STATE_FILE = "run_state.json"


def cube_digest(cube_path: Path) -> str:
    """SHA-256 of a cube's contents (coordinates, variables, attributes but 'created').

    Collecting again re-merges the cube even when nothing new trained, so the file's time and
    bytes may change while its contents do not; this digest only changes with the contents.
    """
    from initmem.cube import open_cube

    ds = open_cube(cube_path, check=False)
    h = hashlib.sha256()
    for name in sorted(map(str, ds.variables)):
        var = ds[name]
        h.update(f"{name}{var.dims}{var.dtype}".encode())
        values = var.values
        h.update(("\x1f".join(map(str, values.ravel().tolist()))).encode() if values.dtype.kind == "O"
                 else np.ascontiguousarray(values).tobytes())
    for k in sorted(ds.attrs):
        if k != C.A_CREATED:
            h.update(f"{k}={ds.attrs[k]!r}".encode())
    return h.hexdigest()


def analysis_is_current(out_dir: Path, cube_path: Path, options: dict[str, Any]) -> bool:
    """The analysis in DIR/analysis was made from this very cube with these options, by this initmem
    (an analysis folder of an older schema is redone, not reused)."""
    state_path = out_dir / STATE_FILE
    if not (out_dir / R.RUN_ANALYSIS_DIR / R.SUMMARY_JSON).is_file() or not state_path.is_file():
        return False
    try:
        R.load_summary(out_dir / R.RUN_ANALYSIS_DIR)
    except UserError:
        return False
    try:
        state = json.loads(state_path.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    from initmem import __version__

    return (state.get("cube_sha256") == cube_digest(cube_path) and state.get("analyze_options") == options
            and state.get("initmem") == __version__)


def run_all(
    grid_path: Path,
    out_dir: Path | None = None,
    *,
    jobs: int | str = 1,
    device: str = "auto",
    reanalyze: bool = False,
    analyze_options: dict[str, Any] | None = None,
    quiet: bool = False,
    say: Callable[[str], None] | None = None,
    command: str | None = None,
    train_fn: Callable[..., Any] | None = None,
    analyze_fn: Callable[..., Any] | None = None,
    looks: Sequence[int] | None = None,
    max_seeds: int | None = None,
) -> RunResult:
    """Collect (resumably), analyze and report ``grid_path`` into ``out_dir`` (default runs/NAME).

    ``train_fn`` replaces the training engine and ``analyze_fn`` the analysis (default
    :func:`initmem.analysis.analyze_cube`): tests use fast deterministic stand-ins. With ``looks`` (seed
    counts, e.g. 4, 8, 12, 16) the run is sequential (analysis/sequential.py, docs/sequential.md): seeds
    are added only to pipelines still undecided, up to ``max_seeds``.
    """
    from initmem.grid import load_grid
    from initmem.results.spec import AnalysisSpec

    AnalysisSpec.of(**(analyze_options or {}))  # a bad analysis option fails now, not after the training
    grid = load_grid(grid_path)
    if looks is not None:
        looks = check_looks(looks, max_seeds)
    out = Path(out_dir) if out_dir is not None else Path("runs") / grid.name
    analysis_dir = out / R.RUN_ANALYSIS_DIR
    report_path = out / R.REPORT_HTML
    say = say or (lambda _msg: None)
    seconds: dict[str, float] = {}
    reused: dict[str, bool] = {}

    def stage(i: int, name: str, what: str) -> float:
        say(f"[{i}/3] {name}: {what}")
        return time.perf_counter()

    from initmem.collect.run.runner import collect as _collect

    def collect(*args: Any, **kwargs: Any) -> Any:
        try:
            return _collect(*args, **kwargs)
        except UserError as exc:
            raise _for_run(exc, out) from None

    if analyze_fn is None:
        from initmem.analysis.run import analyze_cube as analyze_fn
    if looks is not None:
        note = fixed_analysis_note(analysis_dir)
        if note:
            say(note)
        t0 = stage(1, "collect + analyze", f"looks at {', '.join(map(str, looks))} seeds into {out} (resumable)")

        def collect_look(g: Any, folder: Path, only: set) -> Path:
            return Path(collect(g, folder, resume=True, device=device, jobs=jobs, quiet=quiet, progress=not quiet,
                                train_fn=train_fn, only=only))

        def analyze_look(cube_path: Path, folder: Path, **opts: Any) -> Any:
            return analyze_fn(cube_path, folder, progress=not quiet, **opts)

        cube_path, analysis_dir, record = run_until_decided(
            grid, out, looks=looks, collect_fn=collect_look, analyze_fn=analyze_look,
            analyze_options=dict(analyze_options or {}), say=say, max_seeds=max_seeds)
        (out / STATE_FILE).unlink(missing_ok=True)  # it vouched for a fixed analysis, which this one replaced
        seconds["collect + analyze"] = time.perf_counter() - t0
        say(f"      decided {len(record['decided'])} of {len(grid.pipelines)} pipelines with "
            f"{record['runs_used']} runs (a fixed design: {record['runs_fixed']})")
        return _report(analysis_dir, report_path, out, cube_path, seconds, reused, stage, say, command)

    _refuse_fewer_seeds_than_a_sequential_run(grid, out, analysis_dir)
    t0 = stage(1, "collect", f"training grid '{grid.name}' into {out} (resumable)")

    cube_path = Path(collect(grid, out, resume=True, device=device, jobs=jobs, quiet=quiet, progress=not quiet,
                             train_fn=train_fn))
    seconds["collect"] = time.perf_counter() - t0
    say(f"      collect done in {seconds['collect']:.1f} s: {cube_path}")

    options = dict(analyze_options or {})
    sequential = sequential_files(analysis_dir)
    if sequential:
        say(f"note: {analysis_dir} holds a sequential analysis ({option('until_decided', True)}); this fixed "
            f"design re-decides every pipeline at alpha 0.05 and replaces it, and its looks move to "
            f"{out / SEQUENTIAL_ASIDE}. Report one design's verdicts, not a mix (docs/sequential.md, "
            "\"One design's verdicts\").")
    if not sequential and not reanalyze and analysis_is_current(out, cube_path, options):
        say(f"[2/3] analyze: {analysis_dir} was made from this cube; reusing it ({option('reanalyze', True)} to redo)")
        seconds["analyze"] = 0.0
        reused["analyze"] = True
    else:
        t0 = stage(2, "analyze", f"fitting the memory model and the collapse test into {analysis_dir}")
        analyze_fn(cube_path, analysis_dir, progress=not quiet, **options)
        from initmem import __version__

        write_json(out / STATE_FILE, {"cube_sha256": cube_digest(cube_path), "analyze_options": options,
                                      "initmem": __version__})
        seconds["analyze"] = time.perf_counter() - t0
        reused["analyze"] = False
        if sequential:
            set_sequential_aside(out, sequential)
        say(f"      analyze done in {seconds['analyze']:.1f} s")

    return _report(analysis_dir, report_path, out, cube_path, seconds, reused, stage, say, command)


def _refuse_fewer_seeds_than_a_sequential_run(grid: Any, out: Path, analysis_dir: Path) -> None:
    """A fixed run over a sequential one whose looks went past the grid's seeds: say what the folder holds and
    the three ways on, instead of collect's "the grid file differs ... seeds (removed ...)"."""
    from initmem.collect.run.run_folder import RunDir

    run = RunDir(out)
    if not (sequential_files(analysis_dir) and run.exists() and run.grid_file.is_file()):
        return
    added = [s for s in run.load_grid().seeds if s not in grid.seeds]
    if added:
        listed = ", ".join(map(str, sorted({*grid.seeds, *added})))
        raise UserError(f"{out} holds a sequential run ({option('until_decided', True)}) whose looks added seeds "
                        f"{', '.join(map(str, added))} beyond the grid's; to continue that design run again with "
                        f"{option('until_decided', True)}, for a fixed design on every seed it trained list them "
                        f"in the grid (seeds: [{listed}]), or give another run folder "
                        f"({option('out', f'{out}-2')})")


SEQUENTIAL_ASIDE = "sequential-previous"  # a replaced sequential analysis's looks, beside the run's analysis


def sequential_files(analysis_dir: Path) -> list[Path]:
    """What a sequential run (analysis/sequential.py) leaves in the analysis folder beside its summary: its
    record, the last look's mark and every look's analysis."""
    from initmem.analysis.sequential import LOOK_JSON, SEQUENTIAL_JSON

    return [p for p in (analysis_dir / SEQUENTIAL_JSON, analysis_dir / LOOK_JSON, analysis_dir / "looks")
            if p.exists()]


def set_sequential_aside(out: Path, paths: list[Path]) -> Path:
    """Move a replaced sequential analysis's files to ``out/sequential-previous`` (an earlier such folder is
    replaced), so the analysis folder holds the fixed analysis alone and a later sequential run starts anew."""
    import shutil

    aside = out / SEQUENTIAL_ASIDE
    if aside.exists():
        shutil.rmtree(aside)
    aside.mkdir(parents=True)
    for path in paths:
        shutil.move(str(path), str(aside / path.name))
    return aside


def _for_run(exc: UserError, out: Path) -> UserError:
    """A collect error worded for ``initmem run``: run has no --force-new; a new run folder is another --out."""
    msg = str(exc)
    flag = option("force_new", True)
    if flag not in msg:
        return exc
    other = option("out", f"{out}-2")
    for old, new in ((f"use {flag} for a new run folder", f"give another run folder ({other})"),
                     (f"or {flag} to start a new run folder", f"or give another run folder ({other})"),
                     (f"start anew with {flag}", f"start anew in another run folder ({other})")):
        msg = msg.replace(old, new)
    msg = msg.replace(flag, other)
    return type(exc)(msg) if type(exc) is UserError else UserError(msg)


def _report(analysis_dir: Path, report_path: Path, out: Path, cube_path: Path, seconds: dict[str, float],
            reused: dict[str, bool], stage: Callable[[int, str, str], float], say: Callable[[str], None],
            command: str | None) -> RunResult:
    """The last stage: the report, and the timings of every stage."""
    t0 = stage(3, "report", f"writing {report_path}")
    from initmem.reports.html import build_report

    build_report(analysis_dir, report_path, command=command)
    seconds["report"] = time.perf_counter() - t0
    say(f"      report done in {seconds['report']:.1f} s")
    write_json(out / "timings.json", {"seconds": seconds, "reused": reused})
    return RunResult(out_dir=out, cube=cube_path, analysis_dir=analysis_dir, report=report_path,
                     seconds=seconds, reused=reused)

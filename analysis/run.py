"""``initmem run``: collect, analyze and report in one go, with a progress line per stage.

:func:`run` is the public face (``initmem.run``, the command line's ``initmem run``); :func:`run_all` takes the
resolved grid and the stand-ins tests use, and calls one function per step: collect (:func:`_collect`), analyze
(:func:`_analyze`) or both look by look (:func:`_collect_and_analyze_by_looks`), then report (:func:`_report`).

The three stages write into one folder: ``DIR/cube.nc`` (collect, resumable: rerunning the
command trains only unfinished cells), ``DIR/analysis/`` (analyze; reused while the cube's contents
and the analysis options are unchanged) and ``DIR/report.html``. Stage timings go to ``DIR/timings.json`` so
``benchmarks/end_to_end.py`` can report seconds per stage.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from initmem import cube as C
from initmem import results as R
from initmem.analysis.sampler_warmup import SamplerWarmup, warm_shape
from initmem.analysis.sequential import check_looks, fixed_analysis_note, refuse_crossed, run_until_decided
from initmem.collect.execution.options import CollectOptions
from initmem.errors import OptionError, UserError, option
from initmem.jsonio import write_json
from initmem.results.spec import AnalysisSpec

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
        from initmem.grid import PRESETS

        hint = (f"; the packaged grid of that name is {option('preset', path.stem)}" if path.stem in PRESETS else
                f" (or a packaged grid: {option('preset', 'NAME')}, NAME one of {', '.join(PRESETS)})")
        raise UserError(f"no such grid file: {path}{hint}")
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
    from initmem.version import __version__

    return (state.get("cube_sha256") == cube_digest(cube_path) and state.get("analyze_options") == options
            and state.get("initmem") == __version__)


def run(grid: str | os.PathLike | None = None, out_dir: str | os.PathLike | None = None, *,
        preset: str | None = None, jobs: int | Literal["auto"] = "auto", device: str = "auto",
        reanalyze: bool = False, spec: AnalysisSpec | None = None, until_decided: bool | None = None,
        looks: Sequence[int] | None = None, max_seeds: int | None = None, quiet: bool = False,
        say: Callable[[str], None] | None = None, command: str | None = None) -> RunResult:
    """Collect (resumably), analyze and report a grid in one go: what ``initmem run`` does.

    Everything goes into one grid folder: ``cube.nc`` (rerunning trains only the unfinished cells),
    ``analysis/`` (reused while the cube's contents, the analysis options and initmem's version are unchanged)
    and ``report.html``; the stage timings go to ``timings.json``.

    Parameters
    ----------
    grid : str or os.PathLike, optional
        A grid YAML file (docs/collect.md). Give ``grid`` or ``preset``, not both; neither: the quick preset.
    out_dir : str or os.PathLike, optional
        The grid folder; None: ``runs/<grid name>``.
    preset : str, optional
        A packaged grid instead of a file: ``quick``, ``digits``, ``paper``, ``clocks``, ``arms``, ``atlas`` or
        ``crossed``.
    jobs : int or "auto", default "auto"
        Worker processes for the training (``auto``: one per ``engine.cpu_threads`` cores).
    device : str, default "auto"
        ``auto``, ``cpu``, ``cuda`` or ``mps``.
    reanalyze : bool, default False
        Redo the analysis even when the one in the folder was made from this cube with these options.
    spec : AnalysisSpec, optional
        The analysis options (only those set are recorded, to decide whether the analysis is current); None: the
        defaults. The sequential design's seed counts are ``looks`` below, not the spec's (which name one look).
    until_decided : bool, optional
        Sequential seeds (docs/sequential.md): analyze at each of ``looks`` and add seeds only to the pipelines
        still undecided. None: sequential when ``looks`` is given or the grid has a ``decide`` block
        (docs/collect.md), else a fixed design on the grid's seeds. False: a fixed design whatever the grid says.
    looks : sequence of int, optional
        The seed counts at which a sequential run analyzes; None: the grid's ``decide.looks``, else 4, 8, 12, 16.
    max_seeds : int, optional
        The cap on seeds per pipeline of a sequential run (looks above it are dropped); None: the grid's
        ``decide.max_seeds``, else no cap.
    quiet : bool, default False
        No progress lines, bars or tables.
    say : callable, optional
        Receives each progress line; None: they are printed (unless ``quiet``).
    command : str, optional
        The command line shown in the report's reproduction block; None: this program's own command line.

    Returns
    -------
    RunResult
        Where the cube, the analysis folder and the report went, with each stage's seconds.

    Raises
    ------
    OptionError
        An option is invalid (``looks`` not increasing, ``looks`` or ``max_seeds`` with ``until_decided`` False,
        ``jobs`` below 1, ...).
    UserError
        Both ``grid`` and ``preset`` are given, the grid file is missing or invalid, or the grid folder holds a run
        that this one may not continue (another grid, or another sequential design).

    Examples
    --------
    Collect, analyze and report the quick preset (this trains every cell of the grid: minutes on a laptop):

    >>> import initmem
    >>> spec = initmem.AnalysisSpec.of(delta=0.02)
    >>> result = initmem.run(preset="quick", out_dir="runs/quick", spec=spec)      # doctest: +SKIP
    >>> result.report                                                                # doctest: +SKIP
    PosixPath('runs/quick/report.html')
    """
    from initmem.analysis.sequential import DEFAULT_LOOKS
    from initmem.grid import load_grid
    from initmem.reports.html import default_command

    if until_decided is False:
        for name, value in (("looks", looks), ("max_seeds", max_seeds)):
            if value is not None:
                raise OptionError(name, f"{{option}} belongs to a sequential run, not to {option('until_decided')} "
                                        "False")
    if say is None:
        say = (lambda _msg: None) if quiet else (lambda msg: print(msg, flush=True))
    options = spec.model_dump(mode="json", exclude_unset=True) if spec is not None else {}
    path = resolve_grid(None if grid is None else str(grid), preset)
    decide = load_grid(path).decide
    metric = options.get("metric") or C.SELECTED_TEST_ACC
    if decide is not None and decide.delta is not None and options.get("delta") is None:
        if C.points_scale(metric) != 1.0 and decide.delta >= 1.0:
            raise UserError(f"{path}: decide.delta {decide.delta:g} is not a fraction: the grid's accuracy is "
                            f"analyzed as a fraction of the test set; write delta: {decide.delta / 100:g} for "
                            f"{decide.delta:g} points")
        options["delta"] = decide.delta
    if options.get("delta") is not None:              # the unit, before any training (models/data.py)
        from initmem.models.data import resolve_delta

        resolve_delta(metric, options["delta"])
    if until_decided is None:
        if max_seeds is not None and looks is None and decide is None:
            raise OptionError("max_seeds", f"{{option}} caps a sequential run: give {option('looks')} too")
        until_decided = looks is not None or decide is not None
    if until_decided:
        looks = looks if looks is not None else (decide.looks if decide is not None else DEFAULT_LOOKS)
        max_seeds = max_seeds if max_seeds is not None or decide is None else decide.max_seeds
    return run_all(path, out_dir, jobs=jobs, device=device,
                   reanalyze=reanalyze, analyze_options=options, quiet=quiet, say=say,
                   command=command if command is not None else default_command(), looks=looks,
                   max_seeds=max_seeds)


@dataclass
class _Stages:
    """One run's folder and its progress: what every step of :func:`run_all` reads and adds to."""

    grid: Any
    out: Path
    say: Callable[[str], None]
    quiet: bool
    seconds: dict[str, float] = field(default_factory=dict)
    reused: dict[str, bool] = field(default_factory=dict)

    @property
    def analysis_dir(self) -> Path:
        return self.out / R.RUN_ANALYSIS_DIR

    @property
    def report_path(self) -> Path:
        return self.out / R.REPORT_HTML

    def start(self, i: int, name: str, what: str) -> float:
        """Say that stage ``i`` of 3 starts; its start time."""
        self.say(f"[{i}/3] {name}: {what}")
        return time.perf_counter()

    def collect_options(self, device: str, jobs: int | Literal["auto"]) -> CollectOptions:
        """The collect options of every stage that trains: always resumable, quiet with the run."""
        return CollectOptions(resume=True, device=device, jobs=jobs, quiet=self.quiet, progress=not self.quiet)


def run_all(
    grid_path: Path,
    out_dir: Path | None = None,
    *,
    jobs: int | Literal["auto"] = 1,
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
    """Collect (resumably), analyze and report ``grid_path`` into ``out_dir`` (default runs/NAME): the steps of
    :func:`run`, with the stand-ins tests need.

    ``train_fn`` replaces the training engine and ``analyze_fn`` the analysis (default
    :func:`initmem.analysis.analyze_cube`): tests use fast deterministic stand-ins. With ``looks`` (seed
    counts, e.g. 4, 8, 12, 16) the run is sequential (analysis/sequential.py, docs/sequential.md): seeds
    are added only to pipelines still undecided, up to ``max_seeds``. ``analyze_options`` are
    :class:`AnalysisSpec` fields, recorded as given to decide whether a later run may reuse the analysis.
    """
    from initmem.grid import load_grid

    AnalysisSpec.of(**(analyze_options or {}))  # a bad analysis option fails now, not after the training
    grid = load_grid(grid_path)
    if looks is not None:
        looks = check_looks(looks, max_seeds)
        refuse_crossed(grid)
    out = Path(out_dir) if out_dir is not None else Path("runs") / grid.name
    run_ = _Stages(grid, out, say or (lambda _msg: None), quiet)
    options = dict(analyze_options or {})
    warmup = None
    if analyze_fn is None:
        from initmem.analysis.analyze import analyze_cube as analyze_fn
        if train_fn is None and not grid.crossed:   # a real run: compile the sampler while the grid trains
            warmup = _warm_sampler(grid, options, looks)
            analyze_fn = _after(warmup, analyze_fn)
    try:
        if looks is not None:
            cube_path, analysis_dir = _collect_and_analyze_by_looks(
                run_, run_.collect_options(device, jobs), train_fn, analyze_fn, options, looks, max_seeds)
        else:
            cube_path = _collect(run_, run_.collect_options(device, jobs), train_fn)
            analysis_dir = _analyze(run_, cube_path, analyze_fn, options, reanalyze=reanalyze)
    finally:
        if warmup is not None:
            warmup.stop()
    return _report(run_, analysis_dir, cube_path, command)


def _warm_sampler(grid: Any, options: dict[str, Any], looks: Sequence[int] | None) -> SamplerWarmup:
    """Start compiling the memory model's sampler for the shape this run's analysis fits (every look of a
    sequential design shares the last look's: analysis/sequential.py)."""
    seeds = looks[-1] if looks else len(grid.seeds)
    return SamplerWarmup(warm_shape(grid, seeds, options.get("compile_shape"))).start()


def _after(warmup: SamplerWarmup, analyze_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``analyze_fn`` that first waits for the background compile, so it loads the sampler from the disk cache
    instead of compiling it a second time beside it."""
    def analyze(*args: Any, **kwargs: Any) -> Any:
        warmup.wait()
        return analyze_fn(*args, **kwargs)

    return analyze


def _collect(run_: _Stages, options: CollectOptions, train_fn: Callable[..., Any] | None) -> Path:
    """Stage 1 of a fixed design: train the grid's unfinished cells into the grid folder's cube."""
    _refuse_fewer_seeds_than_a_sequential_run(run_.grid, run_.out, run_.analysis_dir)
    t0 = run_.start(1, "collect", f"training grid '{run_.grid.name}' into {run_.out} (resumable)")
    cube_path = _collect_for_run(run_.grid, run_.out, options, train_fn)
    run_.seconds["collect"] = time.perf_counter() - t0
    run_.say(f"      collect done in {run_.seconds['collect']:.1f} s: {cube_path}")
    return cube_path


def _analyze(run_: _Stages, cube_path: Path, analyze_fn: Callable[..., Any], options: dict[str, Any], *,
             reanalyze: bool) -> Path:
    """Stage 2 of a fixed design: analyze the cube, or reuse the analysis made from this very cube with these
    options. A sequential analysis in the folder is replaced, its looks set aside."""
    analysis_dir = run_.analysis_dir
    sequential = sequential_files(analysis_dir)
    if sequential:
        run_.say(f"note: {analysis_dir} holds a sequential analysis ({option('until_decided', True)}); this fixed "
                 f"design re-decides every pipeline at alpha 0.05 and replaces it, and its looks move to "
                 f"{run_.out / SEQUENTIAL_ASIDE}. Report one design's verdicts, not a mix (docs/sequential.md, "
                 "\"One design's verdicts\").")
    if not sequential and not reanalyze and analysis_is_current(run_.out, cube_path, options):
        run_.say(f"[2/3] analyze: {analysis_dir} was made from this cube; reusing it "
                 f"({option('reanalyze', True)} to redo)")
        run_.seconds["analyze"] = 0.0
        run_.reused["analyze"] = True
        return analysis_dir
    t0 = run_.start(2, "analyze", f"fitting the memory model and the collapse test into {analysis_dir}")
    analyze_fn(cube_path, analysis_dir, progress=not run_.quiet, **options)
    from initmem.version import __version__

    write_json(run_.out / STATE_FILE, {"cube_sha256": cube_digest(cube_path), "analyze_options": options,
                                       "initmem": __version__})
    run_.seconds["analyze"] = time.perf_counter() - t0
    run_.reused["analyze"] = False
    if sequential:
        set_sequential_aside(run_.out, sequential)
    run_.say(f"      analyze done in {run_.seconds['analyze']:.1f} s")
    return analysis_dir


def _collect_and_analyze_by_looks(run_: _Stages, collect_options: CollectOptions,
                                  train_fn: Callable[..., Any] | None, analyze_fn: Callable[..., Any],
                                  options: dict[str, Any], looks: list[int],
                                  max_seeds: int | None) -> tuple[Path, Path]:
    """Stages 1 and 2 of a sequential design, look by look (analysis/sequential.py); (cube, analysis folder)."""
    note = fixed_analysis_note(run_.analysis_dir)
    if note:
        run_.say(note)
    t0 = run_.start(1, "collect + analyze",
                    f"looks at {', '.join(map(str, looks))} seeds into {run_.out} (resumable)")

    def collect_look(g: Any, folder: Path, only: set) -> Path:
        return _collect_for_run(g, folder, collect_options, train_fn, only=only)

    def analyze_look(cube_path: Path, folder: Path, **opts: Any) -> Any:
        return analyze_fn(cube_path, folder, progress=not run_.quiet, **opts)

    cube_path, analysis_dir, record = run_until_decided(
        run_.grid, run_.out, looks=looks, collect_fn=collect_look, analyze_fn=analyze_look,
        analyze_options=options, say=run_.say, max_seeds=max_seeds)
    (run_.out / STATE_FILE).unlink(missing_ok=True)  # it vouched for a fixed analysis, which this one replaced
    run_.seconds["collect + analyze"] = time.perf_counter() - t0
    final = R.load_summary(analysis_dir).pipelines   # a verdict the survivorship check overturns is not decided
    overturned = [p for p in record["decided"] if p in final and final[p].survivorship_overturned]
    run_.say(f"      decided {len(record['decided']) - len(overturned)} of {len(run_.grid.pipelines)} pipelines with "
             f"{record['runs_used']} runs (a fixed design: {record['runs_fixed']})"
             + (f"; not counted: {', '.join(overturned)} (verdict overturned by survivorship)" if overturned else ""))
    return cube_path, analysis_dir


def _collect_for_run(grid: Any, out: Path, options: CollectOptions, train_fn: Callable[..., Any] | None, *,
                     only: set | None = None) -> Path:
    """The collector, its errors worded for ``initmem run`` (:func:`_for_run`)."""
    from initmem.collect.execution.runner import collect

    try:
        return Path(collect(grid, out, options, train_fn=train_fn, only=only))
    except UserError as exc:
        raise _for_run(exc, out) from None


def _refuse_fewer_seeds_than_a_sequential_run(grid: Any, out: Path, analysis_dir: Path) -> None:
    """A fixed run over a sequential one whose looks went past the grid's seeds: say what the folder holds and
    the three ways on, instead of collect's "the grid file differs ... seeds (removed ...)"."""
    from initmem.collect.execution.grid_folder import GridFolder

    run = GridFolder(out)
    if not (sequential_files(analysis_dir) and run.exists() and run.grid_file.is_file()):
        return
    before = run.load_grid()
    if grid.crossed or before.crossed:     # collect refuses any change to a crossed design's seeds
        return
    added = [s for s in before.seeds if s not in grid.seeds]
    if added:
        listed = ", ".join(map(str, sorted({*grid.seeds, *added})))
        raise UserError(f"{out} holds a sequential run ({option('until_decided', True)}) whose looks added seeds "
                        f"{', '.join(map(str, added))} beyond the grid's; to continue that design run again with "
                        f"{option('until_decided', True)}, for a fixed design on every seed it trained list them "
                        f"in the grid (seeds: [{listed}]), or give another grid folder "
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
    """A collect error worded for ``initmem run``: run has no --force-new; a new grid folder is another --out."""
    msg = str(exc)
    flag = option("force_new", True)
    if flag not in msg:
        return exc
    other = option("out", f"{out}-2")
    for old, new in ((f"use {flag} for a new grid folder", f"give another grid folder ({other})"),
                     (f"or {flag} to start a new grid folder", f"or give another grid folder ({other})"),
                     (f"start anew with {flag}", f"start anew in another grid folder ({other})")):
        msg = msg.replace(old, new)
    msg = msg.replace(flag, other)
    return type(exc)(msg) if type(exc) is UserError else UserError(msg)


def _report(run_: _Stages, analysis_dir: Path, cube_path: Path, command: str | None) -> RunResult:
    """Stage 3: the report, and the timings of every stage."""
    t0 = run_.start(3, "report", f"writing {run_.report_path}")
    from initmem.reports.html import build_report

    build_report(analysis_dir, run_.report_path, command=command)
    run_.seconds["report"] = time.perf_counter() - t0
    run_.say(f"      report done in {run_.seconds['report']:.1f} s")
    write_json(run_.out / "timings.json", {"seconds": run_.seconds, "reused": run_.reused})
    return RunResult(out_dir=run_.out, cube=cube_path, analysis_dir=analysis_dir, report=run_.report_path,
                     seconds=run_.seconds, reused=run_.reused)

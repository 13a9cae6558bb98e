"""``initmem run --until-decided``: seeds added only where a pipeline is still undecided, with the error
spent across looks (docs/sequential.md).

A fixed design spends every seed on every pipeline, though a pipeline that clearly forgets (or remembers)
is decided by its first few. The sequential design collects the first look's seeds for every pipeline,
analyzes, freezes the verdict of every decided pipeline, adds seeds only to the undecided ones at the
next look, and stops when all are decided or the last look is reached.

Looking several times inflates the false-verdict rate of a rule used at a fixed level. Each look k
therefore decides at its own level alpha_k (models/sequential.py, ``SEQUENTIAL_DESIGN``): a Lan-DeMets
spending function of the O'Brien-Fleming type, alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at the
information fraction t_k = n_k / n_max (seeds at look k over seeds at the last look), with each look's
nominal level set so that the seeds' paired t tests on nested seeds spend exactly alpha*(t_k) by look k
(``PAIRED_T``; the union bound, ``UNION``, gives later looks less, and is kept for comparison). Measured on
the whole rule, every false verdict stays within alpha on every design (docs/sequential.md).
O'Brien-Fleming spending keeps almost nothing for early looks, so only an overwhelming early result stops
early, and the last look keeps most of alpha.

The cube grows along ``seed`` in one run folder: a cell trained at look k is the same cell a fixed
design with those seeds trains (seeds are common random numbers), so the sequential cube's cells are
bitwise those of the fixed run; cells never trained (decided pipelines at later seeds) are missing.

Resumable look by look: each finished look leaves ``look.json`` beside its analysis (the look's grid, level,
design and analysis options). A rerun of the same design reuses every look that mark matches, so a run
killed at look k trains and analyzes from look k on; a look that does not match (other looks, options or
grid) is analyzed again, on the look's own seeds even when the folder already holds more.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from initmem import cube as C
from initmem import names as N
from initmem import results as R
from initmem.atomic import atomic_path
from initmem.collect.run.run_folder import RunDir
from initmem.errors import OptionError
from initmem.grid import grid_hash
from initmem.grid.schema import MAX_SEED
from initmem.jsonio import json_safe, write_json
from initmem.models.sequential import DESIGNS, SEQUENTIAL_DESIGN, design_levels
from initmem.names import ALPHA

DEFAULT_LOOKS = (4, 8, 12, 16)
SEQUENTIAL_JSON = "sequential.json"
LOOK_JSON = "look.json"       # beside each finished look's analysis: what made it (reused on a rerun)
DECIDED = (N.REMEMBERS, N.FORGETS)


def check_looks(looks: Sequence[int], max_seeds: int | None) -> list[int]:
    """Looks as strictly increasing seed counts (>= 2), cut at ``max_seeds``."""
    out = [int(n) for n in looks]
    if not out or any(n < 2 for n in out) or any(b <= a for a, b in zip(out, out[1:], strict=False)):
        raise OptionError("looks", f"{{option}} must be strictly increasing seed counts of at least 2 (got {out})")
    if max_seeds is not None:
        if max_seeds < out[0]:
            raise OptionError("max_seeds", f"{{option}} must be at least the first look's {out[0]} seeds")
        out = [n for n in out if n <= max_seeds]
    return out


def seeds_for(grid_seeds: Sequence[int], n: int) -> list[int]:
    """The first ``n`` seeds: the grid's own, then the next integers after its largest (from 0 up, skipping
    the grid's, where those would pass the largest seed a cube can store)."""
    seeds = list(dict.fromkeys(int(s) for s in grid_seeds))
    nxt = max(seeds) + 1 if seeds else 0
    while len(seeds) < n:
        if nxt > MAX_SEED:
            nxt = 0
        if nxt not in seeds:
            seeds.append(nxt)
        nxt += 1
    return seeds[:n]


def fixed_analysis_note(analysis_dir: Path) -> str | None:
    """A note when ``analysis_dir`` holds a fixed design's analysis, which the sequential run replaces.

    Why (docs/sequential.md, "One design's verdicts"): the sequential design re-decides every pipeline from
    its first look at that look's own level, so its verdicts keep alpha by themselves. Keeping the fixed
    analysis's verdicts where it decided and the sequential verdicts for the rest spends alpha twice: up to
    6.3% false verdicts on the rule-level designs at delta (benchmarks/sequential_calibration.py --mixed)."""
    try:
        summary = R.load_summary(analysis_dir)
    except Exception:   # nothing there, or not an analysis: nothing to say
        return None
    if summary.sequential is not None:
        return None
    return (f"note: {analysis_dir} holds a fixed analysis; the sequential design re-decides every pipeline from "
            "its first look and replaces it. Report the sequential verdicts alone, not mixed with the fixed "
            "ones (docs/sequential.md, \"One design's verdicts\").")


def run_until_decided(
    grid: Any,
    out: Path,
    *,
    looks: Sequence[int],
    collect_fn: Callable[..., Path],
    analyze_fn: Callable[..., Any],
    analyze_options: dict[str, Any],
    say: Callable[[str], None],
    alpha: float = ALPHA,
    design: str = SEQUENTIAL_DESIGN,
) -> tuple[Path, Path, dict[str, Any]]:
    """Collect and analyze look by look; returns (cube, the final analysis folder, the look history).

    ``collect_fn(grid, out, only=cells)`` trains the cells asked for into ``out`` (resumable) and returns the
    cube; ``analyze_fn(cube, folder, alpha=..., **options)`` writes an analysis folder. Each look's analysis
    goes to ``out/analysis/looks/<n>-seeds``; the final folder ``out/analysis`` is the last look's, with every
    pipeline's verdict the one it was decided with, and its history under ``looks``. Look k's analysis runs
    at its level under ``design`` (models/sequential.py).
    """
    design = DESIGNS.get(design, design)
    levels = design_levels(looks, alpha, design)
    # Every look's model is compiled for the last look's seeds, so one compiled sampler serves them all.
    asked = analyze_options.get("compile_shape") or (0, 0, 0)
    compile_shape = (*asked[:2], max(asked[2], looks[-1]))
    undecided = list(grid.pipelines)
    history: dict[str, list[dict[str, Any]]] = {p: [] for p in grid.pipelines}
    decided: dict[str, dict[str, Any]] = {}
    seeds_used: dict[str, int] = {}
    cube_path = out / R.CUBE_NC
    last_dir = out / R.RUN_ANALYSIS_DIR
    for k, (n, level) in enumerate(zip(looks, levels, strict=True)):
        g = grid.model_copy(update={"seeds": seeds_for(grid.seeds, n)})
        look_dir = out / R.RUN_ANALYSIS_DIR / "looks" / f"{n}-seeds"
        mark = json.loads(json.dumps(json_safe({   # as it reads back from look.json
            "grid_hash": grid_hash(g), "level": level, "design": design, "looks": list(looks),
            "undecided": sorted(undecided), "analyze_options": analyze_options}), default=str))
        summary = _finished_look(look_dir, mark)
        if summary is not None:
            say(f"look {k + 1}/{len(looks)}: {n} seeds, finished by an earlier run of this design ({look_dir})")
        else:
            say(f"look {k + 1}/{len(looks)}: {n} seeds for {len(undecided)} undecided pipeline(s), "
                f"level {level:.4g}")
            (look_dir / LOOK_JSON).unlink(missing_ok=True)   # a stale mark must never vouch for the new analysis
            summary = _run_look(g, out, look_dir, undecided, collect_fn, lambda c, d, lv=level: analyze_fn(
                c, d, alpha=lv, **{**analyze_options, "compile_shape": compile_shape}))
            write_json(look_dir / LOOK_JSON, mark)
        for p in undecided:
            res = summary.pipelines.get(p)
            verdict = res.verdict if res is not None else None
            history[p].append({"look": k + 1, "seeds": n, "level": level, "verdict": verdict,
                               "p_spread_gt_delta": getattr(res, "p_spread_gt_delta", None),
                               "p_spread_lt_delta": getattr(res, "p_spread_lt_delta", None)})
            seeds_used[p] = n
            if verdict in DECIDED:
                decided[p] = {"verdict": verdict, "look": k + 1, "seeds": n}
        undecided = [p for p in undecided if p not in decided]
        last_dir = look_dir
        if not undecided:
            break
    n_levels = len(grid.sigma_w)
    record = {
        "design": design,
        "alpha": alpha, "looks": list(looks), "levels": levels,
        "decided": decided, "undecided": undecided, "seeds_used": seeds_used,
        "runs_used": sum(seeds_used.values()) * n_levels,
        "runs_fixed": looks[-1] * n_levels * len(grid.pipelines),
        "history": history,
    }
    final_dir = out / R.RUN_ANALYSIS_DIR
    for path in last_dir.iterdir():  # the last look's posterior, curves and collapse test are the final ones
        if path.is_file():
            with atomic_path(final_dir / path.name) as tmp:  # a kill mid-copy leaves no half-written output
                shutil.copyfile(path, tmp)
    R.write_summary(final_dir, _final_summary(R.load_summary(last_dir), decided, history, record))
    write_json(out / R.RUN_ANALYSIS_DIR / SEQUENTIAL_JSON, record)
    return cube_path, final_dir, record


def _finished_look(look_dir: Path, mark: dict[str, Any]) -> R.Summary | None:
    """The look's analysis when an earlier run finished it under the same ``mark``, else None."""
    try:
        if json.loads((look_dir / LOOK_JSON).read_text()) != mark:
            return None
        return R.load_summary(look_dir)
    except Exception:   # no mark, an unreadable one, or an analysis that does not load: run the look again
        return None


def _run_look(g: Any, out: Path, look_dir: Path, undecided: list[str], collect_fn: Callable[..., Path],
              analyze: Callable[[Path, Path], Any]) -> Any:
    """Train the look's cells of the undecided pipelines and analyze the look's seeds.

    The run folder may already hold more seeds than the look (an earlier run of other looks): the
    collect then keeps them (a run folder's grid only grows), and the look is analyzed on a cube of its
    own seeds, written beside its analysis."""
    run = RunDir(out)
    held = run.load_grid().seeds if run.exists() else []
    wide = g if len(held) <= len(g.seeds) else g.model_copy(update={"seeds": list(held)})
    only = {(p, float(s), int(seed)) for p in undecided for s, seed in g.cells(p)}
    cube_path = collect_fn(wide, out, only=only)
    if wide is not g:
        look_cube = look_dir.parent / f"{look_dir.name}.nc"
        C.write_cube(C.open_cube(cube_path).sel({C.SEED: list(g.seeds)}), look_cube)
        cube_path = look_cube
    return analyze(cube_path, look_dir)


def _final_summary(last: R.Summary, decided: dict[str, dict[str, Any]], history: dict[str, list[dict]],
                   record: dict[str, Any]) -> R.Summary:
    """The last look's summary with each pipeline's sequential verdict and its look history."""
    for p, res in last.pipelines.items():
        if p in decided:
            res.verdict = decided[p]["verdict"]
        res.looks = [R.Look(**h) for h in history.get(p, [])]
    last.sequential = R.Sequential(**{k: v for k, v in record.items() if k != "history"})
    return last


__all__ = ["DEFAULT_LOOKS", "check_looks", "fixed_analysis_note", "run_until_decided", "seeds_for"]

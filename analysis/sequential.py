"""``initmem run --until-decided``: seeds added only where a pipeline is still undecided, with the error
spent across looks (docs/sequential.md).

A fixed design spends every seed on every pipeline, though a pipeline that clearly forgets (or remembers)
is decided by its first few. The sequential design collects the first look's seeds for every pipeline,
analyzes, freezes the verdict of every decided pipeline, adds seeds only to the undecided ones at the
next look, and stops when all are decided or the last look is reached.

Looking several times inflates the false-verdict rate of a rule used at a fixed level. Each look k
therefore decides at its own level (models/sequential.py, ``SEQUENTIAL_DESIGN``): a spending function of the
Pocock type, alpha*(t) = alpha log(1 + (e - 1) t), at the information fraction t_k = n_k / n_max (seeds at look
k over seeds at the last look), with each look's nominal level set so that the seeds' paired t tests on
nested seeds spend exactly alpha*(t_k) by look k (``paired-t``), and each share of alpha (the ordered test's
pairs, the two routes to "forgets") spent from its own allotment (``Spending``). Pocock-type spending gives
the first look about a third of alpha, so a clear memory or a clear forgetting is decided with the first
look's seeds; measured on the whole rule, every false verdict stays within alpha (docs/sequential.md).

A decided pipeline's entry in the final summary is the whole entry of the look that decided it
(``decided_look``). A folder holds one design: a rerun with other looks or another cap is refused
(:func:`check_same_design`).

The cube grows along ``seed`` in one grid folder: a cell trained at look k is the same cell a fixed
design with those seeds trains (seeds are common random numbers), so the sequential cube's cells are
bitwise those of the fixed run; cells never trained (decided pipelines at later seeds) are missing.

Resumable look by look: each finished look leaves ``look.json`` beside its analysis (the look's grid, level,
design and analysis options). A rerun of the same design reuses every look that mark matches, so a run
killed at look k trains and analyzes from look k on; a look that does not match (other looks, options or
grid) is analyzed again, on the look's own seeds even when the folder already holds more; other looks or
another cap are refused.
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
from initmem.collect.execution.grid_folder import GridFolder
from initmem.errors import OptionError, UserError, option
from initmem.grid import grid_hash
from initmem.grid.schema import MAX_SEED
from initmem.jsonio import json_safe, write_json
from initmem.models.sequential import SEQUENTIAL_DESIGN, design_levels, design_name, parse_design
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


def refuse_crossed(grid: Any) -> None:
    """Refuse a sequential run of a grid whose seeds are a crossed (init x data) design.

    A sequential run adds seeds look by look to the undecided pipelines; a crossed design has no "next
    seed": adding init seeds, data seeds or both are different designs that answer different questions,
    and its run index (row-major over both lists) would renumber the runs already trained."""
    if getattr(grid, "crossed", False):
        raise UserError(f"grid {grid.name}: {option('until_decided', True)} adds seeds look by look, and its seeds "
                        "are a crossed design (seeds: {init: [...], data: [...]}): which seeds a look would add "
                        "(init, data or both) is a design question of its own; run the crossed grid as a fixed "
                        "design (no looks), or give a list of seeds")


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
    6.3% false verdicts on the rule-level designs at delta (studies/sequential_calibration.py --mixed)."""
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
    max_seeds: int | None = None,
) -> tuple[Path, Path, dict[str, Any]]:
    """Collect and analyze look by look; returns (cube, the final analysis folder, the look history).

    ``collect_fn(grid, out, only=cells)`` trains the cells asked for into ``out`` (resumable) and returns the
    cube; ``analyze_fn(cube, folder, alpha=..., **options)`` writes an analysis folder. Each look's analysis
    goes to ``out/analysis/looks/<n>-seeds``; the final folder ``out/analysis`` is the last look's, with every
    pipeline's entry the one of the look that decided it, and its history under ``looks``. Look k's analysis
    runs at look k of ``design`` (``analyze_fn(..., alpha=, looks=, look=, design=)``: each share of alpha spent
    from its own allotment, models/sequential.py ``Spending``). A folder that holds another design's looks
    (other looks, cap, design or alpha) is refused before anything is trained (:func:`check_same_design`).
    """
    refuse_crossed(grid)
    design = design_name(*parse_design(design))
    looks = [int(n) for n in looks]
    check_same_design(out, looks, max_seeds, design, alpha, analyze_options.get("delta"))
    levels = design_levels(looks, alpha, design)
    # Every look's model is compiled for the last look's seeds, so one compiled sampler serves them all.
    asked = analyze_options.get("compile_shape") or (0, 0, 0)
    compile_shape = (*asked[:2], max(asked[2], looks[-1]))
    undecided = list(grid.pipelines)
    history: dict[str, list[dict[str, Any]]] = {p: [] for p in grid.pipelines}
    decided: dict[str, dict[str, Any]] = {}
    seeds_used: dict[str, int] = {}
    look_dirs: dict[int, Path] = {}     # look number (1 = first) -> its analysis folder
    cube_path = out / R.CUBE_NC
    last_dir = out / R.RUN_ANALYSIS_DIR
    for k, (n, level) in enumerate(zip(looks, levels, strict=True)):
        g = grid.model_copy(update={"seeds": seeds_for(grid.seeds, n)})
        look_dir = out / R.RUN_ANALYSIS_DIR / "looks" / f"{n}-seeds"
        mark = json.loads(json.dumps(json_safe({   # as it reads back from look.json
            "grid_hash": grid_hash(g), "level": level, "design": design, "looks": list(looks), "alpha": alpha,
            "max_seeds": max_seeds, "undecided": sorted(undecided), "analyze_options": analyze_options}),
            default=str))
        summary = _finished_look(look_dir, mark)
        if summary is not None:
            say(f"look {k + 1}/{len(looks)}: {n} seeds, finished by an earlier run of this design ({look_dir})")
        else:
            say(f"look {k + 1}/{len(looks)}: {n} seeds for {len(undecided)} undecided pipeline(s), "
                f"level {level:.4g}")
            (look_dir / LOOK_JSON).unlink(missing_ok=True)   # a stale mark must never vouch for the new analysis
            look_opts = {**analyze_options, "compile_shape": compile_shape, "alpha": alpha, "looks": tuple(looks),
                         "look": k + 1, "design": design}
            summary = _run_look(g, out, look_dir, undecided, collect_fn,
                                lambda c, d, o=look_opts: analyze_fn(c, d, **o))
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
        last_dir = look_dirs[k + 1] = look_dir
        if not undecided:
            break
    n_levels = len(grid.sigma_w)
    record = {
        "design": design,
        "alpha": alpha, "looks": list(looks), "levels": levels,
        "decided": decided, "undecided": undecided, "seeds_used": seeds_used,
        "runs_used": sum(seeds_used.values()) * n_levels,
        "runs_fixed": looks[-1] * n_levels * len(grid.pipelines),
        "max_seeds": max_seeds, "delta": analyze_options.get("delta"),
        "history": history,
    }
    final_dir = out / R.RUN_ANALYSIS_DIR
    for path in last_dir.iterdir():  # the last look's posterior, curves and collapse test are the final ones
        if path.is_file():
            with atomic_path(final_dir / path.name) as tmp:  # a kill mid-copy leaves no half-written output
                shutil.copyfile(path, tmp)
    by_look = {k: R.load_summary(look_dirs[k]) for k in sorted({d["look"] for d in decided.values()})}
    deciding = {p: by_look[d["look"]].pipelines[p] for p, d in decided.items()}
    R.write_summary(final_dir, _final_summary(R.load_summary(last_dir), deciding, decided, history, record))
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

    The grid folder may already hold more seeds than the look (an earlier run of other looks): the
    collect then keeps them (a grid folder's grid only grows), and the look is analyzed on a cube of its
    own seeds, written beside its analysis."""
    run = GridFolder(out)
    held_grid = run.load_grid() if run.exists() else None
    # A folder that holds a crossed design: no seeds to keep (the collect refuses the change of design).
    held = held_grid.seeds if held_grid is not None and not held_grid.crossed else []
    wide = g if len(held) <= len(g.seeds) else g.model_copy(update={"seeds": list(held)})
    only = {(p, float(s), int(seed)) for p in undecided for s, seed in g.cells(p)}
    cube_path = collect_fn(wide, out, only=only)
    if wide is not g:
        look_cube = look_dir.parent / f"{look_dir.name}.nc"
        C.write_cube(C.open_cube(cube_path).sel({C.SEED: list(g.seeds)}), look_cube)
        cube_path = look_cube
    return analyze(cube_path, look_dir)


def _final_summary(last: R.Summary, deciding: dict[str, Any], decided: dict[str, dict[str, Any]],
                   history: dict[str, list[dict]], record: dict[str, Any]) -> R.Summary:
    """The last look's summary, each decided pipeline's entry replaced WHOLE by its entry in the look that
    decided it (``deciding``), with ``decided_look`` saying which look that was, and every pipeline's history.

    Why whole: a pipeline decided at look 1 was decided by look 1's posterior, tests, rule and notes; the last
    look re-analyzes it on the same seeds at another level, and mixing that look's fields (its borderline flag,
    p-values, the level of its intersection-union test, its notes) into the entry would report a decision that
    no look made."""
    for p, entry in deciding.items():
        last.pipelines[p] = entry.model_copy(deep=True)
        last.pipelines[p].decided_look = decided[p]["look"]
    for p, res in last.pipelines.items():
        res.looks = [R.Look(**h) for h in history.get(p, [])]
    last.sequential = R.Sequential(**{k: v for k, v in record.items() if k != "history"})
    return last


def check_same_design(out: Path, looks: Sequence[int], max_seeds: int | None, design: str, alpha: float,
                      delta: float | None = None) -> None:
    """Refuse a sequential run in a folder that holds another sequential design's looks (OptionError, exit 2).

    Why: the looks, the cap, the spending function, alpha and delta fix every look's test before any seed is seen. A
    rerun with other looks re-decides every pipeline on seeds whose verdicts were already seen, at levels that
    were never planned: a change of design after seeing results, whose false-verdict rate nothing bounds. So a
    rerun must repeat the design (a killed run resumes at its first unfinished look); a new design belongs in
    another grid folder. The design is read from the folder's sequential record, or, for a run killed before its
    end, from its finished looks' marks."""
    folder = out / R.RUN_ANALYSIS_DIR
    held: list[dict[str, Any]] = []
    for path in [folder / SEQUENTIAL_JSON, *sorted((folder / "looks").glob(f"*/{LOOK_JSON}"))]:
        try:
            held.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    want = {"looks": [int(n) for n in looks], "max_seeds": max_seeds, "design": design, "alpha": float(alpha),
            "delta": None if delta is None else float(delta)}
    for rec in held:
        got = {k: rec.get(k, want[k] if k in ("max_seeds", "alpha") else None) for k in want}
        got["delta"] = rec.get("delta", (rec.get("analyze_options") or {}).get("delta"))
        try:
            got["design"] = design_name(*parse_design(str(got["design"])))
        except ValueError:
            pass    # an unknown design: it differs
        if got["alpha"] is not None:
            got["alpha"] = float(got["alpha"])
        differ = [k for k in want if got[k] != want[k]]
        if differ:
            shown = {"looks": lambda v: ",".join(map(str, v or [])), "max_seeds": lambda v: "none" if v is None else v,
                     "design": str, "alpha": lambda v: f"{v:g}",
                     "delta": lambda v: "the default" if v is None else f"{v:g}"}
            what = "; ".join(f"{k.replace('_', '-')} {shown[k](got[k])} (now {shown[k](want[k])})" for k in differ)
            resumable = {"looks", "max_seeds"} >= set(differ)
            again = option("looks", shown["looks"](got["looks"])) + (
                "" if got["max_seeds"] is None else f" and {option('max_seeds', got['max_seeds'])}")
            raise OptionError(
                "looks", f"{folder} holds a sequential run of another design: {what}. Changing the design after "
                "seeing its verdicts re-decides every pipeline on the same seeds at levels never planned, and no "
                + (f"false-verdict rate holds; rerun with {again} to continue it" if resumable
                   else "false-verdict rate holds; this design cannot continue that run")
                + " (docs/sequential.md, \"One design per folder\")")


__all__ = ["DEFAULT_LOOKS", "check_looks", "check_same_design", "fixed_analysis_note", "run_until_decided", "seeds_for"]

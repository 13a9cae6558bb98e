"""The whole forgetting-time view of a cube, without the memory model (``initmem collapse``).

:func:`collapse_view` runs the collapse test (stats/collapse.py) on the requested memory, the same
test on the two radial sides (sigma_w >= 1 and <= 1: which clock lines up which side) and the
Bayesian clock-exponent model (models/exponents.py) on per-seed forgetting times in steps, and
returns the collapse.json dict (schema initmem.collapse/3). The permutation test stays the
decision on "clock better than epochs"; the exponents say *which* combination of eta, lambda and
b the forgetting time follows (docs/reading-the-clocks.md).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube, optimizers
from initmem.errors import UserError, option
from initmem.jsonio import json_safe
from initmem.results.spec import AnalysisSpec
from initmem.stats.collapse import collapse_statistics, seed_steps
from initmem.stats.curves import has_curve
from initmem.stats.forgetting import DEFAULT_FRACTION, DEFAULT_ROPE
from initmem.stats.memsource import RADIAL_SIDES, REF_SIGMA, memory_view

OPTIMIZER, LR, BATCH_SIZE, MOMENTUM, WEIGHT_DECAY = cube.PIPELINE_COORDS[:5]
SIDE_KEYS = ("verdict", "best", "best_pipelines", "vs_epoch", "forgetting_times", "notes", "sigma_w", "merged",
             "n_pipelines", "min_p_possible", "n_permutations", "exact_permutation")


def _coord(ds: xr.Dataset, name: str, default: Any) -> np.ndarray:
    if name in ds.coords and ds[name].dims == (cube.PIPELINE,):
        return ds[name].values
    return np.full(ds.sizes[cube.PIPELINE], default, dtype=object)


def pipeline_design(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Per pipeline: lr, coupled L2 lambda, batch size, momentum and optimizer (NaN when unknown)."""
    opt = np.asarray(_coord(ds, OPTIMIZER, optimizers.OPTIMIZERS[0].name), dtype=object)
    wd = np.asarray(_coord(ds, WEIGHT_DECAY, 0.0), float)
    kinds = [optimizers.BY_NAME.get(str(o)) for o in opt]  # None: a kind the table does not know (imported)
    return {"lr": np.asarray(_coord(ds, LR, np.nan), float),
            # the optimizer table says how weight decay acts: a decoupled decay is not lambda in T_l2
            "l2": optimizers.coupled_l2_of(opt, wd),
            "batch": np.asarray(_coord(ds, BATCH_SIZE, np.nan), float),
            "momentum": np.nan_to_num(np.asarray(_coord(ds, MOMENTUM, 0.0), float)),
            # the adaptive kinds share one family ("adam"): their clock is sum eta, not the SGD ones
            "family": np.array([str(o) if k is None else "adam" if k.adaptive else k.name
                                for k, o in zip(kinds, opt, strict=True)], dtype=object)}


def steps_missing(ds: xr.Dataset) -> str | None:
    """Why the clock exponents cannot be fitted for want of optimizer steps (None when the cube has
    them): they are fitted on forgetting times in steps, and a per-epoch import has steps only with
    the training-set size or a step column."""
    if has_curve(ds, cube.STEP):
        return None
    return (f"the clock exponents are fitted on forgetting times in optimizer steps, but the cube has no "
            f"'{cube.STEP}' curve: re-import the table with {option('n_train', 'N')} (training examples, for steps "
            f"per epoch) or with a '{cube.STEP}' column, or turn the exponent model off")


def exponents_entry(ds: xr.Dataset, memory: str, *, fraction: float, rope: float, tolerance: float,
                    seed: int = 0, draws: int = 1000, tune: int = 1000) -> dict[str, Any]:
    """The ``exponents`` entry on its own: per-seed forgetting times in steps -> the fitted exponent model
    (:func:`collapse_view` has the times from the collapse statistics)."""
    from initmem.models.exponents import exponents_entry_of

    missing = steps_missing(ds)
    if missing:
        return {"skipped": missing}
    view, base = memory_view(ds, memory)
    steps = seed_steps(view, base, fraction=fraction, rope=rope)
    return exponents_entry_of(memory, steps.pipelines, pipeline_design(view), steps.times, steps.budget,
                              tolerance=tolerance, seed=seed, draws=draws, tune=tune)


def collapse_view(ds: xr.Dataset, spec: AnalysisSpec | None = None, *, sides: bool = True,
                  **options: Any) -> dict | None:
    """collapse.json (initmem.collapse/3): the test, its two radial sides and the exponents.

    The options are an :class:`~initmem.results.spec.AnalysisSpec` (``memory``, ``fraction``, ``rope``,
    ``axes``, ``exponents``, ``tolerance``, ``n_boot``, ``seed``) or its fields as keywords, validated
    there (a bad value is an ``OptionError`` naming the option); ``None`` fields take the statistics'
    defaults. ``sides=False`` skips the two radial sides."""
    from initmem.models.exponents import DEFAULT_TOLERANCE, exponents_entry_of

    spec = spec if spec is not None and not options else AnalysisSpec.of(spec, **options)
    memory, n_boot, seed, axes, exponents = spec.memory, spec.n_boot, spec.seed, spec.axes, spec.exponents
    fraction = DEFAULT_FRACTION if spec.fraction is None else spec.fraction
    rope = DEFAULT_ROPE if spec.rope is None else spec.rope
    tolerance = DEFAULT_TOLERANCE if spec.tolerance is None else spec.tolerance
    # One call: the test, its radial sides and the exponent model's per-seed times, from one set of options.
    missing = steps_missing(ds) if exponents else None
    stats = collapse_statistics(ds, memory=memory, sides=RADIAL_SIDES if sides and memory.startswith("radial")
                                else (), steps=exponents and missing is None, n_boot=n_boot, seed=seed,
                                fraction=fraction, rope=rope, axes=axes)
    main = stats.main
    if main is None:
        return None
    main["ref_sigma_w"] = REF_SIGMA
    # the report's dose axis, also for pipelines the memory model skipped, and the exponent model's design
    design = pipeline_design(ds)
    main["design"] = {str(p): {"lr": design["lr"][i], "lambda": design["l2"][i], "b": design["batch"][i],
                               "momentum": design["momentum"][i], "family": design["family"][i]}
                      for i, p in enumerate(ds[cube.PIPELINE].values.tolist())}
    main["lined_up_by"] = lined_up(main)
    main["sides"] = {side: {"skipped": r} if isinstance(r, str)   # fewer than 2 levels on that side
                     else {k: r[k] for k in SIDE_KEYS if k in r} | {"lined_up_by": lined_up(r)}
                     for side, r in stats.sides.items()}
    if not exponents:
        main["exponents"] = {"skipped": "not requested (exponents off)"}
    elif stats.seed_steps is None:
        main["exponents"] = {"skipped": missing}
    else:
        steps = stats.seed_steps
        main["exponents"] = exponents_entry_of(memory, steps.pipelines, design, steps.times, steps.budget,
                                               tolerance=tolerance, seed=seed)
    return json_safe(main)


def lined_up(r: dict) -> str | None:
    """The clock on which the pipelines' forgetting times agree best (smallest censored-data spread
    of log forgetting time), among those with forgetting times on >= 3 pipelines; None if none."""
    ft = r.get("forgetting_times") or {}
    cand = {a: e["spread"] for a, e in ft.items() if a != cube.STEP and e.get("spread") is not None
            and np.isfinite(e["spread"]) and e.get("n_pipelines", 0) - e.get("n_censored", 0) >= 3}
    return min(cand, key=cand.get) if cand else None


def collapse_main(cube_path: str | os.PathLike, out_dir: str | os.PathLike, spec: AnalysisSpec | None = None, *,
                  say: Callable[[str], None] = print, **options: Any) -> dict:
    """``initmem collapse``: write DIR/collapse.json and DIR/curves.nc, print the verdicts. The options
    are validated once, before the cube is read."""
    from initmem import results as R
    from initmem.analysis.staging import check_out_dir, staged_folder
    from initmem.stats.curves import memory_curves, write_curves

    spec = AnalysisSpec.of(spec, **options)
    out = check_out_dir(out_dir, "collapse test")
    ds = cube.open_cube(cube_path)
    # Asked for exponents it cannot fit, the command says what is missing instead of writing a
    # collapse.json without them (analyze, which fits more, records the reason and goes on).
    missing = steps_missing(ds) if spec.exponents and cube.EPOCH in ds.dims else None
    if missing:
        raise UserError(f"{cube_path}: {missing}")
    raw = collapse_view(ds, spec)
    if raw is None:
        raise UserError(f"{cube_path} has no training curves (epoch dim with kernel_norm / val_acc): "
                        "the collapse test needs them")
    rec = R.build_collapse(raw)
    curves = memory_curves(ds, n_boot=min(spec.n_boot, 200), seed=spec.seed)
    with staged_folder(out, what="collapse test", last=R.COLLAPSE_JSON) as tmp:  # both files or neither
        if curves is not None:
            write_curves(curves, tmp / R.CURVES_NC)
        R.write_collapse(tmp, rec)
    for line in summary_lines(raw):
        say(line)
    say(str(out / R.COLLAPSE_JSON))
    return raw


def summary_lines(r: dict) -> list[str]:
    """A few terminal lines: the verdict, the best clock, each side's clock and the exponents."""
    lines = [f"collapse ({r['memory']}, {r['n_pipelines']} pipelines): {r['verdict']}, best {r['best']}"]
    for a, e in (r.get("vs_epoch") or {}).items():
        if e.get("in_family"):
            lines.append(f"  {a:<10} D = {_f(e.get('D'))}  p_adj = {_f(e.get('p_adjusted'))}  "
                         f"on {e.get('n_pipelines')} pipelines")
    for side, e in (r.get("sides") or {}).items():
        lines.append(f"  {side}: " + (e["skipped"] if "skipped" in e else
                                      f"{e['verdict']}, best {e['best']}, lined up by {e.get('lined_up_by')}"))
    ex = r.get("exponents") or {}
    if "exponents" in ex:
        parts = [f"{c} {_f(v['median'])} [{_f(v['q05'])}, {_f(v['q95'])}]" for c, v in ex["exponents"].items()]
        lines.append("  exponents of steps to forget: " + "; ".join(parts))
        lines.append("  P(clock's exponents within tolerance): " + ", ".join(
            f"{c} {_f(v['probability'])}" for c, v in ex["clocks"].items()))
    elif ex.get("skipped"):
        lines.append(f"  exponents: {ex['skipped']}")
    return lines


def _f(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.3g}"


__all__ = ["collapse_main", "collapse_view", "exponents_entry", "lined_up", "pipeline_design",
           "steps_missing", "summary_lines"]

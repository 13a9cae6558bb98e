"""Does a forgetting clock collapse the memory curves better than epochs? (docs/clocks-and-collapse.md)

1. Axes: epochs, steps and every clock of the cube in the clocks table's collapse family
   (``initmem.clocks.family()``), as x = log T over epochs >= 1 where T > 0; an axis is compared
   with epochs on the pipelines where it is defined.
2. Identifiability across pipelines: at a fixed epoch a clock must separate the pipelines
   differently from epochs; its SD across pipelines of log T - log epoch (median over epochs)
   must exceed IDENT_SD. A design where every clock is the same function of epochs for every
   pipeline (lr proportional to b, one lambda, one schedule) gives ``not_identifiable``.
3. Leave-one-pipeline-out master-curve prediction with one tuning-free smoother on pooled-ECDF
   coordinates (stats/smoother.py); errors normalised by the held-out pipeline's own seed noise
   only, bounded per pipeline (stats/loo.py). D_m = mean over pipelines of the bounded log error
   ratio, D > 0 favours the clock.
4. Inference: coordinate-swap sign-flip permutation, the whole analysis recomputed per pattern,
   Westfall-Young min-p across the clocks tried (stats/inference.py). The interval of D is a
   bootstrap over seeds (rerunning the analysis) and pipelines; it describes, the permutation
   p-value decides.
5. Forgetting times per pipeline and axis (stats/forgetting.py).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.clocks import family as clock_family
from initmem.errors import UserError, option
from initmem.jsonio import json_safe
from initmem.names import ALPHA, CURVE_EPOCH_AXIS
from initmem.stats import inference
from initmem.stats.collapse_scope import min_p_floor, same_axis, scope_note
from initmem.stats.curves import has_curve, seed_mean_clocks
from initmem.stats.forgetting import DEFAULT_FRACTION, DEFAULT_ROPE, forgetting_times, per_seed_times
from initmem.stats.loo import floor_var, held_out_errors, log_ratio
from initmem.stats.memsource import MEMORIES, Source, memory_variable, memory_view
from initmem.stats.smoother import N_BINS, ecdf_coordinates

SCHEMA = "initmem.collapse/3"
EPOCH_AXIS, STEP_AXIS = cube.EPOCH, cube.STEP
IDENT_SD = 0.1  # SD across pipelines (log units) of log T - log epoch below which T is epochs in disguise
MIN_UNITS = 3  # pipelines an axis must be defined on to be compared with epochs
DEFINED_SHARE = 0.5  # a pipeline "has" an axis when it is defined on at least half its scored epochs
MAX_CONFIGS = 4096  # configurations per batch of the permutation analysis (memory bound)
VERDICTS = ("clock_better", "epoch_better", "no_difference", "not_identifiable")


def _log_axis(t: np.ndarray, epoch: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((t > 0) & np.isfinite(t) & (epoch >= 1), np.log(t), np.nan)


def _identifiability(x: np.ndarray) -> float:
    """Median over epochs of the SD across pipelines of log T (log epoch is constant at an epoch)."""
    n = np.isfinite(x).sum(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(x, axis=0)
    sd = sd[n >= 2]
    return float(np.median(sd)) if sd.size else 0.0


def _comparisons(x: dict[str, np.ndarray], y: np.ndarray) -> dict[str, dict]:
    """Per non-epoch axis: the pipelines it is defined on and both axes' ECDF coordinates there."""
    base = np.isfinite(x[EPOCH_AXIS]) & np.isfinite(y)
    out = {}
    for a, xa in x.items():
        if a == EPOCH_AXIS:
            continue
        both = base & np.isfinite(xa)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = both.sum(1) / base.sum(1)
        defined = np.nan_to_num(share) >= DEFINED_SHARE
        mask = both & defined[:, None]
        u = ecdf_coordinates(np.stack([np.where(mask, x[EPOCH_AXIS], np.nan), np.where(mask, xa, np.nan)]))
        out[a] = {"defined": defined, "u_epoch": u[0], "u_axis": u[1]}
    return out


def _pair_d(held, n_pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """From errors of stacked (epoch-role, axis-role) configurations: ratios (N, C) and D (N,)."""
    e = held.err.reshape(n_pairs, 2, -1)
    r = log_ratio(e[:, 0], e[:, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return r, np.nanmean(r, axis=1)


def _null_d(comp: dict[str, dict], tested: list[str], y, v, rng) -> tuple[np.ndarray, bool]:
    """D_m under every coordinate-swap pattern (rows) for every tested axis (columns)."""
    c = y.shape[0]
    pats, exact = inference.half_patterns(c, rng)
    d = np.full((pats.shape[0], len(tested)), np.nan)
    per_batch = max(1, MAX_CONFIGS // max(1, 2 * len(tested)))
    for lo in range(0, pats.shape[0], per_batch):
        s = pats[lo:lo + per_batch][:, None, :, None] > 0  # (B, 1, C, 1)
        ue = np.stack([comp[a]["u_epoch"] for a in tested])[None]  # (1, M, C, T)
        ua = np.stack([comp[a]["u_axis"] for a in tested])[None]
        cfg = np.stack([np.where(s, ue, ua), np.where(s, ua, ue)], axis=2)  # (B, M, 2, C, T)
        n_pairs = cfg.shape[0] * cfg.shape[1]
        held = held_out_errors(cfg.reshape(-1, *cfg.shape[-2:]), y, v)
        d[lo:lo + per_batch] = _pair_d(held, n_pairs)[1].reshape(cfg.shape[0], cfg.shape[1])
    return inference.full_null(d), exact


@dataclass(frozen=True)
class SeedSteps:
    """Each seed's own forgetting time in optimizer steps, read on the memory's view of the cube: the clock-exponent
    model's measurements (models/exponents.py).

    Attributes
    ----------
    pipelines : list of str
        The pipelines, in the order of the rows (the cube's).
    times : np.ndarray
        (pipeline, seed): +inf where censored, NaN where a seed has no curve.
    budget : np.ndarray
        (pipeline,): the largest step with data.
    """

    pipelines: list[str]
    times: np.ndarray
    budget: np.ndarray


def seed_steps(view: xr.Dataset, memory: str, *, fraction: float = DEFAULT_FRACTION,
               rope: float = DEFAULT_ROPE) -> SeedSteps:
    """:class:`SeedSteps` on ``view``, a memory's view of a cube with a step curve (stats/memsource.py,
    ``memory_view``; ``memory`` its base memory)."""
    times, budget = per_seed_times(view, memory, seed_mean_clocks(view)[STEP_AXIS], fraction=fraction, rope=rope)
    return SeedSteps([str(p) for p in view[cube.PIPELINE].values.tolist()], times, budget)


@dataclass(frozen=True)
class CollapseStatistics:
    """Everything the collapse statistics give one memory at once (:func:`collapse_statistics`).

    Attributes
    ----------
    main : dict or None
        The collapse test on the memory (:func:`collapse_test`, before its conversion to JSON, which the caller that
        writes it makes once); None when the cube has no curves.
    sides : dict
        Per radial side asked for, its collapse test (as ``main``), or why it was skipped (a str: too few levels on
        that side).
    seed_steps : SeedSteps or None
        The per-seed forgetting times in steps on the memory's view, where asked for and the cube has steps.
    """

    main: dict | None
    sides: dict[str, dict | str]
    seed_steps: SeedSteps | None


def collapse_statistics(ds: xr.Dataset, *, memory: str = "radial", sides: Sequence[str] = (),
                        side_boot: int = 50, steps: bool = False, n_boot: int = 200, seed: int = 0,
                        fraction: float = DEFAULT_FRACTION, rope: float = DEFAULT_ROPE,
                        axes: Sequence[str] | None = None) -> CollapseStatistics:
    """The collapse test of ``memory``, the same test on each memory of ``sides`` (the two radial sides, with at most
    ``side_boot`` bootstrap replicates) and, with ``steps`` (the cube has a step curve), each seed's forgetting time
    in steps: the collapse statistics of an analysis, computed in one call from one set of options
    (analysis/collapse.py).

    Why: the exponent model fits the per-seed times on the same memory view, forgetting definition and clocks
    as the test; read here once, they reach it as numbers. Options as :func:`collapse_test`'s."""
    main, view = _collapse(ds, memory=memory, n_boot=n_boot, seed=seed, fraction=fraction, rope=rope, axes=axes)
    out_sides: dict[str, dict | str] = {}
    if main is not None:
        for side in sides:
            try:
                r = _collapse(ds, memory=side, n_boot=min(n_boot, side_boot), seed=seed, fraction=fraction,
                              rope=rope, axes=axes)[0]
            except UserError as exc:  # fewer than 2 levels on that side
                out_sides[side] = str(exc)
                continue
            if r is not None:
                out_sides[side] = r
    steps_of = seed_steps(view[0], view[1], fraction=fraction, rope=rope) if steps and view is not None else None
    return CollapseStatistics(main, out_sides, steps_of)


def collapse_test(ds: xr.Dataset, *, memory: str = "radial", n_boot: int = 200, seed: int = 0,
                  fraction: float = DEFAULT_FRACTION, rope: float = DEFAULT_ROPE,
                  axes: Sequence[str] | None = None) -> dict | None:
    """The collapse.json dict (schema initmem.collapse/3), or None when the cube has no curves.

    ``fraction`` (radial) and ``rope`` (functional, in metric units) define the forgetting times.
    ``n_boot`` bootstrap replicates give the interval of D (0: no interval; the verdict comes
    from the permutation test either way). ``axes``: only these clocks are scored (a clock outside
    the default family, such as T_wd, joins it when named); epochs and steps always stay. None: the
    clocks table's family.
    """
    return json_safe(_collapse(ds, memory=memory, n_boot=n_boot, seed=seed, fraction=fraction, rope=rope,
                               axes=axes)[0])


def _collapse(ds: xr.Dataset, *, memory: str, n_boot: int, seed: int, fraction: float, rope: float,
              axes: Sequence[str] | None) -> tuple[dict | None, tuple[xr.Dataset, str] | None]:
    """:func:`collapse_test` before its conversion to JSON (numpy values, NaN where undefined), and the memory's view
    of the cube it read (the view, its base memory)."""
    if memory not in MEMORIES:
        raise UserError(f"memory must be one of {', '.join(MEMORIES)}, not {memory!r}")
    if n_boot < 0:
        raise UserError("n_boot must be >= 0")
    if axes is not None:
        known = (STEP_AXIS, *cube.ALL_CLOCKS)
        bad = [a for a in axes if a not in known]
        if bad or not axes:
            raise UserError(f"axes names {f'an unknown axis {bad[0]!r}' if bad else 'no axis'} "
                            f"(choose among {', '.join(known)})")
    requested = memory
    if cube.EPOCH not in ds.dims or not has_curve(ds, memory_variable(memory)):
        return None, None
    ds, memory = memory_view(ds, memory)
    view = (ds, memory)
    notes: list[str] = []
    names = [str(p) for p in ds[cube.PIPELINE].values.tolist()]
    c_pipes = len(names)
    rng = np.random.default_rng(seed)
    src = Source.from_cube(ds, memory)
    y, v = src.stats(src.all_seeds())
    if not np.isfinite(v).any():
        notes.append("fewer than 2 seeds with curves: no seed-noise estimate, the collapse test cannot score")
    v = floor_var(v)

    clocks = seed_mean_clocks(ds)
    epoch = clocks[CURVE_EPOCH_AXIS]
    x, merged, left_out = _candidate_axes(clocks, epoch, notes, axes)
    comp = _comparisons(x, y)
    sd_log = {a: _identifiability(np.where(comp[a]["defined"][:, None], x[a], np.nan)) for a in comp}
    identifiable = {a: bool(sd_log[a] > IDENT_SD) for a in comp}
    n_def = {a: int(comp[a]["defined"].sum()) for a in comp}
    compared = [a for a in comp if n_def[a] >= MIN_UNITS]
    tested = [a for a in compared if identifiable[a]]
    family = [a for a in tested if a != STEP_AXIS]

    # Observed: each axis scored on its own, and each comparison's (epoch, axis) pair.
    solo = ecdf_coordinates(np.stack([x[EPOCH_AXIS]] + [np.where(comp[a]["defined"][:, None], x[a], np.nan)
                                                        for a in comp]))
    solo_held = held_out_errors(solo, y, v)
    pair_cfg = np.stack([np.stack([comp[a]["u_epoch"], comp[a]["u_axis"]]) for a in compared]) if compared \
        else np.zeros((0, 2, *y.shape))
    pair_held = held_out_errors(pair_cfg.reshape(-1, *y.shape), y, v) if compared else None
    ratios, d_obs = _pair_d(pair_held, len(compared)) if compared else (np.zeros((0, c_pipes)), np.zeros(0))

    perm = _permutation(comp, compared, tested, family, d_obs, y, v, rng)
    exact, n_perm = perm.exact, perm.n_perm
    boot = _bootstrap(src, pair_cfg, len(compared), n_boot, rng)
    out_axes = _axes_entries(names, [EPOCH_AXIS, *comp], solo_held, n_def, c_pipes)
    vs_epoch = {a: _vs_epoch_entry(i, names, d_obs, ratios, boot, perm, in_family=a in family)
                for i, a in enumerate(compared)}
    if c_pipes < 2:
        notes.append("a single pipeline cannot tell clocks from epochs: the comparison is across pipelines")
    verdict, best = _verdict(vs_epoch, family, identifiable, notes, n_def=n_def, left_out=left_out)
    notes += _explain(vs_epoch, identifiable, n_def, out_axes, c_pipes=c_pipes, verdict=verdict, best=best)
    scope_note(notes, vs_epoch, best, c_pipes)
    ft = forgetting_times(ds, memory=memory, fraction=fraction, rope=rope, n_boot=n_boot, seed=seed,
                          axes={EPOCH_AXIS: epoch} | {a: clocks[a] for a in x if a != EPOCH_AXIS})
    return {
        "schema": SCHEMA, "memory": requested, "sigma_w": ds[cube.SIGMA].values.astype(float).tolist(),
        "merged": merged, "best_pipelines": vs_epoch[best]["pipelines"] if best in vs_epoch else None,
        "axes": out_axes, "vs_epoch": vs_epoch,
        "adjustment": "max_statistic", "best": best, "verdict": verdict,
        "identifiable": {a: identifiable[a] for a in comp},
        "identifiability": {a: {"sd_log_ratio": sd_log[a], "threshold": IDENT_SD} for a in comp},
        "forgetting_times": ft, "notes": notes, "n_pipelines": c_pipes,
        "min_p_possible": min_p_floor(c_pipes, n_perm, exact),
        "min_p_value": min_p_floor(c_pipes, n_perm, exact),  # the collapse/1 name
        "n_permutations": n_perm, "exact_permutation": exact,
        "n_boot": int(n_boot), "alpha": ALPHA,
        "method": {
            "smoother": f"pooled-ECDF coordinates, isotonic regression on {N_BINS} quantile bins, running mean "
                        "over +-1 bin, linear between knots (no tuning)",
            "error": "squared error / the held-out pipeline's own seed-noise variance of the seed mean",
            "D": "mean over pipelines of clip(log((1 + e_epoch) / (1 + e_axis)), +-log 100)",
            "p_value": "coordinate-swap sign-flip permutation, leave-one-out analysis recomputed per pattern",
            "p_adjusted": "Westfall-Young min-p over the identifiable forgetting clocks (steps excluded)",
            "interval": "bootstrap: seeds within pipelines (analysis rerun), then pipelines",
        },
    }, view


def _candidate_axes(clocks: dict[str, np.ndarray], epoch: np.ndarray, notes: list[str],
                    axes: Sequence[str] | None = None) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    """Log time of every axis the cube can be scored on (epoch first; a clock identical to one already taken
    on every pipeline is merged into it, so the multiplicity family counts one hypothesis once), the merged
    clocks, and the family's clocks the cube has but ``axes`` left out.

    Without ``axes`` the candidates are the clocks table's family; with it, the clocks it names (T_wd too)."""
    x = {EPOCH_AXIS: _log_axis(epoch, epoch)}
    merged: dict[str, str] = {}
    usable = {a: bool(np.isfinite(_log_axis(clocks[a], epoch)).any()) for a in cube.ALL_CLOCKS}
    # the clocks table says which clocks join the family; the axes option narrows (or names) them
    chosen = clock_family() if axes is None else tuple(a for a in cube.ALL_CLOCKS if a in axes)
    left_out = [a for a in clock_family() if a not in chosen and usable[a]]
    for a in (STEP_AXIS, *chosen):
        xa = _log_axis(clocks[a], epoch)
        if not np.isfinite(xa).any():
            continue
        twin = same_axis(xa, x)
        if twin is not None:  # e.g. T_eta_mom without momentum: one clock, not two tries in the family
            merged[a] = twin
            continue
        x[a] = xa
    if merged:
        notes.append("merged (identical on every pipeline, counted once): "
                     + ", ".join(f"{a} = {b}" for a, b in merged.items()))
    if left_out:
        notes.append(f"left out by {option('axes')} (in the cube, not scored): {', '.join(left_out)}")
    # Only clocks that were asked for (the four every collected cube has, by default) are reported missing.
    asked = cube.CLOCKS if axes is None else chosen
    absent = [a for a in asked if a not in x and a not in merged]
    if absent:
        notes.append(f"the cube has no usable {', '.join(absent)} curve(s) (missing or zero): not scored")
    return x, merged, left_out


@dataclass(frozen=True)
class _Permutation:
    """The permutation test of every compared axis: raw and family-adjusted p-values, and how it ran."""

    p_raw: np.ndarray
    p_adj: np.ndarray
    exact: bool
    n_perm: int  # patterns evaluated, negations included: the p-value floor is 2 / n_perm


def _permutation(comp: dict, compared: list[str], tested: list[str], family: list[str], d_obs: np.ndarray,
                 y: np.ndarray, v: np.ndarray, rng: np.random.Generator) -> _Permutation:
    """Permutation null for every tested (identifiable) axis, min-p adjustment over the forgetting clocks."""
    p_raw = np.full(len(compared), np.nan)
    p_adj = np.full(len(compared), np.nan)
    if not tested:
        return _Permutation(p_raw, p_adj, True, 0)
    idx = [compared.index(a) for a in tested]
    null, exact = _null_d(comp, tested, y, v, rng)
    p_raw[idx] = inference.permutation_p(d_obs[idx], null)
    p_adj[idx] = inference.min_p_adjust(d_obs[idx], null, np.array([a in family for a in tested]))
    return _Permutation(p_raw, p_adj, exact, null.shape[0])


def _vs_epoch_entry(i: int, names: list[str], d_obs: np.ndarray, ratios: np.ndarray, boot: np.ndarray,
                    perm: _Permutation, *, in_family: bool) -> dict[str, Any]:
    """collapse.json's ``vs_epoch`` entry of the i-th compared axis: D with its bootstrap interval and
    p-values, per pipeline."""
    draws = boot[:, i][np.isfinite(boot[:, i])] if boot.size else np.zeros(0)
    q05, q95 = np.quantile(draws, [0.05, 0.95]) if draws.size >= 10 else (math.nan, math.nan)
    defined = np.flatnonzero(np.isfinite(ratios[i]))
    return {"D": d_obs[i], "q05": q05, "q95": q95, "p_value": perm.p_raw[i], "p_adjusted": perm.p_adj[i],
            "n_pipelines": int(defined.size), "min_p_possible": min_p_floor(int(defined.size), perm.n_perm, perm.exact),
            "pipelines": [names[j] for j in defined], "in_family": in_family, "n_boot": int(draws.size),
            "per_pipeline": {names[j]: ratios[i, j] for j in defined}}


def _bootstrap(src: Source, pair_cfg: np.ndarray, n_pairs: int, n_boot: int, rng) -> np.ndarray:
    """(n_boot, n_pairs) bootstrap draws of D: seeds redrawn, analysis rerun, pipelines resampled."""
    if not n_pairs or not n_boot:
        return np.zeros((0, n_pairs))
    flat = pair_cfg.reshape(-1, *pair_cfg.shape[-2:])
    out = np.full((n_boot, n_pairs), np.nan)
    for b in range(n_boot):
        yb, vb = src.stats(src.draw_seeds(rng))
        r, _ = _pair_d(held_out_errors(flat, yb, floor_var(vb)), n_pairs)
        pick = rng.integers(0, r.shape[1], r.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out[b] = np.nanmean(r[:, pick], axis=1)
    return out


def _axes_entries(names, axes, held, n_def, c_pipes) -> dict:
    out = {}
    for k, a in enumerate(axes):
        err = held.err[k]
        sc = np.isfinite(err)
        out[a] = {
            "loco_error": np.mean(err[sc]) if sc.any() else math.nan,
            "floor_ratio": np.mean(held.mse[k][sc]) / np.mean(held.noise[k][sc]) if sc.any() else math.nan,
            "overlap": np.nanmean(held.overlap[k][sc]) if sc.any() else math.nan,
            "scored_pipelines": [names[i] for i in np.flatnonzero(sc)],
            "n_points": int(held.npts[k][sc].sum()),
            "per_pipeline": {names[i]: err[i] for i in np.flatnonzero(sc)},
        }
        n = n_def.get(a, c_pipes)
        if n < MIN_UNITS:
            out[a]["note"] = (f"defined (T > 0 after epoch 0) for {n} of {c_pipes} pipeline(s): a "
                              f"leave-one-pipeline-out comparison needs >= {MIN_UNITS}; not compared")
        elif n < c_pipes:
            out[a]["note"] = f"compared with epochs only where defined: {n} of {c_pipes} pipelines"
    return out


def _verdict(vs: dict[str, dict[str, Any]], family: list[str], identifiable: dict[str, bool],
             notes: list[str], *, n_def: dict[str, int] | None = None,
             left_out: Sequence[str] = ()) -> tuple[str, str | None]:
    """The verdict and its best axis; a note says why when nothing could be tested. The notes speak of the
    clocks actually scored: a clock left out by the axes option is neither missing nor unidentifiable."""
    clocks = [a for a in identifiable if a != STEP_AXIS]
    n_def = n_def or {}
    others = f"; {', '.join(left_out)} left out by {option('axes')}" if left_out else ""
    if not clocks:  # nothing to compare: not a property of the design, so not "not_identifiable"
        why = (f"the clocks the cube has were left out by {option('axes')}" if left_out
               else "the cube has no usable forgetting clock")
        notes.append(f"no forgetting clock was scored ({why}): nothing was compared with epochs")
        return "no_difference", None
    # Identifiability compares pipelines at an epoch: it says nothing of a clock defined on one pipeline.
    judged = [a for a in clocks if n_def.get(a, 2) >= 2]
    if judged and not any(identifiable[a] for a in judged):
        if left_out:
            notes.append(f"no forgetting clock scored ({', '.join(clocks)}{others}) separates the pipelines "
                         "differently from epochs: not identifiable")
        else:
            notes.append("no forgetting clock separates the pipelines differently from epochs on this design "
                         "(e.g. lr proportional to batch size, one lambda, one schedule): not identifiable")
        return "not_identifiable", None
    if not family:
        notes.append(f"no identifiable clock is defined on >= {MIN_UNITS} pipelines: nothing could be tested"
                     + (f" (scored: {', '.join(clocks)}{others})" if left_out else ""))
        return "no_difference", None
    sig = [a for a in family if np.isfinite(vs[a]["p_adjusted"]) and vs[a]["p_adjusted"] < ALPHA]
    better = [a for a in sig if vs[a]["D"] > 0]
    if better:
        return "clock_better", max(better, key=lambda a: vs[a]["D"])
    powered = [a for a in family if vs[a]["min_p_possible"] < ALPHA]
    if powered and all(a in sig and vs[a]["D"] < 0 for a in powered):
        return "epoch_better", EPOCH_AXIS
    cand = [a for a in family if np.isfinite(vs[a]["D"])]
    top = max(cand, key=lambda a: vs[a]["D"]) if cand else None
    return "no_difference", (top if top is not None and vs[top]["D"] > 0 else EPOCH_AXIS)


def _explain(vs: dict[str, dict[str, Any]], identifiable: dict[str, bool], n_def: dict[str, int],
             axes: dict[str, dict[str, Any]], *, c_pipes: int, verdict: str, best: str | None) -> list[str]:
    """What limits the verdict (too few pipelines, clocks that cannot be told from epochs or are defined on
    too few pipelines) and what qualifies a win: one note each, in reading order."""
    notes: list[str] = []
    min_p = 2.0 ** (1 - c_pipes)
    if min_p >= ALPHA:
        notes.append(f"only {c_pipes} pipelines: the smallest possible two-sided sign-flip p-value is "
                     f"2^(1-{c_pipes}) = {min_p:.3g} >= {ALPHA}, so no verdict can be significant; run >= 6")
    for a in vs:
        if not identifiable[a]:
            notes.append(f"{a} is not identifiable: at a fixed epoch it orders the pipelines like epochs")
        elif vs[a]["min_p_possible"] >= ALPHA:
            notes.append(f"{a} is defined for only {n_def[a]} pipelines (min p = {vs[a]['min_p_possible']:.3g}): "
                         "it cannot reach significance on its own")
    if verdict == "clock_better":
        fr, fr_e = axes[best]["floor_ratio"], axes[EPOCH_AXIS]["floor_ratio"]
        # Only where it informs: the clock removed less than half of epochs' excess error. With
        # paired seeds the radial noise floor is tiny and every axis sits far above it.
        if np.isfinite(fr) and fr > 3 and np.isfinite(fr_e) and fr > 0.5 * fr_e:
            notes.append(f"{best} beats epochs but keeps {fr / fr_e:.0%} of epochs' held-out error "
                         f"({fr:.1f}x the seed-noise floor): less bad, not collapsed")
        if np.isfinite(vs[best]["q05"]) and vs[best]["q05"] <= 0:
            notes.append(f"{best}: significant by the permutation test, but the bootstrap interval of D "
                         "reaches 0; treat the size of the gain as uncertain")
    return notes


__all__ = ["SCHEMA", "VERDICTS", "CollapseStatistics", "SeedSteps", "collapse_statistics", "collapse_test",
           "seed_steps"]

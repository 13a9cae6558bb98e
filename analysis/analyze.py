"""``initmem analyze``: fit the memory model to a cube and write the analysis folder.

One function, :func:`analyze_cube`, runs the whole analysis (docs/analysis.md): the hierarchical
Bayesian memory model (with one automatic, visible retry when the sampler's diagnostics fail),
the frequentist cross-checks, memory curves and the collapse test. It builds the folder's typed
records (:mod:`initmem.results`, fields in docs/analysis-folder.md) and writes ``posterior.nc``,
``summary.json`` (and ``curves.nc`` / ``collapse.json`` when the cube has curves), all or nothing: every part
is computed first, then the files are written into a temporary folder and moved in (analysis/staging.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Unpack

from initmem import cube
from initmem import results as R
from initmem.analysis.staging import check_out_dir, staged_folder
from initmem.cube.levels import probe_is_categorical
from initmem.errors import OptionError, UserError, option
from initmem.models import arviz_io
from initmem.models.memory import (
    MemoryModel,
    failed_fits,
    prepare_data,
    versions,
)
from initmem.models.rules import rule_text, stated_rule
from initmem.models.sequential import SEQUENTIAL_DESIGN, Spending, parse_design
from initmem.models.summaries import estimand
from initmem.results.margins import resolve_margins
from initmem.results.records import summary_units
from initmem.results.spec import AnalysisOptions, AnalysisSpec


def spending_of(spec: AnalysisSpec) -> Spending:
    """The analysis's :class:`Spending`: a fixed design at ``spec.alpha``, or the look ``spec.look`` (1 = first) of
    the sequential design ``spec.looks`` under ``spec.design`` (None: the default design)."""
    if spec.looks is None or spec.look is None:
        return Spending(spec.alpha)
    design = spec.design or SEQUENTIAL_DESIGN
    try:
        parse_design(design)
    except ValueError as exc:
        raise OptionError("design", f"{{option}}: {exc}") from None
    return Spending(spec.alpha, spec.looks, spec.look - 1, design)


def verdict_rule(alpha: float | Spending, draws: int | None = None) -> str:
    """The decision rule as summary.json states it (docs/memory-model.md, "Verdict"), at this analysis's alpha: a
    fixed design's, or a sequential look's :class:`Spending`. The sentence is written from the route records
    (models/rules.py, ``rule_text``); summary.json's ``thresholds`` holds its numbers typed."""
    return rule_text(alpha, draws)


def warn(msg: str) -> None:
    """Diagnostics problems go to stderr as well as into summary.json: never hidden."""
    print(f"initmem: warning: {msg}", file=sys.stderr)


def fit_checked(model: MemoryModel, *, sampler: str, draws: int, tune: int, chains: int, seed: int,
                progress: bool, label: str = "") -> dict[str, Any]:
    """Fit, check R-hat / ESS / divergences, and retry once (target_accept 0.99, twice the tuning)
    when any check fails (``MemoryModel.fit_retrying``), each flag and the retry printed on stderr. Returns the
    diagnostics of the final fit plus the retry record."""
    return model.fit_retrying(sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
                              warn=warn, label=label)


def _gated_note(ds: Any, gate: str, pipeline: str | None = None) -> str | None:
    """When the interpolation gate left out finished runs (of ``pipeline``, or of the cube): how many, the
    threshold, and what to do. None when the gate is off or excluded nothing."""
    if gate != "interpolated" or cube.TAU_INTERP not in ds or cube.STATUS not in ds:
        return None
    ok = ds[cube.STATUS] == cube.OK
    tau = ds[cube.TAU_INTERP]
    if pipeline is not None:
        ok, tau = ok.sel({cube.PIPELINE: pipeline}), tau.sel({cube.PIPELINE: pipeline})
    n_out = int((ok & tau.isnull()).sum())
    if n_out == 0:
        return None
    n_ok = int(ok.sum())
    threshold = ds.attrs.get(cube.A_INTERP_THRESHOLD)
    at = f" ({float(threshold):g} training accuracy)" if threshold is not None else ""
    every = "none" if n_out == n_ok else f"{n_ok - n_out}"
    return (f"{n_out} of {n_ok} finished runs did not reach the interpolation threshold{at} and the interpolation "
            f"gate excluded them ({every} passed); use {option('gate', 'all')} or train longer")


def analyze_cube(
    cube_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    spec: AnalysisSpec | None = None,
    *,
    progress: bool = True,
    command: list[str] | None = None,
    replace: bool = False,
    **options: Unpack[AnalysisOptions],
) -> R.Summary:
    """Analyze one metric of a cube into an analysis folder: the memory model and its verdicts, the
    design-based cross-checks, the radial verdict, the memory curves and the collapse test.

    Parameters
    ----------
    cube_path : str or os.PathLike
        The cube (``initmem collect``, ``import`` or ``simulate``).
    out_dir : str or os.PathLike
        The analysis folder to write: ``posterior.nc``, ``summary.json`` and, when the cube has curves,
        ``curves.nc`` and ``collapse.json`` (docs/analysis-folder.md).
    spec : AnalysisSpec, optional
        Every option at once (docs/analysis.md); None: the defaults.
    progress : bool, default True
        Show the sampler's progress bar.
    command : list of str, optional
        The command line recorded in summary.json (the CLI passes its own).
    replace : bool, default False
        Replace ``out_dir`` whole (nothing of an earlier folder is kept) instead of writing the analysis's files
        into it; either way the folder changes all at once, or not at all.
    **options
        Fields of :class:`AnalysisSpec` as keywords (``delta=0.02``), replacing the spec's, typed by
        :class:`~initmem.results.spec.AnalysisOptions`; each is validated once, here. ``gate="interpolated"``
        fits only runs that reached the interpolation threshold (a run that never fit its training set says
        nothing about what it remembers); ``delta`` defaults to one point for accuracies and is required for
        any other metric.

    Returns
    -------
    Summary
        The summary record (``summary.pipelines[name].verdict`` and everything in summary.json).

    Raises
    ------
    UserError
        The cube cannot be read or has nothing to analyze, or ``out_dir`` cannot hold an analysis.
    OptionError
        An option is invalid (the message names it).

    Examples
    --------
    A simulated cube, analyzed with short chains (the defaults sample four chains of 1,000 draws):

    >>> import initmem
    >>> cube = initmem.simulate_cube([initmem.SimPipeline("flat", sigma_sd=0.0, n_sigma=3, n_seed=3),
    ...                               initmem.SimPipeline("steep", sigma_sd=0.5, n_sigma=3, n_seed=3)], seed=1)
    >>> summary = initmem.analyze(initmem.write_cube(cube, "sim.nc"), "analysis", draws=100, tune=100, chains=2,
    ...                           n_boot=0, progress=False)
    >>> sorted(summary.pipelines), summary.delta
    (['flat', 'steep'], 0.01)
    >>> summary.pipelines["steep"].spread.median > summary.pipelines["flat"].spread.median
    True
    >>> initmem.analyze("sim.nc", "analysis", chain=2)
    Traceback (most recent call last):
    initmem.errors.OptionError: chain is not an analysis option; did you mean chains?
    """
    spec = AnalysisSpec.of(spec, **options)
    seed = spec.seed
    out = check_out_dir(out_dir, "analysis")
    ds = cube.open_cube(cube_path)
    if spec.memory == "radial" and probe_is_categorical(ds):
        warn("the cube's probe is categorical (shape): the radial memory (a slope on log sigma_w) does not apply, "
             "so the collapse test uses the functional memory (docs/arms.md)")
        spec = spec.model_copy(update={"memory": "functional"})
    try:
        data = prepare_data(ds, spec.metric, spec.family, gate=spec.gate, seed=seed)
    except UserError as exc:
        gated = _gated_note(ds, spec.gate)
        if gated and type(exc) is UserError:
            raise UserError(f"{exc}; {gated}") from None
        raise
    spend = spending_of(spec)     # a sequential design this version does not know is refused before the fit
    margins = resolve_margins(data.metric, delta=spec.delta, rope=spec.rope, draw_margin=spec.draw_margin,
                              accuracy=data.is_accuracy)
    delta = margins.delta
    for note in data.notes:
        warn(note)
    for pipe, reason in data.skipped.items():
        gated = _gated_note(ds, data.gate, pipe) if "usable runs" in reason else None
        warn(f"pipeline {pipe!r} skipped: {reason}" + (f"; {gated}" if gated else ""))

    model = MemoryModel(data, delta=delta, slots=spec.compile_shape)
    diag = model.fit_retrying(sampler=spec.sampler, draws=spec.draws, tune=spec.tune, chains=spec.chains, seed=seed,
                              progress=progress, warn=warn)
    # Each pipeline's entry is a typed record from the moment the model decides it, with its model checks and its
    # sampler's diagnostics; every later step returns a new record (the frequentist cross-check, the radial verdict).
    pipelines = model.results(delta, spend, checks_seed=seed, fit=diag)

    from initmem.stats.frequentist import crosschecked
    from initmem.stats.radial import radial_verdicts

    pipelines = crosschecked(ds, data.metric, float(delta), pipelines)
    for pipe, radial in radial_verdicts(ds).items():
        if pipe in pipelines:
            pipelines[pipe] = pipelines[pipe].replaced(radial=radial)

    from initmem.analysis.crossed import crossed_block

    crossed, crossed_notes = crossed_block(ds, data, margin=margins.draw_margin, alpha=spec.alpha,
                                           draws=spec.draws, tune=spec.tune, chains=spec.chains, seed=seed,
                                           progress=progress)
    for note in crossed_notes:
        warn(note)

    from initmem.analysis.collapse import collapse_view
    from initmem.stats.curves import memory_curves, write_curves

    curves = memory_curves(ds, n_boot=spec.n_boot, seed=seed)
    # The functional memory is forgotten below the rope (the analysis's delta unless given: results/margins.py).
    raw_collapse = collapse_view(ds, spec.model_copy(update={"rope": margins.rope}))
    collapse = R.build_collapse(raw_collapse) if raw_collapse is not None else None

    draws = spec.draws * spec.chains
    limits, rule = stated_rule(spend, draws)     # every number the verdicts decide at, computed once: typed, in words
    summary: dict[str, Any] = {
        "metric": data.metric,
        "family": data.family,
        "likelihood": data.likelihood,
        "estimand": estimand(model),
        "delta": float(delta),
        "margins": margins.to_json(),
        "is_accuracy": data.is_accuracy,
        "gate": data.gate,
        "n_test": data.n_test,
        "pipelines": pipelines,
        "skipped": data.skipped,
        "n_excluded": data.n_excluded,
        "priors": model.priors.describe(),
        "prior_values": model.priors.as_dict(),
        "model": model.describe(),
        "verdict_rule": rule,
        "alpha": spend.level(1.0),           # the level of the full share at this analysis
        "thresholds": limits.to_json(),
        "spending": {**spend.describe(), "draws": draws},
        "diagnostics": {k: v for k, v in diag.items() if k != "per_pipeline"},
        "cube": str(Path(cube_path)),
        "command": list(command) if command is not None else list(sys.argv),
        "versions": versions(),
        "crossed": crossed,
        "units": summary_units(bool(data.is_accuracy)),
        "outputs": {"posterior": R.POSTERIOR_NC, "curves": R.CURVES_NC if curves is not None else None,
                    "collapse": R.COLLAPSE_JSON if collapse is not None else None},
    }
    record = R.build_summary(summary)
    if collapse is not None:
        R.attach_forgetting_times(record, collapse)
    # Nothing is written before every part has been computed, and then all at once (analysis/staging.py): a
    # failure leaves no folder holding curves.nc alone, and an earlier analysis in DIR stays whole.
    with staged_folder(out, what="analysis", last=R.SUMMARY_JSON, replace=replace,
                       stale=(R.CURVES_NC, R.COLLAPSE_JSON, R.REPORT_HTML)) as tmp:
        if curves is not None:
            write_curves(curves, tmp / R.CURVES_NC)
        if collapse is not None:
            R.write_collapse(tmp, collapse)
        arviz_io.to_netcdf(model.idata, tmp / R.POSTERIOR_NC)
        R.write_summary(tmp, record)
    return record


__all__ = ["analyze_cube", "failed_fits", "fit_checked"]

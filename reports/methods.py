"""The auto-generated methods paragraph: what a paper needs to say about how the numbers were made.

Every sentence is assembled from what the analysis folder (docs/analysis-folder.md) and the cube
record (the grid file, the summary's model paragraph, priors, sampler diagnostics, tests and versions),
so the text changes when the run changes. Nothing here is a hard-coded claim about results.

One source for two readers: :func:`methods_text` gives the paragraphs as :class:`Sentence` s, each
with the citation keys of the methods it names (keys of :data:`initmem.reports.references.REFERENCES`).
The HTML report prints the plain sentences (:func:`methods_paragraphs`); ``initmem export`` writes
the same sentences with their citations to methods.md and methods.tex (docs/export.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from initmem import cube as C
from initmem import optimizers
from initmem.grid.datasets import GENERATED, NAMES
from initmem.grid.datasets import dataset as dataset_entry
from initmem.models.rules import READOUT, ROUTE
from initmem.models.sequential import parse_design, spending_label
from initmem.plot.load import Analysis, seed_design, verdict_levels
from initmem.plot.model import seed_caption
from initmem.results.records import LIKELIHOOD_LABELS


@dataclass(frozen=True)
class Sentence:
    """One sentence of the methods text and the citation keys of the methods it names."""

    text: str
    cites: tuple[str, ...] = ()

# The observation model of docs/memory-model.md ("Likelihood"): always a Gaussian on the metric,
# with a per-pipeline noise scale (the unit of the priors) taken from what the cube holds.
LIKELIHOOD_TEXT = {
    "per_example": "a Gaussian on the accuracy, with the independent-errors SD of the per-example predictions "
                   "on the shared test set as each pipeline's noise scale, or, where some sigma_w level's mean "
                   "accuracy reaches 99% and the runs vary more than that, the pooled SD across seeds within "
                   "sigma_w levels",
    "counts": "a Gaussian on the accuracy, with the binomial bound sqrt(p(1 - p) / n) from the counts of correct "
              "test answers as each pipeline's noise scale (an upper bound on the fixed-test-set noise), or, "
              "where some sigma_w level's mean accuracy reaches 99% and the runs vary more than that, the pooled "
              "SD across seeds within sigma_w levels",
    "gaussian": "a Gaussian on the metric, with the pooled SD across seeds within sigma_w levels as each "
                "pipeline's noise scale",
}
# The same in a few words, for the report's header line: what the model does, not the family name
# (the likelihood is Gaussian whatever summary.json's family says; the family picks the noise scale). One table
# for the command line, the Summary and the report (results/records.py).
LIKELIHOOD_LABEL = LIKELIHOOD_LABELS
LIKELIHOOD_CITES = {"per_example": ("jordan2024variance",)}
# Where the analysis's own paragraphs point at files: a paper's methods section has no use for them.
_FILE_REFERENCE = re.compile(r"\s*\((?:models|stats|docs)/[\w./-]+\)|\s*See docs/[\w./-]+\.")


def likelihood_label(a: Analysis) -> str | None:
    """The observation model in a few words (None when summary.json does not record it)."""
    lik = a.summary.likelihood
    return LIKELIHOOD_LABEL.get(lik, lik) if lik else None

# How seeds relate across sigma_w (cube attribute seed_design): one sentence per design, used by the
# Methods text and the figure captions alike.
SEED_DESIGN_TEXT = {
    C.SEED_PAIRED: "Seeds are paired across sigma_w (common random numbers): one seed fixes the initial direction, "
                   "the data order and the augmentation draws identically at every sigma_w, so the model has a "
                   "seed effect shared by all levels and a drift of each seed's own along log sigma_w.",
    C.SEED_INDEPENDENT: "Seeds are independent across sigma_w: runs with the same seed number at different sigma_w "
                        "share no randomness, so the model has no seed effect and no per-seed drift along log sigma_w, "
                        "and a seed number only labels a replicate.",
}


def seed_design_sentence(a: Analysis) -> str:
    design = seed_design(a)
    if design is None:
        return "The seed design (paired or independent across sigma_w) is unknown: the cube was not available."
    text = SEED_DESIGN_TEXT[design]
    if a.grid() is None and C.A_SEED_DESIGN in a.cube.attrs:
        text += " The design was declared when the table was imported (seeds: " + design + ")."
    return text
SELECT_TEXT = {"best_val_acc": "the checkpoint with the best validation accuracy", "last": "the last checkpoint"}


def _join(items: list[str]) -> str:
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _pipeline_text(name: str, s: dict[str, Any]) -> str:
    if s.get("entry") or s.get("command"):   # the user's own code (docs/own-model.md): its settings are its own
        how = f"entry point {s['entry']}" if s.get("entry") else f"command `{s['command']}`"
        settings = ", ".join(f"{k} {v}" for k, v in (s.get("settings") or {}).items())
        return f"{name} (the user's code, {how}{'; ' + settings if settings else ''})"
    opt = str(s.get("optimizer", "?"))
    parts = [optimizers.display_name(opt), f"lr {_fmt(s.get('lr'))}"]
    if s.get("momentum"):
        parts.append(f"{'Nesterov ' if s.get('nesterov') else ''}momentum {_fmt(s['momentum'])}")
    if s.get("batch_size") is not None:
        parts.append(f"batch {s['batch_size']}")
    wd = s.get("weight_decay")
    if wd:
        decoupled = opt in optimizers.BY_NAME and optimizers.get(opt).l2 == optimizers.DECOUPLED
        parts.append(("decoupled weight decay " if decoupled else "L2 ") + _fmt(wd))
    if s.get("schedule"):
        sched = f"{s['schedule']} schedule"
        if s["schedule"] == "step" and s.get("milestones"):
            sched += f" (x{_fmt(s.get('gamma', 0.1))} at epochs {', '.join(map(str, s['milestones']))})"
        parts.append(sched)
    if s.get("warmup_epochs"):
        parts.append(f"{s['warmup_epochs']} warm-up epochs")
    if s.get("epochs") is not None:
        parts.append(f"{s['epochs']} epochs")
    return f"{name} ({', '.join(parts)})"


def _model_text(m: dict[str, Any]) -> str:
    width = f" of width {m['width']}" if m.get("width") else ""
    return f"{m.get('arch', '?')}{width}, norm {m.get('norm', '?')}"


def probe_sentence(init: dict[str, Any], sig: list[Any], n_seeds: int) -> str:
    """What the sigma_w axis was: the initialization probe of the grid (docs/arms.md)."""
    scheme = str(init.get("scheme", "kaiming_normal")).replace("_", " ")
    scale = str(init.get("scale", "all_kernels")).replace("_", " ")
    probe = init.get("probe", "scale")
    levels = f"{{{', '.join(_fmt(float(s)) for s in sig)}}} ({len(sig)} levels), each with {n_seeds} seeds."
    if probe == "shape":
        shapes = ", ".join(str(s).replace("_", " ") for s in init.get("shapes") or [])
        return (f"Initialization probe shape: the {scale} were drawn at the {scheme} variance from one of "
                f"{len(sig)} distributions ({shapes}; sigma_w holds their codes 1..{len(sig)}, an unordered "
                f"axis), each with {n_seeds} seeds.")
    if probe == "layer_scale":
        return (f"Initialization probe layer_scale: the {scheme} initialization of the {init.get('layers')} "
                f"layer group was multiplied by sigma_w in {levels}")
    if probe == "width_scaling":
        return (f"Initialization probe width_scaling ({init.get('parametrization', 'standard')} "
                f"parametrization): the hidden width was sigma_w times the model width, sigma_w in {levels}")
    return f"Initialization probe scale: the {scheme} initialization of {scale} was multiplied by sigma_w in {levels}"


def design_sentences(a: Analysis) -> list[str]:
    validated = a.grid()  # a grid.Grid: every field present and valid
    grid = validated.to_dict() if validated is not None else None
    out: list[str] = []
    if grid:
        ds = grid.get("dataset", {}) or {}
        model = grid.get("model", {}) or {}
        init = grid.get("init", {}) or {}
        ev = grid.get("eval", {}) or {}
        arch = str(model.get("arch", "?"))
        width = f" of width {model['width']}" if model.get("width") else ""
        norm = {"batch": "with batch normalization", "layer": "with LayerNorm"}.get(
            str(model.get("norm", "batch")), "without normalization")
        if ds.get("name") in NAMES and dataset_entry(str(ds["name"])).source == GENERATED:
            # generated, not split: its sizes and generation seed say what it is
            data = (f"MNIST-1D generated offline by the mnist1d package (seed {ds.get('seed', 0)}; "
                    f"{ds.get('n_train', 4000)} training, {ds.get('n_val', 1000)} validation and "
                    f"{ds.get('n_test', 10000)} test signals)")
        else:
            data = (f"{ds.get('name', '?')} (validation fraction {_fmt(ds.get('val_fraction', 0.2))} of the training "
                    f"set, split seed {ds.get('split_seed', 0)}, augmentation {ds.get('augment', 'none')}"
                    + (f", {a.cube.attrs[C.A_N_TEST]} test examples" if a.cube is not None
                       and C.A_N_TEST in a.cube.attrs else "") + ")")
        user = [n for n, p in (grid.get("pipelines") or {}).items() if p.get("entry") or p.get("command")]
        if len(user) < len(grid.get("pipelines") or {}):   # some pipeline trains the grid's model on its data
            out.append(f"We trained a {arch}{width} {norm} on {data}.")
        if user:
            out.append(f"Pipeline{'s' if len(user) > 1 else ''} {', '.join(user)} ran the user's own training "
                       "code (its own model and data), given each cell's sigma_w and seeds, its runs recorded by "
                       "initmem's recorder.")
        sig = grid.get("sigma_w") or []
        pipes = grid.get("pipelines", {}) or {}
        own = {n: s["model"] for n, s in pipes.items() if isinstance(s, dict) and s.get("model")}
        if own:
            out.append("Pipelines with their own model: " + "; ".join(
                f"{n}: {_model_text(m)}" for n, m in own.items()) + ".")
        n_runs = len(validated.runs)  # a crossed design's runs are its (init, data) pairs, not its two lists
        out.append(probe_sentence(init, sig, n_runs) + " " + seed_design_sentence(a))
        if validated.crossed:
            out.append(f"The {n_runs} seeds of a level were crossed: every pair of {len(validated.seeds.init)} init "
                       f"seeds and {len(validated.seeds.data)} data seeds.")
        out.append(f"Each of {len(pipes)} training pipelines ran every (sigma_w, seed) cell "
                   f"({len(pipes) * len(sig) * n_runs} runs): "
                   + "; ".join(_pipeline_text(n, s or {}) for n, s in pipes.items()) + ".")
        out.append(
            f"Each run is represented by {SELECT_TEXT.get(ev.get('select', 'best_val_acc'), ev.get('select'))}; "
            f"a run counts as interpolating"
            f" from the first epoch its training accuracy reaches {_fmt(float(ev['interp_threshold']))}.")
    elif a.cube is not None:
        src = a.cube.attrs.get(C.A_SOURCE) or a.cube.attrs.get(C.A_DEVICE) or "an external source"
        n = a.cube.sizes
        out.append(
            f"The cube was not collected from a grid file (source: {src}); it holds {n.get(C.PIPELINE, 0)} "
            f"pipelines, {n.get(C.SIGMA, 0)} sigma_w levels and {n.get(C.SEED, 0)} seeds"
            + (f", {a.cube.attrs[C.A_N_TEST]} test examples" if C.A_N_TEST in a.cube.attrs else "") + ". "
            + seed_design_sentence(a))
        if C.TAU_INTERP not in a.cube.data_vars:
            out.append("The table records no interpolation epoch (tau_interp), so whether a run interpolated "
                       "is not known.")
    else:
        out.append("The analysed cube was not available when this report was built, so the design is described "
                   "from the analysis summary only.")
    return out


def _priors_text(priors: Any) -> str:
    if not priors:
        return ""
    if isinstance(priors, str):
        return f"Priors: {priors}"
    if isinstance(priors, dict):
        items = []
        for k, v in priors.items():
            items.append(f"{k}: {v}" if isinstance(v, str) else f"{k}: {json.dumps(v, default=str)}")
        return "Priors: " + "; ".join(items) + "."
    return "Priors: " + json.dumps(priors, default=str) + "."


def _sequential_and_radial_sentences(a: Analysis) -> list[Sentence]:
    """The sequential design (when the run added seeds until decided) and the radial verdict (when the cube had
    kernel norms), as run."""
    s = a.summary
    out: list[Sentence] = []
    if s.sequential is not None:
        q = s.sequential
        levels = ", ".join(f"{x:.3g}" for x in q.levels)
        try:
            family = spending_label(parse_design(q.design)[1])
        except ValueError:       # a design this version does not know: name it as recorded
            family = q.design
        how = (f"at the increment alpha_k of {family} spending ({levels}), "
               f"so that by the union bound a false verdict at any look has probability at most alpha = {q.alpha:g}"
               if "union bound" in q.design else
               f"at the nominal level ({levels}) whose boundary spends exactly the increment of "
               f"{family} spending under the joint distribution of the looks' "
               + ("paired t statistics on nested seeds (simulated)" if "paired t" in q.design else "statistics")
               + f", each share of alpha spent from its own allotment, so that each claim's false verdicts at all "
               f"looks together spend alpha = {q.alpha:g}")
        out.append(Sentence(
            f"Seeds were added only to undecided pipelines, at looks of {', '.join(map(str, q.looks))} seeds; look k "
            f"decided {how} (the same rule as a fixed analysis, with alpha_k in place of alpha). "
            f"The design trained {q.runs_used} runs where the fixed design trains {q.runs_fixed}.",
            ("lan1983spending",)))
    out += crossed_sentences(a)
    radial = [r for r in (a.pipe(p).radial for p in a.pipelines) if r is not None]
    if radial:   # the rule's sentence from its record (models/rules.py, READOUTS), at the margin it was decided at
        out.append(Sentence(READOUT["radial"].rule(margin=f"{radial[0].margin:g}"), ("berger1982iut",)))
    return out


def crossed_sentences(a: Analysis) -> list[Sentence]:
    """The crossed seed design's model and draw verdict (docs/crossed.md), when the analysis has a crossed block."""
    block = getattr(a.summary, "crossed", None)
    if block is None:
        return []
    unit = "accuracy points" if a.is_accuracy else "metric units"
    margin = (f"a margin of {block.margin * a.scale:g} {unit}" if block.margin is not None
              else "a margin (none was set here, so no pipeline has a draw verdict)")
    return [Sentence(
        f"Seeds were crossed ({block.n_init} init seeds x {block.n_data} data seeds, every pair one run): the init "
        "seed drew the initial weights, the data seed the data order, augmentation and dropout masks. Per pipeline "
        "the final metric was modelled as y = mu[l] + a[l, i] + b[l, j] + e[l, i, j] (l the sigma_w level, i the "
        "init seed, j the data seed), with SD_init the root mean over levels of the within-level SD of a, SD_data "
        "that of b and SD_resid that of e. " + READOUT["draw"].rule(block.alpha, margin)
        + "; the bounds are modified large-sample bounds "
        "on the mean squares averaged over levels, with the degrees of freedom of a single level, valid whatever "
        "the correlation of the effects across levels; the init mean square's degrees of freedom shrink further "
        "with the init seeds' sample kurtosis in the lower bound and stay under a tail allowance in the upper one, "
        "so that skewed or heavy-tailed draws (up to Student t with 3 degrees of freedom) keep both error rates. "
        "A Bayesian crossed model gave the posterior of the same "
        "components beside them. In the paired tests of the scale verdict, the standard error of each difference "
        "between levels summed the variances of its init-seed and data-seed means, with Welch-Satterthwaite "
        "degrees of freedom.",
        ("dodge2020finetuning", "graybill1980mls", "burdick1992variance", "bonett2006sd", "joanes1998kurtosis"))]


_MODEL_DATA = re.compile(r"gaussian, on (.+?); x is centred")


def independent_model_text(a: Analysis) -> str:
    """The memory model as fitted when seeds are independent across sigma_w (models/memory.py with
    seed_design independent): no seed effect, and no slope axis, so no trend and no per-seed drift."""
    m = _MODEL_DATA.search(a.summary.model or "")
    data = (f", gaussian, on {m.group(1)}" if m else
            f", gaussian ({LIKELIHOOD_TEXT[a.summary.likelihood]})" if a.summary.likelihood in LIKELIHOOD_TEXT
            else "")
    return (f"Memory model of {a.metric}: y = alpha + u[sigma_w] + e per pipeline{data}. The seeds are independent "
            "across sigma_w, so the model has no seed effect and no per-seed drift (no v[seed] and no b[seed]: "
            "the seed and seed-slope SDs are reported as exactly 0), and no linear trend in log sigma_w (its slope "
            "axis applies to paired seeds only); the sigma_w-level effects u are exchangeable and e is the "
            "run-to-run residual. alpha is integrated out (restricted likelihood of the level and residual SDs); "
            "NUTS samples the SDs, which are not pooled across pipelines; level effects are drawn from their exact "
            "conditional. memory_share = sigma_sd^2 / (sigma_sd^2 + residual_sd^2), the denominator including the "
            "run-to-run (observation) variance. 'remembers' also needs the seeds' differences between levels, "
            "compared by Welch's t (the seeds share nothing across levels).")


def _model_sentence(a: Analysis) -> Sentence:
    s = a.summary
    independent = seed_design(a) == C.SEED_INDEPENDENT
    if independent:
        return Sentence(independent_model_text(a))
    if s.model:
        return Sentence(_FILE_REFERENCE.sub("", s.model.strip()))
    return Sentence(
        f"The metric {a.metric} was modelled for each pipeline on its own with crossed sigma_w-level, seed, "
        "seed-slope and residual effects, their standard deviations given half-Student-t priors in units of the "
        "pipeline's noise scale (nothing pooled across pipelines).")


def _ceiling_clause(a: Analysis) -> str:
    """The rule near 100% accuracy, stated when some pipeline was there."""
    from initmem.models.paired import CEILING, SKEW_GATE

    near = [p for p, e in a.summary.pipelines.items() if e.near_ceiling]
    if not near:
        return ""
    return (f" Near the ceiling (an expected accuracy of {100 * CEILING:g}% or more at some sigma_w level: "
            f"{', '.join(near)}) it needs both routes, because the seeds' differences are skewed there and "
            "either test alone exceeds its level; where the seeds' errors are also strongly multiplicative (the SD "
            f"of the log of a seed's mean error across seeds at least {SKEW_GATE:g}) it needs, in addition, every pair "
            "of levels shown inside delta by a log-ratio test, which is valid for any seed factor shared by the "
            "levels (the error ratio by a paired t on log errors, the error level by the exact lognormal-mean bound "
            "of Krishnamoorthy and Mathew, each at half the test's level).")


def _rule_sentence(a: Analysis) -> Sentence:
    """The estimand and the decision rule at the thresholds the analysis used (its verdict_rule)."""
    s = a.summary
    shown = a.delta * a.scale
    unit = (f"{shown:g} accuracy {'point' if shown == 1 else 'points'}" if a.is_accuracy else f"{a.delta:g}")
    lv = verdict_levels(a)
    independent = seed_design(a) == C.SEED_INDEPENDENT
    t_test = "Welch t test (the seeds are independent)" if independent else "paired t test"
    tost = "two one-sided Welch t tests" if independent else "two one-sided paired t tests"
    diffs = "the seeds' differences between levels" if independent else "the seeds' paired differences"
    est = s.estimand.strip() if s.estimand else ""
    ceiling = _ceiling_clause(a)
    if est and est[-1] not in ".!?":
        est += "."
    if est and est[0].islower():  # the analysis writes a noun phrase ("max - min over ..."): make it a sentence
        est = "The spread (the estimand) is the " + est
    return Sentence(
        (est + " " if est else
         "The spread is the maximum minus the minimum over the sigma_w grid of the expected metric with seed noise "
         "averaged out. ")
        + f"A pipeline remembers its initialization if {diffs} carry it and the model agrees, "
        f"P(spread > delta) >= {lv.remembers:g}. The seeds' test is a pre-specified ordered test, first the "
        f"smallest against the largest sigma_w at "
        f"{ROUTE['extreme'].share:g} alpha, then the middle level of the grid against the mean of the two ends at "
        f"{ROUTE['peak'].share:g} alpha, then the other pairs of levels with Bonferroni at the remaining "
        f"{ROUTE['fallback'].share:.2g} alpha, each tested against delta by a "
        f"{t_test} whose p-value is maximized over an upper confidence bound of the pair's standard deviation at "
        f"2% of its level (Berger-Boos; alpha = {lv.alpha:g}; an accuracy's standard errors are floored at one test "
        "example); where the fit's sampler diagnostics failed it decides alone. It forgets its initialization if "
        + (f"P(spread < delta) >= {lv.forgets:g} (with at least three sigma_w levels), or if " if lv.forgets is not None
           else "")
        + f"every pair of levels is shown "
        f"inside +-delta by {tost} at {ROUTE['iut'].share:g} alpha = {lv.iut_alpha:.4g} (an intersection-union "
        "test); the two routes to forgetting share alpha so that either one deciding "
        f"keeps false verdicts at a spread of delta near alpha.{ceiling} It is undecided otherwise, "
        f"with delta = {unit}. A "
        f"verdict probability within two Monte Carlo standard errors of its threshold ({lv.remembers:g}"
        + (f" or {lv.forgets:g}" if lv.forgets is not None else "") + ") leaves it undecided, flagged borderline.",
        ("hsu1999stepwise", "berger1994nuisance", "berger1982iut")
        + (("krishnamoorthy2003lognormal",) if ceiling else ()))


def analysis_sentences(a: Analysis) -> list[Sentence]:
    """The model, priors, sampler, gate, decision rule, cross-checks and collapse test, as run."""
    s = a.summary
    out: list[Sentence] = [_model_sentence(a)]
    if s.likelihood:
        out.append(Sentence(f"Observation model: {LIKELIHOOD_TEXT.get(s.likelihood, s.likelihood)}.",
                            LIKELIHOOD_CITES.get(s.likelihood, ())))
    pr = _priors_text(s.priors)
    if pr:
        out.append(Sentence(pr))
    d = s.diagnostics
    if d.sampler:
        bits = [f"Posteriors were sampled with {d.sampler}"]
        for value, label in ((d.chains, "chains"), (d.draws, "draws per chain"), (d.tune, "tuning steps")):
            if value is not None:
                bits.append(f"{value} {label}")
        if d.target_accept is not None:
            bits.append(f"target acceptance {d.target_accept:g}")
        if d.seed is not None:
            bits.append(f"seed {d.seed}")
        diag = []
        if d.max_rhat is not None:
            diag.append(f"max R-hat {d.max_rhat:.3f}")
        if d.min_ess_bulk is not None:
            diag.append(f"min bulk ESS {d.min_ess_bulk:.0f}")
        if d.divergences is not None:
            diag.append(f"{d.divergences} divergent transitions")
        cites = ("hoffman2014nuts", *SAMPLER_CITES.get(str(d.sampler), ()))
        out.append(Sentence(", ".join(bits) + (f" ({', '.join(diag)})." if diag else "."), cites))
        if diag:
            out.append(Sentence("Convergence was checked with the rank-normalized R-hat and the bulk effective sample "
                                "size computed by ArviZ.", ("vehtari2021rhat", "kumar2019arviz")))
    if s.gate == "interpolated":
        out.append(Sentence("Only runs whose training accuracy reached the interpolation threshold entered the fit; "
                            "sigma_w levels without such a run were left out."))
    elif s.gate == "all" and a.cube is not None and C.TAU_INTERP not in a.cube.data_vars:
        out.append(Sentence("Every finished run entered the fit."))
    elif s.gate == "all":
        out.append(Sentence("Every finished run entered the fit, whether or not it reached the interpolation "
                            "threshold."))
    out.append(_rule_sentence(a))
    out += _sequential_and_radial_sentences(a)
    out.append(Sentence(
        "As frequentist cross-checks, each pipeline was treated as a randomized complete block design (treatment "
        "sigma_w, block seed): REML variance components of y ~ 1 + (1|sigma_w) + (1|seed), a repeated-measures "
        "ANOVA with the Greenhouse-Geisser correction and generalized eta squared, a Friedman test and two one-sided "
        "tests (TOST) of the spread against +-delta (over all pairs of levels, an intersection-union test), with "
        "Holm's correction across pipelines"
        + ("; with independent seeds the blocks are arbitrary labels, which costs the tests degrees of freedom but "
           "not validity." if seed_design(a) == C.SEED_INDEPENDENT else "."),
        ("patterson1971reml", "greenhouse1959", "olejnik2003eta", "friedman1937", "schuirmann1987tost",
         "berger1982iut", "holm1979")))
    c = a.collapse
    if c is not None:
        adj = {"holm": "Holm's correction", "max_statistic": "the Westfall-Young max-statistic permutation correction"}
        tried = [ax for ax in c.axes if ax not in (C.EPOCH, C.STEP)]
        out.append(Sentence(
            f"Forgetting clocks were compared by a leave-one-pipeline-out collapse test on the {c.memory} "
            "memory curves: one monotone master curve per time axis is fitted to the other pipelines and scored on the "
            "held-out pipeline relative to its seed-noise variance; the gain D over epochs is tested with an exact "
            "sign-flip permutation test over pipelines and a cluster bootstrap interval"
            + (f", with p-values adjusted across the clocks tried by {adj.get(c.adjustment, c.adjustment)}"
               if c.adjustment else "")
            + (f" ({c.n_pipelines} pipelines, smallest attainable p-value {c.min_p_possible:.3g})"
               if c.n_pipelines and c.min_p_possible is not None else "") + "."
            + (f" The clock family tried: {_join(tried)}." if tried else ""),
            ("westfall1993",) if c.adjustment == "max_statistic" else ("holm1979",) if c.adjustment == "holm"
            else ()))
    return out


def software_sentence(a: Analysis, report_versions: dict[str, str]) -> Sentence:
    versions: dict[str, str] = dict(a.summary.versions)
    if a.cube is not None:
        kinds = set(map(str, a.cube["optimizer"].values.ravel())) if "optimizer" in a.cube.coords else set()
        for attr, name, needed in ((C.A_INITMEM_VERSION, "initmem (collect)", None), (C.A_TORCH_VERSION, "torch", None),
                                   (C.A_LION_VERSION, "lion-pytorch", "lion"),
                                   (C.A_SCHEDULEFREE_VERSION, "schedulefree", "sf_adamw")):
            if needed is not None and needed not in kinds:   # a library's version only where its optimizer trained
                continue
            v = a.cube.attrs.get(attr)
            if v and name not in versions and not (name == "torch" and "torch" in versions):
                versions[name] = str(v)
    for k, v in report_versions.items():
        versions.setdefault(k, v)
    cites = tuple(dict.fromkeys(key for name in versions for key in PACKAGE_CITES.get(name.split(" ")[0], ())))
    return Sentence("Software: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ".", cites)


# The citation keys of the packages and samplers a run names (keys of reports/references.py).
PACKAGE_CITES = {"pymc": ("abril2023pymc",), "nutpie": ("seyboldt2024nutpie",), "arviz": ("kumar2019arviz",)}
SAMPLER_CITES = {"nutpie": ("seyboldt2024nutpie",), "pymc": ("abril2023pymc",)}


def methods_text(a: Analysis, report_versions: dict[str, str]) -> list[list[Sentence]]:
    """The methods paragraphs as sentences with their citation keys: the one source of the report's
    Methods section and of export's methods.md / methods.tex. The paper whose forgetting-time view
    the tool implements is cited by the collapse test's sentence, else by the model's."""
    design = [Sentence(t) for t in design_sentences(a)]
    analysis = analysis_sentences(a)
    if analysis:
        i = len(analysis) - 1 if a.collapse is not None else 0
        analysis[i] = Sentence(analysis[i].text, (*analysis[i].cites, PAPER_KEY))
    return [design, analysis, [software_sentence(a, report_versions)]]


PAPER_KEY = "forgetinit2026"


def methods_paragraphs(a: Analysis, report_versions: dict[str, str]) -> list[str]:
    """Paragraphs ready to paste into a methods section (plain text; the template escapes them)."""
    return [" ".join(x.text for x in para) for para in methods_text(a, report_versions)]


__all__ = ["LIKELIHOOD_LABEL", "LIKELIHOOD_TEXT", "PAPER_KEY", "SEED_DESIGN_TEXT", "Sentence", "analysis_sentences",
           "crossed_sentences",
           "design_sentences", "likelihood_label", "methods_paragraphs", "methods_text", "probe_sentence",
           "seed_caption",
           "seed_design", "seed_design_sentence", "software_sentence"]

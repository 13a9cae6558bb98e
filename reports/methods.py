"""The auto-generated methods paragraph: what a paper needs to say about how the numbers were made.

Every sentence is assembled from what the analysis folder and the cube record (the grid file, the
summary's model paragraph, priors, sampler diagnostics, tests and versions), so the text changes
when the run changes. Nothing here is a hard-coded claim about results.
"""

from __future__ import annotations

import json
from typing import Any

from initmem.reports.load import Analysis

OPTIMIZER_NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW"}
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
    opt = str(s.get("optimizer", "?"))
    parts = [OPTIMIZER_NAMES.get(opt, opt), f"lr {_fmt(s.get('lr'))}"]
    if s.get("momentum"):
        parts.append(f"{'Nesterov ' if s.get('nesterov') else ''}momentum {_fmt(s['momentum'])}")
    if s.get("batch_size") is not None:
        parts.append(f"batch {s['batch_size']}")
    wd = s.get("weight_decay")
    if wd:
        parts.append(("decoupled weight decay " if opt == "adamw" else "L2 ") + _fmt(wd))
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


def design_sentences(a: Analysis) -> list[str]:
    grid = a.grid()
    out: list[str] = []
    if grid:
        ds = grid.get("dataset", {}) or {}
        model = grid.get("model", {}) or {}
        init = grid.get("init", {}) or {}
        ev = grid.get("eval", {}) or {}
        arch = str(model.get("arch", "?"))
        width = f" of width {model['width']}" if model.get("width") else ""
        norm = "with batch normalization" if model.get("norm", "batch") == "batch" else "without normalization"
        out.append(
            f"We trained a {arch}{width} {norm} on {ds.get('name', '?')} (validation fraction "
            f"{_fmt(ds.get('val_fraction', 0.2))} of the training set, split seed {ds.get('split_seed', 0)}, "
            f"augmentation {ds.get('augment', 'none')}"
            + (f", {a.cube.attrs['n_test']} test examples" if a.cube is not None and "n_test" in a.cube.attrs else "")
            + ").")
        sig = grid.get("sigma_w") or []
        seeds = grid.get("seeds") or []
        out.append(
            f"The {init.get('scheme', 'kaiming_normal').replace('_', ' ')} initialization of "
            f"{str(init.get('scale', 'all_kernels')).replace('_', ' ')} was multiplied by sigma_w in "
            f"{{{', '.join(_fmt(float(s)) for s in sig)}}} ({len(sig)} levels), each with {len(seeds)} seeds. "
            "Seeds are common random numbers: one seed fixes the initial direction, the data order and the "
            "augmentation draws identically at every sigma_w.")
        pipes = grid.get("pipelines", {}) or {}
        out.append(f"Each of {len(pipes)} training pipelines ran every (sigma_w, seed) cell "
                   f"({len(pipes) * len(sig) * len(seeds)} runs): "
                   + "; ".join(_pipeline_text(n, s or {}) for n, s in pipes.items()) + ".")
        out.append(
            f"Each run is represented by {SELECT_TEXT.get(ev.get('select', 'best_val_acc'), ev.get('select'))}; "
            f"a run counts as interpolating"
            f" from the first epoch its training accuracy reaches {_fmt(float(ev.get('interp_threshold', 0.995)))}.")
    elif a.cube is not None:
        src = a.cube.attrs.get("source") or a.cube.attrs.get("device") or "an external source"
        n = a.cube.sizes
        out.append(
            f"The cube was not collected from a grid file (source: {src}); it holds {n.get('pipeline', 0)} "
            f"pipelines, {n.get('sigma_w', 0)} sigma_w levels and {n.get('seed', 0)} seeds.")
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


def analysis_sentences(a: Analysis) -> list[str]:
    s = a.summary
    out: list[str] = []
    metric = a.metric
    fam = s.get("family", "?")
    if s.get("model"):
        out.append(str(s["model"]).strip())
    else:
        out.append(
            f"The metric {metric} was modelled per pipeline with crossed sigma_w-level, seed and residual effects "
            f"({fam} likelihood), with partially pooled component standard deviations.")
    pr = _priors_text(s.get("priors"))
    if pr:
        out.append(pr)
    d = s.get("diagnostics", {}) or {}
    samp = d.get("sampler")
    if samp:
        bits = [f"Posteriors were sampled with {samp}"]
        for key, label in (("chains", "chains"), ("draws", "draws per chain"), ("tune", "tuning steps")):
            if d.get(key) is not None:
                bits.append(f"{d[key]} {label}")
        diag = []
        if d.get("max_rhat") is not None:
            diag.append(f"max R-hat {float(d['max_rhat']):.3f}")
        if d.get("min_ess_bulk") is not None:
            diag.append(f"min bulk ESS {float(d['min_ess_bulk']):.0f}")
        if d.get("divergences") is not None:
            diag.append(f"{int(d['divergences'])} divergent transitions")
        out.append(", ".join(bits) + (f" ({', '.join(diag)})." if diag else "."))
    delta = a.delta
    unit = f"{delta * 100:g} accuracy points" if a.is_accuracy else f"{delta:g}"
    out.append(
        "The spread is the maximum minus the minimum over the sigma_w grid of the expected metric with seed noise "
        f"averaged out. A pipeline remembers its initialization if P(spread > delta) >= 0.95, forgets it if "
        f"P(spread < delta) >= 0.95, and is inconclusive otherwise, with delta = {unit}.")
    out.append(
        "As frequentist cross-checks, each pipeline was treated as a randomized complete block design (treatment "
        "sigma_w, block seed): REML variance components of y ~ 1 + (1|sigma_w) + (1|seed), a repeated-measures "
        "ANOVA with generalized eta squared, a Friedman test and two one-sided tests (TOST) of the spread against "
        "+-delta, with Holm's correction across pipelines.")
    if a.collapse:
        c = a.collapse
        out.append(
            f"Forgetting clocks were compared by a leave-one-pipeline-out collapse test on the {c.get('memory', 'radial')} "
            "memory curves: one monotone master curve per time axis is fitted to the other pipelines and scored on the "
            "held-out pipeline relative to its seed-noise variance; the gain D over epochs is tested with an exact "
            "sign-flip permutation test over pipelines and a cluster bootstrap interval"
            + (f" ({c['n_pipelines']} pipelines, smallest attainable p-value {float(c['min_p_value']):.3g})"
               if c.get("n_pipelines") and c.get("min_p_value") is not None else "") + ".")
    return out


def software_sentence(a: Analysis, report_versions: dict[str, str]) -> str:
    versions: dict[str, str] = {}
    sv = a.summary.get("versions")
    if isinstance(sv, dict):
        versions.update({str(k): str(v) for k, v in sv.items()})
    if a.cube is not None:
        for attr, name in (("initmem_version", "initmem (collect)"), ("torch_version", "torch")):
            v = a.cube.attrs.get(attr)
            if v and name not in versions and not (name == "torch" and "torch" in versions):
                versions[name] = str(v)
    for k, v in report_versions.items():
        versions.setdefault(k, v)
    return "Software: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "."


def methods_paragraphs(a: Analysis, report_versions: dict[str, str]) -> list[str]:
    """Paragraphs ready to paste into a methods section (plain text; the template escapes them)."""
    return [" ".join(design_sentences(a)), " ".join(analysis_sentences(a)), software_sentence(a, report_versions)]

"""The verdict's route table (models/rules.py): the names it gives are summary.json's ``rule`` values, every
combination of facts names the route the rule states, the typed thresholds are the numbers the analysis decides
at, and an older summary.json without them has them rebuilt from what it stored."""

from __future__ import annotations

import itertools

import pytest

from initmem import names as N
from initmem.models.paired import STEP_EXTREME, STEP_FALLBACK, STEP_PEAK
from initmem.models.rules import (
    ROUTE,
    ROUTES,
    RULES,
    Decided,
    Route,
    route_of,
    rule_text,
    stored_thresholds,
    thresholds,
)
from initmem.models.sequential import SEQUENTIAL_DESIGN, Spending
from initmem.results.records import Summary, VerdictThresholds


def test_route_names_are_summary_json_rule_values():
    assert RULES == ("ordered paired test (extreme pair), the model agreeing",
                     "ordered paired test (peak contrast), the model agreeing",
                     "ordered paired test (fallback over the other pairs), the model agreeing",
                     "model", "intersection-union test", "model + intersection-union test", "none")
    assert ROUTE["iut"].rule(model_ok=False) == "intersection-union test alone (the fit's sampler diagnostics failed)"
    assert ROUTE["peak"].rule(model_ok=False) == "ordered paired test (peak contrast) alone (the fit's sampler " \
                                                 "diagnostics failed)"
    assert ROUTE["model"].rule(model_ok=False) == "model"        # the model's route has no "alone" form
    # the ordered test's shares sum to alpha; the two routes to "forgets" share it as models/paired.py spends it
    assert ROUTE["extreme"].share + ROUTE["peak"].share + ROUTE["fallback"].share == pytest.approx(1.0)
    assert (ROUTE["iut"].share, ROUTE["model"].share) == (0.8, 0.5)


def _expected(label: str, model: str, step: str | None, iut: bool, ok: bool) -> str:
    """The route the rule states (docs/memory-model.md, "Verdict"), written out case by case."""
    if label == N.REMEMBERS:
        name = {STEP_EXTREME: "extreme pair", STEP_PEAK: "peak contrast"}.get(step or "", STEP_FALLBACK)
        return f"ordered paired test ({name})" + (", the model agreeing" if ok else
                                                  " alone (the fit's sampler diagnostics failed)")
    if label == N.FORGETS:
        if not ok:
            return "intersection-union test alone (the fit's sampler diagnostics failed)"
        if iut:
            return "model + intersection-union test" if model == N.FORGETS else "intersection-union test"
        return "model"
    return "none"


def test_every_combination_of_facts_names_the_stated_route():
    for label, model, step, iut, ok in itertools.product(N.VERDICTS, N.VERDICTS,
                                                         (STEP_EXTREME, STEP_PEAK, STEP_FALLBACK, None),
                                                         (False, True), (False, True)):
        got = route_of(Decided(label, model, step, iut, ok)).rule(ok)
        assert got == _expected(label, model, step, iut, ok), (label, model, step, iut, ok)


def test_a_new_route_is_one_record():
    """docs/extending.md, "A new verdict rule": a record placed before ``iut`` names its case; the rest keep theirs."""
    new = Route("iut-against-model", "intersection-union test, against the model", N.FORGETS,
                "intersection-union test (TOST of every pair of levels)", None, lambda t: t.iut_alpha,
                lambda f: f.label == N.FORGETS and f.model_ok and f.iut_supports and f.model_label == N.REMEMBERS)
    at = [r.key for r in ROUTES].index("iut")
    table = (*ROUTES[:at], new, *ROUTES[at:])
    assert route_of(Decided(N.FORGETS, N.REMEMBERS, None, iut_supports=True), table).key == "iut-against-model"
    assert route_of(Decided(N.FORGETS, N.UNDECIDED, None, iut_supports=True), table).key == "iut"
    assert route_of(Decided(N.FORGETS, N.FORGETS, None, iut_supports=True), table).key == "both"
    assert new.threshold(thresholds(0.05)) == pytest.approx(0.04)


def test_typed_thresholds_are_the_decision_numbers():
    t = thresholds(0.05, 4000)
    assert (t.alpha, t.remembers, t.model_remembers, t.forgets) == (0.05, 0.5, 0.95, 0.975)
    assert t.iut_alpha == pytest.approx(0.04) and (t.ceiling, t.skew_gate, t.min_levels_model_forgets) == (0.99, 0.4, 3)
    look = Spending(0.05, (4, 8, 16), 0, SEQUENTIAL_DESIGN)
    closed = thresholds(look, 100)          # 100 draws cannot resolve the model's share at the first look
    assert closed.forgets is None and closed.alpha == pytest.approx(look.level(1.0))
    assert "the model's route is closed" in rule_text(look, 100)
    assert "P(spread < delta) >= 0.975" in rule_text(0.05, 4000)


def test_an_older_summary_has_its_thresholds_rebuilt():
    # written with the typed field: read as stored
    stored = thresholds(0.02)
    assert stored_thresholds(stored, 0.05, None, "at alpha = 0.05") is stored
    # alpha stored, no thresholds: the rule's statement of the agreement bar, else 1 - alpha (the earlier rule)
    t = stored_thresholds(None, 0.03659, None, "")
    assert (t.alpha, t.remembers, t.forgets, t.iut_alpha) == pytest.approx((0.03659, 1 - 0.03659, 1 - 0.03659 / 2,
                                                                             0.8 * 0.03659))
    # the oldest files: only the rule's prose
    old = ("remembers if P(spread > delta) >= 0.9634 and ... at alpha = 0.03659; forgets if P(spread < delta) >= "
           "0.9817 ... (intersection-union test at 0.8 alpha = 0.02927; ...)")
    t = stored_thresholds(None, None, None, old)
    assert (t.alpha, t.remembers, t.forgets, t.iut_alpha) == (0.03659, 0.9634, 0.9817, 0.02927)
    # summary.json keeps the record whole and reads it back typed
    s = Summary.model_validate({"metric": "m", "family": "gaussian", "delta": 0.01, "pipelines": {},
                                "thresholds": thresholds(0.05).to_json()})
    assert isinstance(s.thresholds, VerdictThresholds) and s.thresholds.forgets == 0.975
    assert Summary.model_validate({"metric": "m", "family": "gaussian", "delta": 0.01,
                                   "pipelines": {}}).thresholds is None

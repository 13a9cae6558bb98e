"""Checkpoint selection (grid/select.py) on curves with a known answer."""

from __future__ import annotations

import numpy as np
import pytest

from initmem.grid import EvalSpec
from initmem.grid.select import DEFAULT_RULE, Selector, select_epoch, tau_interp

THR = 0.99


def test_the_default_rule_is_selection_at_or_after_interpolation():
    assert DEFAULT_RULE == "best_val_acc_interp" == EvalSpec().select


def test_best_validation_epoch_at_or_after_interpolation():
    #              epoch: 0     1     2     3     4     5
    train = np.array([0.1, 0.6, 0.9, 0.995, 1.0, 1.0])
    val = np.array([0.1, 0.5, 0.8, 0.7, 0.75, 0.72])    # the overall best (epoch 2) is before tau = 3
    loss = np.array([2.0, 1.0, 0.5, 0.6, 0.55, 0.6])
    assert tau_interp(train, THR) == 3
    assert select_epoch("best_val_acc_interp", train, val, loss, THR) == 4
    assert select_epoch("best_val_acc", train, val, loss, THR) == 2
    assert select_epoch("last", train, val, loss, THR) == 5


def test_saturated_validation_ties_go_to_lower_loss_then_later_epoch():
    train = np.array([0.2, 1.0, 1.0, 1.0, 1.0, 1.0])
    val = np.array([0.3, 1.0, 1.0, 1.0, 1.0, 0.9])
    loss = np.array([2.0, 0.30, 0.10, 0.20, 0.10, 0.05])
    # epochs 2 and 4 tie on accuracy and loss: the later one; epoch 5 has lower loss but lower accuracy
    assert select_epoch("best_val_acc_interp", train, val, loss, THR) == 4
    # the old rule keeps the first maximum
    assert select_epoch("best_val_acc", train, val, loss, THR) == 1


def test_a_run_that_never_interpolates_falls_back_to_the_best_epoch_overall():
    train = np.array([0.1, 0.5, 0.9, 0.95])
    val = np.array([0.1, 0.6, 0.6, 0.55])
    loss = np.array([2.0, 0.9, 0.8, 0.9])
    assert np.isnan(tau_interp(train, THR))
    assert select_epoch("best_val_acc_interp", train, val, loss, THR) == 2   # tie 1/2: lower loss


@pytest.mark.parametrize("rule", ["best_val_acc_interp", "best_val_acc", "last"])
def test_online_selector_agrees_with_the_rule_on_whole_curves(rule):
    """Random curves on a coarse grid (many ties, some runs never interpolate)."""
    rng = np.random.default_rng(0)
    G, E, n_test = 40, 9, 5
    train = np.minimum(1.0, np.cumsum(rng.choice([0.0, 0.1, 0.25], (G, E)), 1))
    val = rng.choice([0.5, 0.75, 1.0], (G, E))
    loss = rng.choice([0.1, 0.2], (G, E))
    test = rng.random((G, E))
    sel = Selector(G, n_test, rule, THR)
    for e in range(E):
        for g in range(G):
            sel.update(g, e, train[g, e], val[g, e], loss[g, e], test[g, e], np.full(n_test, e))
    out = sel.selected()
    never = 0
    for g in range(G):
        want = select_epoch(rule, train[g], val[g], loss[g], THR)
        never += np.isnan(tau_interp(train[g], THR))
        assert out["tau"][g] == want, (g, rule)
        assert out["val"][g] == val[g, want] and out["test"][g] == test[g, want]
        assert out["correct"][g] == round(test[g, want] * n_test)
        assert (out["pred"][g] == want).all()
    assert 0 < never < G   # both branches of the interp rule were exercised

    again = Selector(G, n_test, rule, THR)
    again.load_state(sel.to_state())
    for k, v in again.selected().items():
        np.testing.assert_array_equal(v, out[k])

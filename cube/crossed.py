"""A design query of crossed seed designs (docs/crossed.md): which init and data seeds form a complete block.

On a crossed design every (init seed, data seed) pair is one run, and the statistics of such a design (the
variance components of stats/crossed.py, the crossed-block moments of the scale verdict's seed tests in
models/paired.py) need a complete init x data table. When runs are missing, whole init seeds (rows) and data
seeds (columns) are dropped until the table is complete. This module holds the one rule both layers use, so the
two readings of a design always keep the same runs: the complete block with the most runs and at least two seeds
a side.
"""

from __future__ import annotations

import numpy as np

from initmem.errors import UserError

EXACT_MAX = 12  # the exact search enumerates the subsets of the smaller side up to this many seeds (4,095)


def complete_crossed_block(present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The init seeds (rows) and data seeds (columns) of the largest complete block of a crossed design.

    A cell (i, j) counts as present only when every leading entry of ``present[..., i, j]`` is True (a run lost
    at any sigma_w level drops the pair everywhere: the statistics compare levels on the same runs). The block
    is the one with the most runs among those with at least two init and two data seeds (the least any crossed
    statistic reads), or the one with the most runs where no such block exists; among equals, the one with more
    seeds on its smaller side, then more init seeds (SD_init is what a crossed design is for), then the one
    keeping lower-indexed seeds. It is found exactly, by enumerating every
    subset of the smaller side's seeds, when that side has at most EXACT_MAX seeds; on larger designs by dropping
    one whole line at a time, the one that discards the fewest present runs among the lines holding an absent
    one (ties: the line removing more absent runs, then rows before columns, then the lower index).

    Why this rule: the most runs is the most information, and a block with fewer than two seeds on a side is
    useless to the tests however many runs it holds; and the rule reads only which runs exist, never their
    values, so the block cannot be chosen to favour a verdict.

    Parameters
    ----------
    present : numpy.ndarray
        (..., I, J) bool: init seeds along the second-to-last axis, data seeds along the last.

    Returns
    -------
    tuple of numpy.ndarray
        The kept row and column indices (sorted, int). Both are empty when no run is present.

    Raises
    ------
    UserError
        When ``present`` has fewer than two dimensions: a crossed design needs init and data axes.
    """
    present = np.asarray(present, dtype=bool)
    if present.ndim < 2:
        raise UserError(f"a crossed design needs init and data axes, got shape {present.shape}")
    ok = present.reshape(-1, *present.shape[-2:]).all(axis=0)
    if ok.all():
        return np.arange(ok.shape[0]), np.arange(ok.shape[1])
    if not ok.any():
        return np.arange(0), np.arange(0)
    flip = ok.shape[1] > ok.shape[0]           # enumerate the smaller side
    small_first = ok.T if flip else ok         # (big, small)
    if small_first.shape[1] > EXACT_MAX:
        return _greedy_block(~ok)
    big, small = _exact_block(small_first, init_small=flip)
    return (small, big) if flip else (big, small)


def _exact_block(ok: np.ndarray, init_small: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rule's block of an (n_big, n_small) presence table, by enumerating the subsets of its columns
    (``init_small``: the columns are the init seeds)."""
    n_small = ok.shape[1]
    codes = np.arange(1, 1 << n_small)
    subsets = (codes[:, None] >> np.arange(n_small)[None, :]) & 1            # (2^n - 1, n_small)
    lines = (~ok).astype(np.int64) @ subsets.T == 0                          # (n_big, 2^n - 1): complete on it
    n_big, n_sub = lines.sum(axis=0), subsets.sum(axis=1)
    usable = (n_big >= 2) & (n_sub >= 2)
    n_init = n_sub if init_small else n_big
    # the most runs (usable blocks first), more seeds on the smaller side, more init seeds, then lower-indexed
    # seeds: the lowest code among equals keeps the lower-indexed columns, and the rows follow from the columns
    order = np.lexsort((codes, -n_init, -np.minimum(n_big, n_sub), -(n_big * n_sub), ~usable))
    best = int(order[0])
    return np.flatnonzero(lines[:, best]), np.flatnonzero(subsets[best])


def _greedy_block(missing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rule's block of a large (I, J) table of absent runs: drop the cheapest line while a run is absent."""
    rows, cols = np.arange(missing.shape[0]), np.arange(missing.shape[1])
    while rows.size and cols.size:
        sub = missing[np.ix_(rows, cols)]
        if not sub.any():
            break
        best: tuple[int, int, int, int] | None = None
        for axis, idx in ((0, rows), (1, cols)):
            miss = sub.sum(axis=1 - axis)
            for k in np.flatnonzero(miss):
                key = (int(sub.shape[1 - axis] - miss[k]), -int(miss[k]), axis, int(idx[k]))
                if best is None or key < best:
                    best = key
        assert best is not None
        _, _, axis, which = best
        if axis == 0:
            rows = rows[rows != which]
        else:
            cols = cols[cols != which]
    if not (rows.size and cols.size):
        return rows[:0], cols[:0]
    return rows, cols


__all__ = ["EXACT_MAX", "complete_crossed_block"]

"""What the collapse test's numbers rest on (docs/clocks-and-collapse.md, "Output").

Three small rules kept apart from the test itself:

- ``min_p_floor``: the smallest p-value the permutation test could return. Enumerating every
  sign pattern of C pipelines it is 2^(1-C); beyond exact enumeration it is the Monte Carlo floor
  2 / N for N evaluated patterns (the identity and its negation always count), whichever is larger:
  quoting 2^(1-C) alone would promise 3.8e-6 for 19 pipelines where a Monte Carlo test can give 0.002.
- ``same_axis``: a clock identical to one already tried on every pipeline (T_eta_mom without
  momentum) is the same hypothesis; counting it twice would only loosen the multiplicity family.
- ``scope_note``: the clocks are compared with epochs on the pipelines where each is defined
  (T_l2 only where there is L2), so D values of two clocks may rest on different pipeline sets;
  the verdict names the set its best clock was compared on.
"""

from __future__ import annotations

import math

import numpy as np

REL_TOL = 1e-9


def min_p_floor(n_units: int, n_perm: int, exact: bool) -> float:
    """Smallest attainable two-sided permutation p-value for an axis defined on ``n_units`` pipelines."""
    if n_units < 1:
        return math.nan
    enum = 2.0 ** (1 - n_units)
    if exact or n_perm <= 0:
        return enum
    return max(enum, 2.0 / n_perm)


def same_axis(xa: np.ndarray, axes: dict[str, np.ndarray]) -> str | None:
    """The first axis in ``axes`` equal to ``xa`` (same defined points, same values), else None."""
    fin = np.isfinite(xa)
    for name, xb in axes.items():
        if xb.shape != xa.shape or not np.array_equal(fin, np.isfinite(xb)):
            continue
        if np.allclose(xa[fin], xb[fin], rtol=0.0, atol=REL_TOL * max(1.0, float(np.abs(xa[fin]).max()))):
            return name
    return None


def scope_note(notes: list[str], vs: dict, best: str | None, c_pipes: int) -> None:
    """Say on which pipelines the best clock beat epochs when that is not all of them."""
    if best is None or best not in vs:
        return
    n = vs[best].get("n_pipelines", c_pipes)
    if n < c_pipes:
        others = [a for a, e in vs.items() if e.get("in_family") and e.get("n_pipelines") == c_pipes]
        tail = (f"; {', '.join(others)} were compared on all {c_pipes}, so their D is on another pipeline set"
                if others else "")
        notes.append(f"{best} was compared with epochs on {n} of {c_pipes} pipelines (where it is defined){tail}")


__all__ = ["min_p_floor", "same_axis", "scope_note"]

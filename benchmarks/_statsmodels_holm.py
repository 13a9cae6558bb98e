"""A pytest plugin for ``benchmarks/suite_timing.py --ab-holm``: the "before" side. stats/frequentist.py's
Holm calls ``pingouin.multicomp``; this plugin answers that call with statsmodels' ``multipletests``, which
runs ``gc.collect()`` on every call, as the analysis did before."""

from __future__ import annotations

from typing import Any


def _multicomp_by_statsmodels(pvals: Any, alpha: float = 0.05, method: str = "holm") -> tuple[Any, Any]:
    from statsmodels.stats.multitest import multipletests

    reject, corrected = multipletests(pvals, alpha=alpha, method=method)[:2]
    return reject, corrected


def pytest_configure() -> None:
    import pingouin

    pingouin.multicomp = _multicomp_by_statsmodels

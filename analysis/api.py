"""``initmem.analyze``: the analysis with a signature a type checker reads in full.

:func:`initmem.analysis.analyze_cube` takes the analysis options as keywords and validates them at run time
(:class:`AnalysisSpec`). :func:`analyze` is the same call with each keyword typed by :class:`AnalysisOptions`, so
that a misspelt option (``delt=0.01``) or a value of the wrong kind (``delta="one point"``) is an error in the
editor, before anything is fitted. tests/test_public_api.py checks that :class:`AnalysisOptions` lists exactly
the fields of :class:`AnalysisSpec`, with the same vocabularies.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal, TypedDict, Unpack

from initmem import results as R
from initmem.results.spec import AnalysisSpec


class AnalysisOptions(TypedDict, total=False):
    """The fields of :class:`AnalysisSpec` as keyword arguments (docs/analysis.md, "Options")."""

    metric: str | None
    family: Literal["binomial", "gaussian"] | None
    delta: float | None
    alpha: float
    looks: Sequence[int] | None
    look: int | None
    design: str | None
    gate: Literal["interpolated", "all"]
    sampler: Literal["nutpie", "pymc"]
    draws: int
    tune: int
    chains: int
    seed: int
    memory: Literal["radial", "radial_above", "radial_below", "functional"]
    n_boot: int
    fraction: float | None
    rope: float | None
    axes: Sequence[str] | None
    exponents: bool
    tolerance: float | None
    compile_shape: tuple[int, int, int] | None


def analyze(cube_path: str | os.PathLike, out_dir: str | os.PathLike, spec: AnalysisSpec | None = None, *,
            progress: bool = True, command: list[str] | None = None, **options: Unpack[AnalysisOptions]) -> R.Summary:
    """Analyze one metric of a cube into an analysis folder: what ``initmem analyze CUBE.nc --out DIR`` does.

    The memory model and its verdicts, the design-based cross-checks, the radial verdict, the memory curves and
    the collapse test (docs/analysis.md); the folder is written all or nothing.

    Parameters
    ----------
    cube_path : str or os.PathLike
        The cube (:func:`initmem.collect_cube`, :func:`initmem.import_table` or :func:`initmem.simulate_cube`).
    out_dir : str or os.PathLike
        The analysis folder to write: ``posterior.nc``, ``summary.json`` and, when the cube has curves,
        ``curves.nc`` and ``collapse.json`` (docs/analysis-folder.md).
    spec : AnalysisSpec, optional
        Every option at once; None: the defaults.
    progress : bool, default True
        Show the sampler's progress bar.
    command : list of str, optional
        The command line recorded in summary.json; None: this program's own.
    **options
        Fields of :class:`AnalysisSpec` as keywords (``delta=0.02``), replacing the spec's; typed by
        :class:`AnalysisOptions`. ``delta`` defaults to one point for accuracies and is required for any other
        metric; ``gate="interpolated"`` fits only runs that reached the interpolation threshold.

    Returns
    -------
    Summary
        The summary record (``summary.pipelines[name].verdict`` and everything in summary.json).

    Raises
    ------
    UserError
        The cube cannot be read or has nothing to analyze, or ``out_dir`` cannot hold an analysis.
    OptionError
        An option is invalid or unknown (the message names it).
    """
    from initmem.analysis.run import analyze_cube

    return analyze_cube(cube_path, out_dir, spec, progress=progress, command=command, **options)

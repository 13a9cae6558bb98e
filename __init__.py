"""initmem: does a deep network still remember its initialization?

The small public API, one function per command of the ``initmem`` command line (docs/reference/api.md):

    import initmem

    result = initmem.run(preset="quick")                    # collect, analyze and report: `initmem run`
    cube = initmem.collect_cube("quick", "runs/quick")       # train a grid into a cube: `initmem collect`
    imported = initmem.import_table("runs.csv", "cube.nc", seeds="paired")   # `initmem import`
    ds = initmem.open_cube("runs/quick/cube.nc")            # the cube, an xarray.Dataset (docs/cube.md)
    summary = initmem.analyze("runs/quick/cube.nc", "runs/quick/analysis", delta=0.01)
    print({p: r.verdict for p, r in summary.pipelines.items()})
    initmem.report("runs/quick/analysis")                    # -> runs/quick/analysis/report.html

``analyze`` takes an :class:`AnalysisSpec` or its fields as keywords, each typed. The function that trains a
grid is ``collect_cube``, named for what it makes: ``initmem.collect`` is the training subpackage (importing any
of its modules binds that name to the package), so no function can be called ``collect`` here. Every keyword
is spelled out in the signatures, so a type checker reports a misspelt one. The names are imported on first
use, so ``import initmem`` stays light (no torch, no PyMC).

Packages: ``collect`` trains grids into cubes (torch), ``models`` fits the memory model (PyMC),
``stats`` holds the frequentist and curve statistics, ``reports`` writes the HTML report. The
vocabularies that extensions add to are tables: ``clocks``, ``optimizers`` and
``reports.sections`` (docs/extending.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from initmem.lazy import lazy_dir, lazy_getattr
from initmem.version import __version__

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name is imported on first use
    from initmem.analysis.analyze import analyze_cube as analyze
    from initmem.analysis.run import run as run
    from initmem.collect.custom.cell import load_cell as load_cell
    from initmem.collect.custom.probe import apply_probe as apply_probe
    from initmem.collect.custom.recorder import Recorder as Recorder
    from initmem.collect.execution.runner import collect_cube as collect_cube
    from initmem.cube import open_cube as open_cube
    from initmem.cube import write_cube as write_cube
    from initmem.errors import UserError as UserError
    from initmem.grid import load_grid as load_grid
    from initmem.importers.source import import_table as import_table
    from initmem.models.plan import plan as plan
    from initmem.reports.export import export_analysis as export
    from initmem.reports.html import build_report as report
    from initmem.results import AnalysisSpec as AnalysisSpec
    from initmem.simulate import SimPipeline as SimPipeline
    from initmem.simulate import simulate_cube as simulate_cube


_API: dict[str, tuple[str, str]] = {
    "open_cube": ("initmem.cube", "open_cube"),
    "write_cube": ("initmem.cube", "write_cube"),
    "load_grid": ("initmem.grid", "load_grid"),
    "AnalysisSpec": ("initmem.results", "AnalysisSpec"),
    "analyze": ("initmem.analysis.analyze", "analyze_cube"),
    "run": ("initmem.analysis.run", "run"),
    "collect_cube": ("initmem.collect.execution.runner", "collect_cube"),
    "import_table": ("initmem.importers.source", "import_table"),
    "report": ("initmem.reports.html", "build_report"),
    "export": ("initmem.reports.export", "export_analysis"),
    "plan": ("initmem.models.plan", "plan"),
    "simulate_cube": ("initmem.simulate", "simulate_cube"),
    "SimPipeline": ("initmem.simulate", "SimPipeline"),
    "UserError": ("initmem.errors", "UserError"),
    "apply_probe": ("initmem.collect.custom.probe", "apply_probe"),
    "Recorder": ("initmem.collect.custom.recorder", "Recorder"),
    "load_cell": ("initmem.collect.custom.cell", "load_cell"),
}


__getattr__ = lazy_getattr(__name__, _API)
__dir__ = lazy_dir(__name__, _API)


__all__ = ["AnalysisSpec", "Recorder", "SimPipeline", "UserError", "__version__", "analyze", "apply_probe",
           "collect_cube", "export", "import_table", "load_cell", "load_grid", "open_cube", "plan", "report", "run",
           "simulate_cube", "write_cube"]

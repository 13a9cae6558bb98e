"""The ``initmem`` command line (click): one module per command family (docs/analysis.md, "Command line").

:mod:`.main` holds the group and the commands that read an analysis folder (report, run, inspect);
:mod:`.cubes` the commands that make a cube; :mod:`.analyze` those that analyze one; :mod:`.params` the
parameter types and the option -> flag map; :mod:`.output` verbosity and ``echo``.
"""

from __future__ import annotations

from initmem.cli.main import app, main

__all__ = ["app", "main"]

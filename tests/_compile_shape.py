"""The command-line flag that pads a test's small cube to the suite's one compiled shape (models/designs.py SMALL)."""

from __future__ import annotations

from initmem.models.designs import SMALL

SMALL_FLAG = ("--compile-shape", ",".join(map(str, SMALL)))

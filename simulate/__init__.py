"""Cubes with a known truth (docs/memory-model.md, "Calibration"): the analysis is trusted only if it
recovers what was put in. A cube source beside ``collect`` and ``importers``; torch-free.
"""

from __future__ import annotations

from initmem.simulate.draw import (
    DESIGNS,
    SimPipeline,
    clocks,
    example_offsets,
    expected_accuracy,
    lr_per_step,
    preset_pipelines,
    read_truth,
    sigma_levels,
    simulate_cube,
)

__all__ = [
    "DESIGNS",
    "expected_accuracy",
    "SimPipeline",
    "clocks",
    "example_offsets",
    "lr_per_step",
    "preset_pipelines",
    "read_truth",
    "sigma_levels",
    "simulate_cube",
]

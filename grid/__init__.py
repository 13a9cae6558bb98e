"""A grid: the pipelines x sigma_w x seeds a collect run trains (docs/collect.md).

:mod:`.schema` says what a grid holds (pydantic, unknown keys refused); :mod:`.file` reads one from YAML
or a packaged preset, with one-line errors naming the field.
"""

from __future__ import annotations

from initmem.grid.file import PRESETS, grid_hash, load_grid, parse_grid, resolve_preset
from initmem.grid.schema import (
    ARCH_PATTERN,
    BUDGET_CLOCKS,
    DATASETS,
    DEFAULT_WIDTH,
    DENSE_ARCHS,
    INIT_SCALES,
    INTERP_THRESHOLD,
    MNIST1D_LENGTH,
    OPTIMIZERS,
    PROBES,
    RESNET1D_DEPTH,
    SCHEDULES,
    SHAPES,
    CrossedSeeds,
    DatasetSpec,
    DecideSpec,
    EngineSpec,
    EvalSpec,
    Grid,
    InitSpec,
    ModelSpec,
    PipelineSpec,
    SlurmSpec,
    UserPipelineSpec,
    probe_levels,
    probe_target,
)

__all__ = [
    "PRESETS",
    "grid_hash",
    "load_grid",
    "parse_grid",
    "resolve_preset",
    "DATASETS",
    "ARCH_PATTERN",
    "DENSE_ARCHS",
    "PROBES",
    "SHAPES",
    "DEFAULT_WIDTH",
    "OPTIMIZERS",
    "SCHEDULES",
    "INIT_SCALES",
    "INTERP_THRESHOLD",
    "MNIST1D_LENGTH",
    "RESNET1D_DEPTH",
    "DatasetSpec",
    "ModelSpec",
    "InitSpec",
    "PipelineSpec",
    "UserPipelineSpec",
    "EvalSpec",
    "SlurmSpec",
    "CrossedSeeds",
    "DecideSpec",
    "EngineSpec",
    "Grid",
    "BUDGET_CLOCKS",
    "probe_levels",
    "probe_target",
]

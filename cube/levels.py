"""What a cube's sigma_w axis holds: the initialization probe and the names of its levels.

The collector records the probe in the cube (``probe``, ``probe_target``, ``probe_levels``;
docs/arms.md). The memory model treats sigma_w levels as exchangeable, so it needs nothing
more; the report names the probe and the levels, and the analyses along log sigma_w (the
radial slope) are skipped for a categorical probe (``shape``: the codes 1..k have no order).
"""

from __future__ import annotations

import xarray as xr

from initmem.cube.schema import (
    A_INIT_SCALE,
    A_PROBE,
    A_PROBE_LEVELS,
    A_PROBE_TARGET,
    PROBE_SCALE,
    PROBE_SHAPE,
    SIGMA,
)

PROBE_LABEL = {"scale": "σ_w (init scale)", "layer_scale": "σ_w (layer-group scale)",
               "shape": "init distribution", "width_scaling": "width multiplier"}


def probe_of(ds: xr.Dataset) -> str:
    """The cube's initialization probe (``scale`` when the cube does not say)."""
    return str(ds.attrs.get(A_PROBE, PROBE_SCALE))


def probe_is_categorical(ds: xr.Dataset) -> bool:
    """Whether sigma_w holds the codes of an unordered probe, so log sigma_w means nothing."""
    return probe_of(ds) == PROBE_SHAPE


def level_names(ds: xr.Dataset) -> list[str]:
    """A name per sigma_w level: the probe's recorded names, else the value (``%g``)."""
    names = str(ds.attrs.get(A_PROBE_LEVELS, "")).split(",")
    values = [float(v) for v in ds[SIGMA].values]
    return names if len(names) == len(values) and all(names) else [f"{v:g}" for v in values]


def probe_caption(ds: xr.Dataset) -> str:
    """One sentence naming the probe for report captions, e.g. 'The σ_w axis is the probe
    shape (all_kernels): normal, uniform, truncated_normal, orthogonal.'"""
    probe = probe_of(ds)
    target = ds.attrs.get(A_PROBE_TARGET, ds.attrs.get(A_INIT_SCALE, ""))
    where = f" ({target})" if target else ""
    return f"The σ_w axis is the initialization probe {probe}{where}, levels: {', '.join(level_names(ds))}."

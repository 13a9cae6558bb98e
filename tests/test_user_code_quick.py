"""The quick preset's network collected as user code, through an entry point, gives the built-in engine's cube.

The same grid cells (sgd_mom_wd_cos: warm-up, cosine decay, Nesterov momentum and L2; sigma_w 1/4 and 4, seeds 0
and 1) are collected twice: by the engine (packed) and as a user-code grid whose entry point is a plain PyTorch
loop with the recorder (tests/_quick_entry.py); tests/test_recorder.py covers constant SGD and AdamW bitwise too.
Every variable the analysis reads (the selected accuracies and per-example correctness,
the status, tau_interp and tau_best) and every curve, clock and kernel norm agree bit for bit, so the verdicts,
a function of those and of the analysis's own options and seed, are the engine's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from initmem import cube
from initmem.collect.execution.runner import collect

from ._quick_small import quick_small

pytestmark = pytest.mark.slow

PIPELINES, SIGMA, SEEDS, EPOCHS, EVERY = ("sgd_mom_wd_cos",), (0.25, 4.0), (0, 1), 3, 2
SIZES = {"n_train": 128, "n_val": 64, "n_test": 96}


def _collect(grid, out: Path):
    return cube.open_cube(collect(grid, out, device="cpu", progress=False, quiet=True))


def test_the_quick_network_as_an_entry_point_gives_the_engines_cube(tmp_path):
    data_root = tmp_path / "mnist1d-cache"
    engine_grid = quick_small(data_root, pipelines=PIPELINES, epochs=EPOCHS, every=EVERY, sigma_w=SIGMA,
                              seeds=SEEDS, **SIZES)
    engine = _collect(engine_grid, tmp_path / "engine")
    settings = {"data_root": str(data_root), "epochs": EPOCHS, "every": EVERY, **SIZES}
    user_grid = tmp_path / "user.yaml"
    user_grid.write_text(yaml.safe_dump({
        "name": "quick_as_user_code", "sigma_w": list(SIGMA), "seeds": list(SEEDS),
        "init": yaml.safe_load(engine_grid.to_yaml())["init"], "eval": yaml.safe_load(engine_grid.to_yaml())["eval"],
        "pipelines": {p: {"entry": "initmem.tests._quick_entry:train", "settings": settings} for p in PIPELINES}}))
    mine = _collect(user_grid, tmp_path / "user")
    assert (mine[cube.STATUS].values == cube.OK).all()
    compared = [v for v in engine.data_vars if v != cube.WALL_SECONDS]
    assert set(compared) <= set(mine.data_vars)
    for v in compared:
        same = {d: list(engine[d].values) for d in engine[v].dims if d in engine.coords}   # one cell order
        np.testing.assert_array_equal(mine[v].sel(same).transpose(*engine[v].dims).values, engine[v].values,
                                      err_msg=v)

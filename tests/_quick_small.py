"""The quick preset's network and pipelines on a small MNIST-1D split: what the probe and recorder tests train."""

from __future__ import annotations

from pathlib import Path

import yaml

from initmem.grid import Grid, load_grid, parse_grid


def quick_small(root: Path, *, pipelines: tuple[str, ...] = ("sgd_low_lr",), epochs: int = 2, n_train: int = 128,
                n_val: int = 64, n_test: int = 96, sigma_w: tuple[float, ...] = (0.25, 1.0, 4.0),
                seeds: tuple[int, ...] = (0, 1), every: int = 1) -> Grid:
    """The quick preset (configs/quick.yaml) with a smaller split, fewer epochs and the named pipelines; its model,
    init, optimizers, schedules, checkpoint rule and engine settings are the preset's."""
    d = yaml.safe_load(load_grid("quick").to_yaml())
    d["name"] = "quick_small"
    d["dataset"].update(n_train=n_train, n_val=n_val, n_test=n_test, root=str(root))
    d["pipelines"] = {p: {**d["pipelines"][p], "epochs": epochs} for p in pipelines}
    d["sigma_w"], d["seeds"] = list(sigma_w), list(seeds)
    d["eval"]["every"] = every
    return parse_grid(d)

"""A grid as the collector trains it: clock budgets resolved to epochs.

A pipeline may give a clock budget (``budget: {T_l2: 2.0}``) instead of epochs (docs/collect.md). Turning
it into a horizon needs the training set's size (steps per epoch), which only the data knows, so it
happens here, where the collector loads its grid, and never when a grid file is merely read.
"""

from __future__ import annotations

from pathlib import Path

from initmem.errors import UserError
from initmem.grid import Grid, PipelineSpec, load_grid
from initmem.schedule import pipeline_clocks

MAX_BUDGET_EPOCHS = 5000


def resolve_budgets(grid: Grid, n_train: int | None = None) -> Grid:
    """Fill in ``epochs`` of every pipeline that gives none from its clock budget (or the grid's).

    The horizon is the smallest number of epochs at whose end any budgeted clock reaches its
    value; the schedule is laid out over that horizon (a cosine decays to 0 at it), so the clock at
    the end grows with the horizon and a bisection finds it. ``n_train`` defaults to the size of the
    grid's training split (loading the data set). A clock that stays 0 (T_l2 without L2) is an error.
    """
    todo = [n for n, p in grid.pipelines.items() if p.epochs is None]
    if not todo:
        return grid
    if n_train is None:
        from initmem.collect.train.data import load_split  # torch and the data: only for a budgeted grid

        n_train = int(load_split(grid.dataset).y_train.numel())
    pipes = dict(grid.pipelines)
    for name in todo:
        spec = pipes[name]
        budget = spec.budget or grid.budget
        if budget is None:
            raise UserError(f"pipelines.{name}: give epochs or a clock budget (pipeline or grid-wide)")

        def reached(e: int, spec=spec, budget=budget) -> bool:
            clocks = pipeline_clocks(spec, n_train, epochs=e)
            return any(clocks[k][-1] >= v for k, v in budget.items())

        lo, hi = 1, 1
        while not reached(hi):
            if hi >= MAX_BUDGET_EPOCHS:
                raise UserError(f"pipelines.{name}: budget {budget} is not reached within {MAX_BUDGET_EPOCHS} "
                                "epochs (a clock that stays 0, e.g. T_l2 without L2?); give epochs")
            lo, hi = hi + 1, min(2 * hi, MAX_BUDGET_EPOCHS)
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if reached(mid) else (mid + 1, hi)
        pipes[name] = PipelineSpec.model_validate({**spec.model_dump(), "epochs": hi})
    return grid.model_copy(update={"pipelines": pipes})


def training_grid(grid_or_path: Grid | str | Path) -> Grid:
    """The grid (or grid file, or preset name) with every pipeline's horizon in epochs."""
    grid = grid_or_path if isinstance(grid_or_path, Grid) else load_grid(grid_or_path)
    return resolve_budgets(grid)

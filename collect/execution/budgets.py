"""A grid as the collector trains it: clock budgets resolved to epochs.

A pipeline may give a clock budget (``budget: {T_l2: 2.0}``) instead of epochs (docs/collect.md). Turning
it into a horizon needs the training set's size (steps per epoch), which only the data knows, so it
happens here, where the collector loads its grid, and never when a grid file is merely read. So do the
checks that need the horizon: warm-up and milestones must fit in the epochs the budget resolves to, and
a pipeline that gives both epochs and its own budget must give the epochs that budget resolves to (the
canonical form of a resolved grid keeps both; any other pair would silently ignore the budget).
"""

from __future__ import annotations

from pathlib import Path

from initmem.errors import UserError
from initmem.grid import Grid, PipelineSpec, load_grid, resolve_preset
from initmem.grid.schema import budget_text, epochs_text
from initmem.schedule import pipeline_clocks

MAX_BUDGET_EPOCHS = 5000


def resolve_budgets(grid: Grid, n_train: int | None = None, *, source: str | None = None) -> Grid:
    """Fill in ``epochs`` of every pipeline that gives none from its clock budget (or the grid's).

    The horizon is the smallest number of epochs at whose end any budgeted clock reaches its
    value; the schedule is laid out over that horizon (a cosine decays to 0 at it), so the clock at
    the end grows with the horizon and a bisection finds it. ``n_train`` defaults to the size of the
    grid's training split (loading the data set). A clock that stays 0 (T_l2 without L2) is an error,
    and so are a warm-up or milestones that do not fit in the resolved horizon and a pipeline whose own
    budget resolves to other epochs than those it gives. Errors are one ``UserError`` line that starts
    with ``source`` (default ``grid NAME``) and names the key, e.g. ``pipelines.sgd.warmup_epochs``.
    """
    source = source or f"grid {grid.name}"
    todo = [n for n, p in grid.engine_pipelines.items() if p.epochs is None or p.budget is not None]
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
            raise UserError(f"{source}: pipelines.{name}: give epochs or a clock budget (pipeline or grid-wide)")
        epochs = _budget_epochs(spec, budget, n_train, f"{source}: pipelines.{name}")
        if spec.epochs is not None:
            if spec.epochs != epochs:
                raise UserError(f"{source}: pipelines.{name}.budget: give epochs or a budget, not both (the budget "
                                f"{budget_text(budget)} resolves to {epochs_text(epochs)}, epochs is {spec.epochs})")
            continue  # the canonical form of a resolved grid: consistent, nothing to fill in
        problem = spec.horizon_problem(epochs, budget)
        if problem:
            raise UserError(f"{source}: pipelines.{name}.{problem}")
        pipes[name] = PipelineSpec.model_validate({**spec.model_dump(), "epochs": epochs})
    return grid.model_copy(update={"pipelines": pipes})


def _budget_epochs(spec: PipelineSpec, budget: dict[str, float], n_train: int, where: str) -> int:
    """The fewest epochs at whose end some clock of ``budget`` reaches its value."""

    def reached(e: int) -> bool:
        clocks = pipeline_clocks(spec, n_train, epochs=e)
        return any(clocks[k][-1] >= v for k, v in budget.items())

    lo, hi = 1, 1
    while not reached(hi):
        if hi >= MAX_BUDGET_EPOCHS:
            raise UserError(f"{where}: budget {budget_text(budget)} is not reached within {MAX_BUDGET_EPOCHS} "
                            "epochs (a clock that stays 0, e.g. T_l2 without L2?); give epochs")
        lo, hi = hi + 1, min(2 * hi, MAX_BUDGET_EPOCHS)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reached(mid) else (mid + 1, hi)
    return hi


def training_grid(grid_or_path: Grid | str | Path) -> Grid:
    """The grid (or grid file, or preset name) with every pipeline's horizon in epochs."""
    if isinstance(grid_or_path, Grid):
        return resolve_budgets(grid_or_path)
    grid = load_grid(grid_or_path)
    return resolve_budgets(grid, source=f"grid file {resolve_preset(grid_or_path).name}")

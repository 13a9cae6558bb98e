"""Rich progress bars for a collect run: cells done out of total, and per pack epoch and ETA.

Everything goes to stderr so stdout stays clean for the final table; with ``enabled=False``
(``--quiet``, batch jobs, tests) every method is a no-op.
"""

from __future__ import annotations

from typing import Any


class ProgressView:
    def __init__(self, total_cells: int, done_cells: int = 0, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.total = total_cells
        self.done = done_cells
        self._progress: Any = None
        self._overall: Any = None
        self._packs: dict[str, Any] = {}

    def __enter__(self) -> ProgressView:
        if not self.enabled:
            return self
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("eta"),
            TimeRemainingColumn(), TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self._progress.start()
        self._overall = self._progress.add_task("cells", total=self.total, completed=self.done)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def pack(self, pid: str, label: str, done: int, total: int) -> None:
        if self._progress is None:
            return
        task = self._packs.get(pid)
        if task is None:
            task = self._packs[pid] = self._progress.add_task(f"  {label} epoch", total=total)
        self._progress.update(task, completed=done, total=total)

    def pack_done(self, pid: str) -> None:
        task = self._packs.pop(pid, None)
        if task is not None and self._progress is not None:
            self._progress.remove_task(task)

    def cell_done(self, n: int = 1) -> None:
        self.done += n
        if self._progress is not None:
            self._progress.update(self._overall, completed=self.done)

    def set_done(self, n: int) -> None:
        self.done = n
        if self._progress is not None:
            self._progress.update(self._overall, completed=n)

"""Compile the memory model's sampler while a run trains, so that its analysis does not wait for the compiler.

The compiled sampler depends on the table's shape alone (models/compiled.py), and ``initmem run`` knows that
shape from the grid before anything trains: (pipelines, sigma_w levels, seeds), the seeds padded to the last
look of a sequential design. So the run starts one background process that compiles it into the disk cache at
the lowest CPU priority (nice 19). While the training workers keep every core busy it gets almost nothing; it
runs when a core falls idle (the last packs of a look, the merge), and the analysis then loads the sampler
from disk in a fraction of a second instead of compiling for 10-20 s.

Nothing depends on it for correctness: the analysis waits for the process, then fits as always, loading the
sampler when the keys agree and compiling it when they do not (a pipeline skipped for lack of usable runs
shrinks the table, say). A warm-up that fails, or a disk cache that is off or not trusted, costs nothing but
the compile the analysis would have done anyway.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from typing import Any

NICENESS = 19       # the lowest priority: training is never slowed by more than a scheduler's crumbs


def warm_shape(grid: Any, seeds: int, compile_shape: tuple[int, int, int] | None = None) -> tuple[int, int, int]:
    """The (pipeline, sigma_w, seed) shape the analysis of ``grid`` compiles for, with ``seeds`` seed slots
    (the grid's seeds, or the last look's) and at least the ``compile_shape`` option."""
    asked = compile_shape or (0, 0, 0)
    return (max(len(grid.pipelines), int(asked[0])), max(len(grid.sigma_w), int(asked[1])),
            max(int(seeds), int(asked[2])))


def _compile_in_background(shape: tuple[int, int, int], niceness: int) -> None:
    """The background process: compile at low priority, and never fail loudly (the analysis compiles what this
    one could not)."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(niceness)
    with contextlib.suppress(Exception):
        from initmem.models.memory import compile_sampler

        compile_sampler(shape)


class SamplerWarmup:
    """A background compile of the memory model's sampler for one shape; :meth:`wait` before the analysis.

    Parameters
    ----------
    shape : tuple of int
        (pipelines, sigma_w levels, seeds) the analysis will compile for (:func:`warm_shape`).
    niceness : int, default NICENESS
        Added to the background process's niceness (19: it runs only on cores nothing else wants).
    """

    def __init__(self, shape: tuple[int, int, int], niceness: int = NICENESS) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.niceness = int(niceness)
        self._process: Any = None

    @staticmethod
    def possible(shape: tuple[int, int, int]) -> bool:
        """Whether a warm-up can help: the disk cache is on and trusted (a sampler compiled in another process
        reaches this one only through it), the shape is one the model fits, and a process can be spawned (a
        program read from standard input cannot be)."""
        from initmem.collect.execution.shards import spawnable
        from initmem.models.compiled import cache_dir, untrusted

        root = cache_dir()
        if root is None or (root.exists() and untrusted(root)):
            return False
        return shape[0] >= 1 and shape[1] >= 2 and shape[2] >= 2 and spawnable()

    def start(self) -> SamplerWarmup:
        """Start the background process (spawned, as the training workers are: the parent may hold torch's
        threads, which a fork does not copy); a process that cannot start is no warm-up, never an error."""
        if self._process is None and self.possible(self.shape):
            try:
                proc = multiprocessing.get_context("spawn").Process(
                    target=_compile_in_background, args=(self.shape, self.niceness), name="initmem-sampler-warmup",
                    daemon=True)
                proc.start()
                self._process = proc
            except OSError:
                self._process = None
        return self

    def wait(self) -> None:
        """Block until the background compile is done (it has written the disk cache, or given up)."""
        if self._process is not None:
            self._process.join()
            self._process = None

    def stop(self) -> None:
        """End the background process without waiting (the run failed or was interrupted)."""
        if self._process is not None:
            with contextlib.suppress(Exception):
                self._process.terminate()
                self._process.join(timeout=5)
            self._process = None

"""A cell of a grid whose pipeline is the user's code: what one run of that code is given (docs/own-model.md).

The collector makes one :class:`Cell` per (pipeline, sigma_w, run) and hands it to the pipeline's entry point
(``entry: "package.module:function"`` is called with it) or writes it as JSON to a file whose path is in the
environment variable ``INITMEM_CELL`` for a command (``command: "python train.py"``; the script calls
:func:`load_cell`). The cell holds everything a run needs from the grid: the pipeline's free-form ``settings``,
``sigma_w``, the init seed (initial weights) and the data seed (data order, augmentation), the device, a scratch
folder that survives a resume (the code's own checkpoints go there), the record's path and coordinates, and
:meth:`Cell.recorder`, which builds the recorder that writes the record where the collector reads it.

Torch-free: the collector builds and writes cells without importing torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from initmem.errors import UserError

CELL_ENV = "INITMEM_CELL"  # a command's cell file
CELL_FILE = "cell.json"
RECORD_FILE = "record.nc"
SCRATCH_DIR = "scratch"


@dataclass(frozen=True)
class Cell:
    """One run of a user-code pipeline: its settings, its probe level, its seeds and where it records.

    Attributes
    ----------
    pipeline : str
        The pipeline's name in the grid.
    settings : dict
        The pipeline's ``settings`` from the grid file, as given (epochs, learning rate, ... : the code's own).
    sigma_w : float
        The probe level of this cell (``initmem.probe.apply(model, cell.sigma_w, ...)`` scales the kernels).
    seed : int
        The run index: the cube's ``seed`` coordinate (the seed itself for a list of seeds).
    init_seed, data_seed : int
        The seed of the initial weights, and of the data order and augmentation. Equal for a list of seeds; a
        crossed design (``seeds: {init: [...], data: [...]}``) pairs them.
    device : str
        Where to train: ``cpu``, ``cuda`` (the worker's own GPU) or ``mps``.
    scratch : pathlib.Path
        A folder of this cell's own, kept across a resume (the code's checkpoints, logs).
    record : pathlib.Path
        Where the recorder writes this run's record; the collector turns it into the cell's shard.
    coords : dict
        The run's coordinates (pipeline, sigma_w, seed, and init_seed / data_seed for a crossed design) that
        the recorder stamps on the record.
    init : dict
        The grid's ``init`` section (probe, scale, layers, shapes): which probe sigma_w is a level of.
    eval : dict
        The grid's ``eval`` section (interp_threshold, select): the checkpoint rule the record applies.
    grid_name : str
        The grid's name.
    measure_clocks : bool
        The grid's ``engine.measure_clocks``: whether the recorder measures the angular clocks.
    """

    pipeline: str
    settings: dict[str, Any]
    sigma_w: float
    seed: int
    init_seed: int
    data_seed: int
    device: str
    scratch: Path
    record: Path
    coords: dict[str, Any] = field(default_factory=dict)
    init: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] = field(default_factory=dict)
    grid_name: str = ""
    measure_clocks: bool = True

    def recorder(self, optimizer: Any, model: Any, *, resume: bool = False, **kwargs: Any) -> Any:
        """The recorder of this run: ``initmem.Recorder`` writing to :attr:`record`, stamped with :attr:`coords`,
        under the grid's checkpoint rule and ``engine.measure_clocks``; ``kwargs`` are the recorder's own
        (``batch_size=`` for the T_sgd clocks, ``decay=`` for an optimizer initmem does not know, ...).

        The loop calls ``rec.step(loss)`` after each optimizer step, ``rec.evaluate(epoch, train=..., val=...,
        test=...)`` at each evaluation and ``rec.finish()`` at its end: a record left unfinished counts as a
        failed cell. With ``resume`` a cell trained again after a kill continues from its last evaluation (model,
        optimizer and recorder restored; the loop goes on at ``rec.next_epoch``), else it starts anew."""
        from initmem.collect.custom.recorder import Recorder  # torch: only in the process that trains

        options: dict[str, Any] = {"path": self.record, "coords": dict(self.coords),
                                   "measure_clocks": self.measure_clocks,
                                   **{k: self.eval[k] for k in ("select", "interp_threshold") if k in self.eval}}
        options.update(kwargs)
        if resume:
            path = options.pop("path")
            return Recorder.resume(path, optimizer, model, **options)
        return Recorder(optimizer, model, **options)

    def apply_probe(self, model: Any, **kwargs: Any) -> Any:
        """Initialise ``model``'s kernels for this cell: ``initmem.apply_probe`` at :attr:`sigma_w` with
        :attr:`init_seed` and the grid's ``init`` section (``kwargs``: the probe's own, e.g. ``gains=``)."""
        from initmem.collect.custom.probe import apply_probe  # torch: only in the process that trains
        from initmem.grid import InitSpec

        return apply_probe(model, self.sigma_w, init_seed=self.init_seed, init=InitSpec.model_validate(self.init),
                           **kwargs)

    def to_json(self) -> str:
        """The cell as the JSON a command reads back with :func:`load_cell`."""
        d = asdict(self)
        d["scratch"], d["record"] = str(self.scratch), str(self.record)
        return json.dumps(d, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Cell:
        """The cell :meth:`to_json` wrote."""
        d = json.loads(text)
        d["scratch"], d["record"] = Path(d["scratch"]), Path(d["record"])
        return cls(**d)


def load_cell(path: str | os.PathLike | None = None) -> Cell:
    """The cell a command runs: read from ``path``, else from the file named by ``INITMEM_CELL``.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A cell file; None reads the environment variable the collector sets for a command.

    Returns
    -------
    Cell
        This run's cell.

    Raises
    ------
    UserError
        No path was given and ``INITMEM_CELL`` is unset (the script was not started by ``initmem collect``),
        or the file cannot be read.

    Examples
    --------
    In a grid's command, run by ``initmem collect``, the cell says what to train:

    >>> import initmem
    >>> cell = initmem.load_cell()                                                    # doctest: +SKIP
    >>> cell.pipeline, cell.sigma_w, cell.init_seed                                  # doctest: +SKIP
    ('adamw', 2.0, 3)

    Run alone, with no cell file given, it says how to try the script:

    >>> initmem.load_cell()
    Traceback (most recent call last):
    initmem.errors.UserError: no cell to run: INITMEM_CELL is not set (initmem collect sets it for a grid's command; ...
    """
    where = path if path is not None else os.environ.get(CELL_ENV)
    if not where:
        raise UserError(f"no cell to run: {CELL_ENV} is not set (initmem collect sets it for a grid's "
                        "command; to try the script alone, pass load_cell(PATH) a cell file)")
    try:
        return Cell.from_json(Path(where).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read the cell file {where}: {exc.strerror}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"{where} is not a cell file: {exc}") from None

"""``AnalysisSpec``: every option of an analysis, validated once where it enters (the analysis-side
twin of :class:`initmem.grid.Grid`).

The command line, ``initmem run`` and library callers build one ``AnalysisSpec``; the analysis and
the models receive it already valid, so no layer re-checks ``delta`` or ``gate``: the margins (``delta``,
``rope``, ``draw_margin``) are defaulted and their units checked once, against the data, by
:func:`initmem.results.margins.resolve_margins`, and summary.json stores the result whole (``margins``).
A bad value raises :class:`~initmem.errors.OptionError`, one line that names the option (``delta must be a
positive number (got -1.0)``); the command line turns the option name into its flag (``--delta``). Options
that depend on the cube (whether ``delta`` may be left out, whether the binomial family has counts)
are checked by the models, with the same error type. docs/analysis.md lists every option.

The collapse test's options (``fraction``, ``rope``, ``axes``, ``exponents``, ``tolerance``) are
fields too: ``initmem collapse`` runs with the same spec as ``initmem analyze``. Their ``None``
defaults mean "the statistics' own default" (stats/forgetting.py, models/exponents.py), so those
modules keep owning the numbers and this one stays free of numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from initmem.errors import option as as_passed
from initmem.errors import validated_options
from initmem.names import ALPHA
from initmem.results.margins import positive
from initmem.results.records import GATES, Gate

Family = Literal["binomial", "gaussian"]   # likelihood of the memory model (docs/memory-model.md)
Sampler = Literal["nutpie", "pymc"]
MemoryKind = Literal["radial", "radial_above", "radial_below", "functional"]  # memory curve the collapse test uses
FAMILIES: tuple[str, ...] = get_args(Family)
SAMPLERS: tuple[str, ...] = get_args(Sampler)
MEMORY_KINDS: tuple[str, ...] = get_args(MemoryKind)
N_BOOT = 200                             # seed-bootstrap draws of the memory curves and the collapse test


MAX_COMPILED_CELLS = 2**20   # a compiled shape's pipelines x levels x seeds: one free value per cell
# The numeric options: a string there ("0.02") is refused, never read as a number (a value from a file or a form
# that was meant as points, say, would otherwise pass as a fraction).
NUMBERS = ("delta", "alpha", "draw_margin", "look", "draws", "tune", "chains", "seed", "n_boot", "fraction", "rope",
           "tolerance")


class AnalysisSpec(BaseModel):
    """Every analysis option with its default (docs/analysis.md, "Options").

    Build one with ``AnalysisSpec.of(delta=0.02)``, or pass the fields as keywords to
    [`initmem.analyze`][initmem.analyze]; a bad value raises one line that names the option, and a misspelt
    option suggests the right one.

    Examples
    --------
    >>> from initmem import AnalysisSpec
    >>> spec = AnalysisSpec.of(delta=0.02, chains=2)
    >>> spec.delta, spec.chains, spec.sampler
    (0.02, 2, 'nutpie')
    >>> AnalysisSpec.of(spec, chain=4)
    Traceback (most recent call last):
    initmem.errors.OptionError: chain is not an analysis option; did you mean chains?
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    metric: str | None = None
    """The cube's run variable to analyze; None: ``selected_test_acc``."""
    family: Family | None = None
    """The memory model's likelihood (docs/memory-model.md); None: binomial when the cube has counts."""
    delta: float | None = None
    """The smallest spread across sigma_w that matters, in the metric's units (0.02 is 2 points of accuracy);
    None: 1 point for accuracies, required for any other metric."""
    alpha: float = Field(ALPHA, gt=0, le=0.5)
    """Each false verdict's rate over the whole design."""
    draw_margin: float | None = None
    """Crossed seed designs (docs/crossed.md): the draw verdict's margin on SD_init, in the metric's units;
    None: half a point for accuracies, and no draw verdict for other metrics."""
    looks: tuple[int, ...] | None = None
    """One look of a sequential design (docs/sequential.md): the design's seed counts, each of at least 2 and
    increasing; comes with ``look``. None: a fixed design at ``alpha``."""
    look: int | None = None
    """Which look of ``looks`` this analysis is (1 = the first): each share of ``alpha`` is then spent from its
    own allotment at this look (models/sequential.py)."""
    design: str | None = None
    """The sequential design that spends ``alpha`` across looks (models/sequential.py); None: the default."""
    gate: Gate = "interpolated"
    """``interpolated``: fit only the runs that reached the interpolation threshold (a run that never fit its
    training set says nothing about what it remembers); ``all``: every finished run."""
    sampler: Sampler = "nutpie"
    """The NUTS sampler of the memory model."""
    draws: int = Field(1000, ge=1)
    """Posterior draws per chain."""
    tune: int = Field(1000, ge=0)
    """Tuning (warm-up) draws per chain, discarded."""
    chains: int = Field(4, ge=2)
    """Chains to sample; R-hat needs several."""
    seed: int = 0
    """The sampler's and the bootstrap's random seed: the same seed gives the same analysis."""
    memory: MemoryKind = "radial"
    """The memory curve the collapse test uses (docs/clocks-and-collapse.md)."""
    n_boot: int = Field(N_BOOT, ge=0)
    """Seed-bootstrap draws of the memory curves and the collapse test."""
    fraction: float | None = None
    """Collapse test: radial memory counts as forgotten at this fraction of its start; None: the statistics'
    default."""
    rope: float | None = None
    """Collapse test: functional memory counts as forgotten below this; None: delta / 0.01."""
    axes: tuple[str, ...] | None = None
    """Collapse test: only these clocks (step always stays); None: every clock."""
    exponents: bool = True
    """Collapse test: fit the clock-exponent model."""
    tolerance: float | None = None
    """Collapse test: a clock holds when every exponent lies within this; None: the statistics' default."""
    compile_shape: tuple[int, int, int] | None = None
    """The smallest (pipelines, sigma_w levels, seeds) shape to compile the memory model for (0: the cube's
    own); smaller cubes are padded, so that they share one compiled sampler (docs/memory-model.md)."""

    @field_validator(*NUMBERS, mode="before")
    @classmethod
    def _a_number(cls, v: Any, info: ValidationInfo) -> Any:
        if isinstance(v, str | bytes | bool):
            number = _as_number(v) if isinstance(v, str) else None
            hint = f"; pass {as_passed(str(info.field_name), number)}" if number is not None else ""
            what = f"the string {v!r}" if isinstance(v, str | bytes) else repr(v)
            raise ValueError(f"must be a number, not {what}{hint}")
        return v

    @field_validator("looks")
    @classmethod
    def _looks(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None and (not v or any(n < 2 for n in v) or any(b <= a for a, b in zip(v, v[1:], strict=False))):
            raise ValueError(f"must be strictly increasing seed counts of at least 2 (got {list(v)})")
        return v

    @model_validator(mode="after")
    def _one_look(self) -> AnalysisSpec:
        if (self.looks is None) != (self.look is None):
            raise ValueError("and looks come together (one look of a sequential design)")
        if self.looks is not None and not 1 <= self.look <= len(self.looks):
            raise ValueError(f"must be between 1 and {len(self.looks)} (got {self.look})")
        return self

    @field_validator("fraction")
    @classmethod
    def _fraction(cls, v: float | None) -> float | None:
        if v is not None and not (0 < v < 1):
            raise ValueError(f"must lie strictly between 0 and 1 (got {v!r})")
        return v

    @field_validator("delta", "draw_margin", "rope", "tolerance")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        return positive(v)        # results/margins.py: the one check of a margin's sign

    @field_validator("compile_shape")
    @classmethod
    def _compile_shape(cls, v: tuple[int, int, int] | None) -> tuple[int, int, int] | None:
        if v is not None and (any(n < 0 for n in v) or math.prod(max(n, 1) for n in v) > MAX_COMPILED_CELLS):
            raise ValueError(f"must be three sizes of at least 0 with at most {MAX_COMPILED_CELLS:,} cells in all "
                             f"(got {v!r})")
        return v

    @field_validator("axes")
    @classmethod
    def _axes(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if v is None:
            return None
        from initmem import cube  # numpy and xarray: only when axes are given

        known = (cube.STEP, *cube.ALL_CLOCKS)
        bad = [a for a in v if a not in known]
        if bad or not v:
            what = f"an unknown axis {bad[0]!r}" if bad else "no axis"
            raise ValueError(f"names {what} (choose among {', '.join(known)})")
        return tuple(v)

    @classmethod
    def of(cls, spec: AnalysisSpec | None = None, **options: Any) -> AnalysisSpec:
        """``spec`` with ``options`` replaced (or a new spec from ``options``), validated."""
        return validated_options(cls, spec.model_dump() if spec is not None else None, options,
                                 what="an analysis option", default="look")   # the one check across fields

    def options(self) -> dict[str, Any]:
        """The options as plain values (what ``initmem run`` records to decide whether to reanalyze)."""
        return self.model_dump()


def _as_number(text: str) -> int | float | None:
    """The number a string spells (``"4"`` -> 4, ``"0.02"`` -> 0.02), for the refusal's hint; None if none."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None


class AnalysisOptions(TypedDict, total=False):
    """The fields of :class:`AnalysisSpec` as keyword arguments (docs/analysis.md, "Options").

    So that :func:`initmem.analyze` types every option: a misspelt one (``delt=0.01``) or a value of the
    wrong kind (``delta="one point"``) is an error in the editor, before anything is fitted. The test of the
    public API checks that it lists exactly the fields of :class:`AnalysisSpec`, with the same vocabularies."""

    metric: str | None
    family: Family | None
    delta: float | None
    alpha: float
    draw_margin: float | None
    looks: Sequence[int] | None
    look: int | None
    design: str | None
    gate: Gate
    sampler: Sampler
    draws: int
    tune: int
    chains: int
    seed: int
    memory: MemoryKind
    n_boot: int
    fraction: float | None
    rope: float | None
    axes: Sequence[str] | None
    exponents: bool
    tolerance: float | None
    compile_shape: tuple[int, int, int] | None


__all__ = ["FAMILIES", "GATES", "MEMORY_KINDS", "N_BOOT", "SAMPLERS", "AnalysisOptions", "AnalysisSpec", "Family",
           "MemoryKind", "Sampler"]

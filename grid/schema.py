"""What a grid holds (docs/collect.md): the pydantic schema of a grid file.

Every model forbids unknown keys, so a typo is refused instead of silently ignored. Reading a file
(presets, YAML, one-line errors) is :mod:`initmem.grid.file`; clock budgets become epochs where the
training set's size is known, in :mod:`initmem.collect.execution.budgets`.
"""

from __future__ import annotations

import numbers
import re
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from initmem import clocks, optimizers
from initmem.errors import UserError
from initmem.grid.datasets import DATASETS as DATASET_TABLE
from initmem.grid.datasets import GENERATED, NAMES, DatasetName
from initmem.grid.datasets import dataset as dataset_entry

DATASETS = NAMES   # the data sets table (grid/datasets.py)
SEQUENCES = tuple(d.name for d in DATASET_TABLE if d.sequence)   # the 1-D ones, which resnet1d takes
ARCH_PATTERN = re.compile(r"^(resnet_tiny|resnet9|resnet(\d+)|resnet1d|mlp|vit_tiny)$")
DENSE_ARCHS = ("mlp", "vit_tiny")  # take any image size (digits and mnist1d included); no BatchNorm
# MNIST-1D (Greydanus & Kobak 2024) is generated, not read: its sizes and generation seed are grid
# fields (part of the grid's identity); the other data sets have none of them.
MNIST1D_FIELDS = ("n_train", "n_val", "n_test", "seed")
MNIST1D_DEFAULTS = {"n_train": 4000, "n_val": 1000, "n_test": 10000, "seed": 0}
MNIST1D_LENGTH = 40  # the generator's final_seq_length: one 1 x 40 signal per example
# Split fields that mean nothing for a generated set (its three splits are drawn i.i.d. at their sizes).
SPLIT_FIELDS = ("val_fraction", "test_fraction", "split_seed")
# The initialization probes (docs/arms.md): what the sigma_w axis of a grid sweeps.
PROBES = ("scale", "layer_scale", "shape", "width_scaling")
SHAPES = ("normal", "uniform", "truncated_normal", "orthogonal")
DEFAULT_WIDTH = {"resnet_tiny": 16, "resnet9": 64, "resnet1d": 32, "mlp": 64, "vit_tiny": 32}  # CIFAR ResNets: 16
RESNET1D_DEPTH = 3  # resnet1d: residual blocks (the first at full length, then one per halving)
OPTIMIZERS = optimizers.names()  # the optimizer table, initmem/optimizers.py
# Pipeline fields added after grids were first hashed: off at 0, and then left out of the canonical YAML.
RECIPE_FIELDS = ("label_smoothing", "ema_decay", "sam_rho", "dropout")
# The architectures that take pipelines.NAME.dropout (on the pooled features, before the head).
DROPOUT_ARCHS = ("resnet1d",)
SCHEDULES = ("constant", "cosine", "step")
INIT_SCALES = ("all_kernels", "normalized_kernels", "convolutions", "head")
INTERP_THRESHOLD = 0.995  # default train accuracy that counts as interpolation (eval.interp_threshold)
# Names of the grid and its pipelines become folder and file names (runs/NAME, shards per pipeline).
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")
MAX_NAME_LENGTH = 100
# The cube stores seeds as int64; the engine's SeedSequence takes any non-negative integer, so the cube's
# dtype is the binding bound.
MAX_SEED = 2**63 - 1


def _number(v: Any) -> Any:
    """A float field: refuse booleans (pydantic would read true as 1.0); numeric strings stay accepted,
    since PyYAML reads ``1e-3`` (no dot) as a string."""
    if isinstance(v, bool):
        raise ValueError(f"must be a number, not a boolean (got {str(v).lower()}; YAML reads yes/no/on/off "
                         "as booleans too)")
    return v


def _whole(v: Any) -> Any:
    """An int field: refuse booleans and strings (pydantic would read true as 1 and "3" as 3)."""
    if isinstance(v, bool):
        raise ValueError(f"must be a whole number, not a boolean (got {str(v).lower()}; YAML reads yes/no/on/off "
                         "as booleans too)")
    if isinstance(v, str):
        raise ValueError(f"must be a whole number, not a string (got {v!r}; write it without quotes)")
    if isinstance(v, numbers.Integral):
        return int(v)  # NumPy integers
    return v


Real = Annotated[float, BeforeValidator(_number)]  # finite: _Strict sets allow_inf_nan=False
Whole = Annotated[int, BeforeValidator(_whole)]


def check_name(name: str, what: str) -> None:
    """Refuse a grid or pipeline name that is not a safe, portable file name."""
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{what} {name!r} may only hold letters, digits, '_', '.', '-'")
    if name in (".", ".."):
        raise ValueError(f"{what} {name!r} is not a usable folder name")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{what} is {len(name)} characters long (at most {MAX_NAME_LENGTH}: it names folders "
                         "and files)")


class _Strict(BaseModel):
    # allow_inf_nan=False: every float field, list and mapping of floats refuses .inf and .nan.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class DatasetSpec(_Strict):
    """The data set and its split.

    ``mnist1d`` is generated offline by the ``mnist1d`` package at ``n_train + n_val + n_test``
    examples from the generation ``seed`` (defaults filled in, so the canonical grid names them
    all); ``root`` is then its cache folder (null: the user cache dir). The fraction and split
    fields apply to the read data sets only, and the mnist1d fields are absent (None) for those,
    so their canonical YAML and grid hash are what they were before mnist1d existed.
    """

    name: DatasetName = "digits"
    root: str | None = None
    val_fraction: Real = Field(0.2, gt=0, lt=1)
    test_fraction: Real = Field(0.25, gt=0, lt=1)
    split_seed: Whole = Field(0, ge=0)
    augment: Literal["none", "crop_flip"] = "none"
    n_train: Whole | None = Field(None, ge=1, le=10_000_000)
    n_val: Whole | None = Field(None, ge=1, le=10_000_000)
    n_test: Whole | None = Field(None, ge=1, le=10_000_000)
    seed: Whole | None = Field(None, ge=0, lt=2**32)  # NumPy's legacy seed range

    @model_validator(mode="before")
    @classmethod
    def _mnist1d_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("name") in NAMES and dataset_entry(data["name"]).source == GENERATED:
            return {**MNIST1D_DEFAULTS, **{k: v for k, v in data.items() if v is not None or k not in MNIST1D_DEFAULTS}}
        return data

    def check_fields(self) -> None:
        """Refuse the fields of the other kind of data set (run by the grid, so the message can
        name ``dataset.<field>``)."""
        if dataset_entry(self.name).source == GENERATED:
            for key in SPLIT_FIELDS:
                if key in self.model_fields_set:
                    raise ValueError(f"dataset.{key}: not for {self.name} (give n_train, n_val, n_test and the "
                                     "generation seed)")
            if self.augment != "none":
                raise ValueError(f"dataset.augment: {self.name} takes none (crop_flip is for images)")
        else:
            for key in MNIST1D_FIELDS:
                if getattr(self, key) is not None:
                    raise ValueError(f"dataset.{key}: only for a generated data set (got dataset {self.name})")


class ModelSpec(_Strict):
    """``norm: none`` is the norm-free arm: per-channel biases instead of BatchNorm and a
    SkipInit gain (learnable, starting at 0) on every residual branch. ``norm: layer`` is
    LayerNorm (mlp: optional after each hidden layer; vit_tiny: always, pre-norm blocks); the
    norm defaults by arch (ResNets batch, mlp none, vit_tiny layer). ``depth`` (mlp: hidden
    layers; vit_tiny: blocks; resnet1d: residual blocks), ``heads`` and ``patch`` (vit_tiny) only
    for the arms that have them. ``resnet1d`` is the 1-D ResNet for mnist1d (batch or none)."""

    arch: str = "resnet_tiny"
    width: Whole | None = Field(None, ge=1, le=4096)
    norm: Literal["batch", "none", "layer"] = "batch"
    depth: Whole | None = Field(None, ge=1, le=64)
    heads: Whole | None = Field(None, ge=1, le=64)
    patch: Whole | None = Field(None, ge=1, le=64)

    @model_validator(mode="before")
    @classmethod
    def _default_norm(cls, data: Any) -> Any:
        if isinstance(data, dict) and "norm" not in data and data.get("arch") in DENSE_ARCHS:
            return {**data, "norm": "none" if data["arch"] == "mlp" else "layer"}
        return data

    @field_validator("arch")
    @classmethod
    def _arch(cls, v: str) -> str:
        m = ARCH_PATTERN.match(v)
        if not m:
            raise ValueError(f"must be one of resnet_tiny, resnet9, resnet20, resnet32, resnet56, "
                             f"resnet(6n+2), resnet1d, mlp, vit_tiny (got {v!r})")
        if m.group(2) is not None:
            depth = int(m.group(2))
            if depth < 8 or (depth - 2) % 6 != 0:
                raise ValueError(f"CIFAR ResNet depth must be 6n+2 with n >= 1, e.g. resnet20 (got {v!r})")
        return v


class InitSpec(_Strict):
    """Which kernels sigma_w multiplies: every kernel, those followed by BatchNorm (scale-
    invariant ones), every convolution, or the classifier only. Head-only and convolution-only
    scaling are complementary arms: see docs/collect.md, *What each arm separates*."""

    scheme: Literal["kaiming_normal"] = "kaiming_normal"
    scale: Literal["all_kernels", "normalized_kernels", "convolutions", "head"] = "all_kernels"
    # What the sigma_w axis sweeps (docs/arms.md): ``scale`` multiplies the kernels ``scale``
    # names; ``layer_scale`` multiplies one layer group (``layers``); ``shape`` draws the kernels
    # ``scale`` names from ``shapes[level - 1]`` at the scheme's variance (sigma_w holds the codes
    # 1..k: a categorical axis); ``width_scaling`` sets the width to sigma_w x model.width under
    # ``parametrization`` (standard, or muP init multipliers and learning rates).
    probe: Literal["scale", "layer_scale", "shape", "width_scaling"] = "scale"
    layers: Literal["first", "body", "head"] | None = None
    shapes: list[Literal["normal", "uniform", "truncated_normal", "orthogonal"]] | None = None
    parametrization: Literal["standard", "mup"] = "standard"


class PipelineSpec(optimizers.WeightDecaySplit, _Strict):
    optimizer: Literal[OPTIMIZERS]  # type: ignore[valid-type]
    lr: Real = Field(gt=0)
    batch_size: Whole = Field(ge=1)
    epochs: Whole | None = Field(None, ge=1)  # None: resolved from ``budget`` (see resolve_budgets)
    budget: dict[str, Real] | None = None  # clock -> value to reach, e.g. {T_l2: 1.2} (docs/reading-the-clocks.md)
    momentum: Real = Field(0.0, ge=0, lt=1)
    nesterov: bool = False
    weight_decay: Real = Field(0.0, ge=0)
    schedule: Literal["constant", "cosine", "step"] = "constant"
    warmup_epochs: Whole = Field(0, ge=0)
    milestones: list[Whole] = Field(default_factory=list)
    gamma: Real = Field(0.1, gt=0, le=1)
    betas: tuple[Real, Real] = (0.9, 0.999)
    eps: Real = Field(1e-8, gt=0)
    # This pipeline's own model section (replaces the grid's): one grid can then set several
    # architectures side by side, e.g. the arms preset (docs/arms.md).
    model: ModelSpec | None = None
    # This pipeline's own eval.every: evaluation passes cost a dense net far less than a conv net or a
    # ViT, so a mixed grid can evaluate the cheap pipelines more often (finer checkpoint selection).
    eval_every: Whole | None = Field(None, ge=1)
    # Recipe knobs (docs/collect.md). Each is off at its default and then absent from the canonical YAML
    # (Grid.to_dict), so every grid written before they existed keeps its hash.
    # label_smoothing: of the training loss only; the evaluation curves stay plain cross-entropy.
    label_smoothing: Real = Field(0.0, ge=0, lt=1)
    # ema_decay: an exponential moving average of the weights is what is evaluated (0: off).
    ema_decay: Real = Field(0.0, ge=0, lt=1)
    # sam_rho: sharpness-aware minimisation on top of the optimizer, radius rho per member (0: off).
    sam_rho: Real = Field(0.0, ge=0)
    # dropout: probability of zeroing each pooled feature before the head in a training forward, every
    # member with its own masks (0: off; resnet1d only, see DROPOUT_ARCHS).
    dropout: Real = Field(0.0, ge=0, lt=1)

    @property
    def is_user_code(self) -> bool:
        return False

    @model_validator(mode="before")
    @classmethod
    def _kind_betas(cls, data: Any) -> Any:
        """A kind whose library recommends other betas (Lion) gets them where the grid names none."""
        if isinstance(data, dict) and "betas" not in data:
            betas = optimizers.DEFAULT_BETAS.get(str(data.get("optimizer")))
            if betas is not None:
                return {**data, "betas": betas}
        return data

    @field_validator("betas")
    @classmethod
    def _betas(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not all(0 <= b < 1 for b in v):
            raise ValueError(f"both betas must lie in [0, 1) (got {list(v)})")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> PipelineSpec:
        kind = optimizers.get(self.optimizer)
        with_momentum = " or ".join(optimizers.with_momentum())
        if self.nesterov and (not kind.momentum or self.momentum <= 0):
            raise ValueError(f"nesterov: needs optimizer {with_momentum} with momentum > 0")
        if not kind.momentum and self.momentum != 0:
            raise ValueError(f"momentum: only for optimizer {with_momentum} (Adam uses betas)")
        if self.budget is not None:
            _check_budget(self.budget)
        if kind.schedule_free:
            # Its average of the iterates replaces a decaying schedule: a decay on top would stall the
            # iterate z while the average still weights every step alike (lr_max), a recipe the method
            # is neither meant nor tested for. The warm-up is the method's own.
            if self.schedule != "constant":
                raise ValueError(f"schedule: {self.optimizer} takes schedule constant (its average replaces the "
                                 f"decay; warmup_epochs allowed), got {self.schedule}")
            if self.ema_decay > 0:
                raise ValueError(f"ema_decay: not with {self.optimizer}, which already evaluates at its own "
                                 "average of the weights")
        if self.milestones and self.schedule != "step":
            raise ValueError("milestones: only for schedule step")
        if self.schedule == "step":
            if not self.milestones:
                raise ValueError("milestones: schedule step needs a non-empty list of epochs")
            if sorted(set(self.milestones)) != list(self.milestones) or self.milestones[0] < 1:
                within = f" in 1..{self.epochs - 1}" if self.epochs is not None else ", from 1 up"
                raise ValueError(f"milestones: must be increasing epochs{within} (got {list(self.milestones)})")
        if self.epochs is not None:
            problem = self.horizon_problem(self.epochs)
            if problem:
                raise ValueError(problem)
        return self

    def horizon_problem(self, epochs: int, budget: dict[str, float] | None = None) -> str | None:
        """What the horizon-dependent fields (warm-up, milestones) get wrong at a horizon of ``epochs``, as
        ``"field: message"``, or None. With ``budget`` the horizon is what that clock budget resolved to
        (the grid names no epochs), and the message says so."""
        why = f", and the budget {budget_text(budget)} resolves to {epochs_text(epochs)}" if budget else ""
        if self.warmup_epochs >= epochs:
            return f"warmup_epochs: must be smaller than {'the horizon' if budget else f'epochs ({epochs})'}{why}"
        if any(m >= epochs for m in self.milestones):
            room = f"1..{epochs - 1}" if epochs > 1 else "none fits: use schedule constant"
            if not budget:
                within = f"in {room}" if epochs > 1 else "before epochs (1): none fits, use schedule constant"
                return f"milestones: must be increasing epochs {within} (got {list(self.milestones)})"
            return f"milestones: must be epochs before the horizon{why} ({room}; got {list(self.milestones)})"
        return None


# A pipeline that is the user's own code (docs/own-model.md, "The grid"): an entry point or a command instead of
# the built-in engine's optimizer and schedule. Its fields; a mapping that gives one of ENTRY_KEYS is one.
ENTRY_KEYS = ("entry", "command")
ENTRY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*"
                           r"(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class UserPipelineSpec(_Strict):
    """A pipeline whose training is the user's code: ``entry`` names a callable ``package.module:function`` that
    receives a :class:`~initmem.collect.custom.cell.Cell`; ``command`` a program (``python train.py --fast``)
    that reads its cell from the JSON file named by ``INITMEM_CELL``. Exactly one of the two.

    ``settings`` is free-form (the cell hands it to the code as given: part of the grid's identity);
    ``timeout_min`` bounds one cell's wall time (past it the cell is stopped and recorded failed, "timed out");
    ``workdir`` is the folder a command runs in and the first place an entry point's module is looked for
    (relative to the grid file's folder; default: that folder, or the current folder for a grid not read from
    a file). None of the built-in engine's fields applies: the code's optimizer and schedule are read by the
    recorder from the optimizer itself."""

    entry: str | None = None
    command: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    timeout_min: Real | None = Field(None, gt=0)
    workdir: str | None = None

    @field_validator("entry")
    @classmethod
    def _entry(cls, v: str | None) -> str | None:
        if v is not None and not ENTRY_PATTERN.fullmatch(v):
            raise ValueError(f"must be 'package.module:function' (got {v!r})")
        return v

    @field_validator("command")
    @classmethod
    def _command(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must name a program to run (got an empty command)")
        return v

    @model_validator(mode="after")
    def _one(self) -> UserPipelineSpec:
        if (self.entry is None) == (self.command is None):
            raise ValueError("entry: give an entry point or a command, not both")
        return self

    # What the collector asks of every pipeline, answered for user code: no built-in model, no horizon
    # in epochs known before the code runs (its record holds the epochs it evaluated), no clock budget.
    @property
    def model(self) -> None:
        return None

    @property
    def epochs(self) -> None:
        return None

    @property
    def budget(self) -> None:
        return None

    @property
    def is_user_code(self) -> bool:
        return True

    def label(self) -> str:
        """The entry point or the command, as the grid gives it."""
        return self.entry if self.entry is not None else str(self.command)


def _pipeline_kind(v: Any) -> str:
    """Which pipeline model a grid mapping's pipeline is: user code when it names an entry point or a command."""
    if isinstance(v, UserPipelineSpec) or (isinstance(v, dict) and any(k in v for k in ENTRY_KEYS)):
        return USER_TAG
    return ENGINE_TAG


# The tags of the two pipeline kinds; not valid field names, so the grid file's messages can drop them.
ENGINE_TAG, USER_TAG = "engine-pipeline", "user-pipeline"
AnyPipeline = Annotated[
    Annotated[PipelineSpec, Tag(ENGINE_TAG)] | Annotated[UserPipelineSpec, Tag(USER_TAG)],
    Discriminator(_pipeline_kind),
]


class EvalSpec(_Strict):
    """Which epoch a run reports (see grid/select.py and docs/cube.md).

    ``best_val_acc_interp`` (default): the best-validation epoch at or after interpolation
    (training accuracy >= interp_threshold), ties to the lower validation loss, then the later
    epoch; a run that never interpolates falls back to its best-validation epoch overall.
    """

    interp_threshold: Real = Field(INTERP_THRESHOLD, gt=0, le=1)
    select: Literal["best_val_acc_interp", "best_val_acc", "last"] = "best_val_acc_interp"
    # Evaluate the splits every N epochs (epoch 0 and the final epoch always): an evaluation pass
    # costs about 40% of a digits epoch. Kernel norms and clocks are recorded at every epoch, so
    # the radial memory curves keep full resolution; the checkpoint is selected among evaluated epochs.
    every: Whole = Field(1, ge=1)


# The Slurm options added after grids were first hashed, with the value at which each is off and then left out of
# the canonical YAML (so a grid that sets none keeps its hash). max_num_timeout's is submitit's own default.
SLURM_OPTIONAL: dict[str, Any] = {"account": None, "qos": None, "constraint": None, "gres": None, "setup": [],
                  "additional_parameters": {}, "max_num_timeout": 3}
# sbatch options the named fields set: additional_parameters may not set them a second time.
SLURM_NAMED = ("partition", "account", "qos", "constraint", "gres", "time", "mem", "gpus_per_node", "gpus-per-node",
               "cpus_per_task", "cpus-per-task", "array", "job_name", "job-name", "output", "error")


class SlurmSpec(_Strict):
    """The Slurm job array's resources (docs/collect.md, "On a Slurm cluster").

    ``account``, ``qos``, ``constraint`` and ``gres`` are sbatch's options of those names; ``setup`` lines run in
    the job script before the task starts (``module load cuda``, ``source venv/bin/activate``: submitit's
    ``slurm_setup``); ``additional_parameters`` are further ``#SBATCH`` options as ``{name: value}`` (submitit's
    ``slurm_additional_parameters``, e.g. ``{mail-type: END}``); ``max_num_timeout`` is how many times a task that
    ran out of time is requeued (submitit's, default 3)."""

    partition: str | None = None
    gpus_per_job: Whole = Field(1, ge=0)
    time_min: Whole = Field(60, ge=1)
    mem_gb: Whole = Field(16, ge=1)
    array_parallelism: Whole = Field(16, ge=1)
    cpus_per_task: Whole = Field(4, ge=1)
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    gres: str | None = None
    setup: list[str] = Field(default_factory=list)
    additional_parameters: dict[str, str | Whole] = Field(default_factory=dict)
    max_num_timeout: Whole = Field(3, ge=0)

    @field_validator("account", "qos", "constraint", "gres", "partition")
    @classmethod
    def _one_word(cls, v: str | None) -> str | None:
        if v is not None and (not v.strip() or any(c in v for c in "\n\r")):
            raise ValueError(f"must be one non-empty line (got {v!r})")
        return v

    @field_validator("setup")
    @classmethod
    def _lines(cls, v: list[str]) -> list[str]:
        for i, line in enumerate(v):
            if "\n" in line or "\r" in line:
                raise ValueError(f"{i}: one shell line per entry (got {line!r})")
        return v

    @field_validator("additional_parameters")
    @classmethod
    def _additional(cls, v: dict[str, str | int]) -> dict[str, str | int]:
        for key in v:
            if key in SLURM_NAMED:
                raise ValueError(f"{key}: set by the slurm block's own field, not by additional_parameters")
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
                raise ValueError(f"{key!r}: not an sbatch option name (letters, digits, '-', '_')")
        return v


class DecideSpec(_Strict):
    """How ``initmem run`` decides this grid unless its command line says otherwise: sequential seeds at these
    looks (docs/sequential.md), the smallest spread that matters and the cap on seeds. A grid that asks one
    question (the memory atlas, docs/atlas.md) carries its design here, so that the design is part of the grid's
    hash and a plain ``initmem run`` asks it."""

    looks: list[Whole] = Field(min_length=1)
    delta: Real | None = Field(None, gt=0)
    max_seeds: Whole | None = Field(None, ge=2)

    @field_validator("looks")
    @classmethod
    def _looks(cls, v: list[int]) -> list[int]:
        if v[0] < 2 or any(b <= a for a, b in zip(v, v[1:], strict=False)):
            raise ValueError(f"looks must be increasing seed counts of at least 2 (got {v})")
        return v


class EngineSpec(_Strict):
    """How the engine runs: pack size, torch.compile, eval batch, CPU threads, layouts, precision.

    ``autocast`` (bf16 rounding) and ``measure_clocks`` (whether the measured clocks are recorded)
    change what a cell computes; ``compile``, ``cpu_threads``, ``channels_last`` and
    ``eval_batch_size`` may change its float rounding, so a resume refuses a change to any of them
    (docs/collect-runs.md); ``pack_size`` does not change a cell on CPU."""

    pack_size: Whole | None = Field(None, ge=1)
    compile: bool = False
    eval_batch_size: Whole = Field(4096, ge=1)  # model-images (images x pack members) per eval forward
    cpu_threads: Whole | None = Field(None, ge=1)
    # channels_last activations: None = on CUDA only. On CPU oneDNN's grouped convolutions run
    # 1.3-2x faster in it. In the default layout a cell's numbers are bitwise the same alone and in
    # any pack; in channels_last that holds when each member's channel counts are multiples of 8
    # (the quick preset's width 8 is tested) but not, e.g., at width 6, where oneDNN's weight-
    # gradient kernels round differently for different pack sizes.
    channels_last: bool | None = None
    # bf16 autocast of the forward passes: None = on CUDA only. True on CPU runs the GPU's mixed-
    # precision branch with torch.autocast("cpu"), which is how the tests cover it.
    autocast: bool | None = None
    # The measured clocks (cos_to_init, angular_path, eff_lr, T_angle, T_eff) cost a float64 pass
    # over the kernels at every step (docs/benchmarks.md); off leaves them NaN.
    measure_clocks: bool = True
    # Worker processes that share each visible GPU (user-code cells, or packs): a small model leaves most of a
    # GPU idle, so several cells at once fill it. Off at 1, and then left out of the canonical YAML.
    cells_per_gpu: Whole = Field(1, ge=1, le=64)


def _seed_list(v: Any) -> list[int]:
    """A validated, sorted list of seeds.

    Raises ``ValueError`` whose message starts with the offending element's position (``0: must be ...``) or
    with none, so that the grid file's one-line error names the element under the field (``seeds.init.0``)."""
    if not isinstance(v, list | tuple):
        raise ValueError(f"must be a list of seeds (got {v!r})")
    if not v:
        raise ValueError("give at least one seed")
    out = []
    for i, s in enumerate(v):
        try:
            s = _whole(s)
        except ValueError as exc:
            raise ValueError(f"{i}: {exc}") from None
        if not isinstance(s, int):
            raise ValueError(f"{i}: must be a whole number (got {s!r})")
        out.append(s)
    bad = [s for s in out if not 0 <= s <= MAX_SEED]
    if bad:
        raise ValueError(f"every seed must be a whole number in 0..{MAX_SEED} (2^63 - 1: the cube stores "
                         f"seeds as int64; got {bad[0]})")
    if len(set(out)) != len(out):
        raise ValueError("seeds must be distinct")
    return sorted(out)


class CrossedSeeds(_Strict):
    """A crossed seed design: every (``init``, ``data``) pair is one run.

    The init seed fixes the initial weights (the engine's STREAM_INIT), the data seed the data order and
    the augmentation (STREAM_ORDER, STREAM_AUG), so runs that share an init seed start from the same draw
    and runs that share a data seed see the same batches (Dodge et al. 2020). Run ``r`` is the pair
    ``(init[r // len(data)], data[r % len(data)])``: row-major over the sorted lists (:meth:`pair`).
    """

    init: list[Whole] = Field(min_length=1)
    data: list[Whole] = Field(min_length=1)

    @field_validator("init", "data")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return _seed_list(v)

    @property
    def n_runs(self) -> int:
        """How many runs the design holds: ``len(init) * len(data)``."""
        return len(self.init) * len(self.data)

    def pair(self, run: int) -> tuple[int, int]:
        """The (init seed, data seed) of run index ``run`` (row-major over the sorted lists)."""
        if not 0 <= run < self.n_runs:
            raise ValueError(f"run index {run} is not in 0..{self.n_runs - 1} (a crossed design of "
                             f"{len(self.init)} init x {len(self.data)} data seeds)")
        return self.init[run // len(self.data)], self.data[run % len(self.data)]


def _seeds_field(v: Any) -> Any:
    """Read ``seeds``: a list (one seed per run, fixing all three random streams) or a mapping
    ``{init: [...], data: [...]}`` (every pair, :class:`CrossedSeeds`). Validated here, in full, so that a
    message names ``seeds.init.0`` rather than the branches of a union."""
    if isinstance(v, CrossedSeeds):
        return v
    if isinstance(v, dict):
        unknown = [k for k in v if k not in ("init", "data")]
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown key (a crossed design gives init and data seed lists)")
        for key in ("init", "data"):
            if key not in v:
                raise ValueError(f"{key}: required field is missing (a crossed design gives init and data "
                                 "seed lists)")
        parts = {}
        for key in ("init", "data"):
            try:
                parts[key] = _seed_list(v[key])
            except ValueError as exc:
                msg = str(exc)
                sep = "." if re.match(r"^[0-9]+: ", msg) else ": "
                raise ValueError(f"{key}{sep}{msg}") from None
        return CrossedSeeds(**parts)
    return _seed_list(v)


class Grid(_Strict):
    """A grid: ``sigma_w`` is the probe's level axis (docs/arms.md); for ``init.probe: shape``
    it may be left out and is then the level codes 1..k of ``init.shapes``.

    ``seeds`` is a list (run ``k`` uses seed ``k`` for its initial weights, its data order and its
    augmentation) or a :class:`CrossedSeeds` mapping (every (init, data) pair, numbered by a run index).
    Either way the cube's ``seed`` dim holds :attr:`runs`; :meth:`seed_pair` says which seeds a run uses.
    """

    name: str
    dataset: DatasetSpec = DatasetSpec()
    model: ModelSpec = ModelSpec()
    init: InitSpec = InitSpec()
    sigma_w: list[Real] = Field(min_length=1)
    seeds: Annotated[list[int] | CrossedSeeds, BeforeValidator(_seeds_field)]
    pipelines: dict[str, AnyPipeline] = Field(min_length=1)
    eval: EvalSpec = EvalSpec()
    slurm: SlurmSpec | None = None
    engine: EngineSpec = EngineSpec()
    budget: dict[str, Real] | None = None  # grid-wide clock budget for pipelines without epochs
    decide: DecideSpec | None = None  # initmem run's default design for this grid (absent: a fixed design)
    # The folder of the grid file this grid was read from (None: a preset, or a grid made in Python), where a
    # user-code pipeline's relative ``workdir`` is taken from. Not a field: no part of the canonical YAML or
    # the hash, so a grid keeps its hash wherever its file lies.
    _base_dir: str | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _shape_codes(cls, data: Any) -> Any:
        init = data.get("init") if isinstance(data, dict) else None
        if isinstance(init, dict) and init.get("probe") == "shape" and "sigma_w" not in data \
                and isinstance(init.get("shapes"), list):
            return {**data, "sigma_w": [float(i + 1) for i in range(len(init["shapes"]))]}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        check_name(v, "grid name")
        return v

    @field_validator("sigma_w")
    @classmethod
    def _sigma(cls, v: list[float]) -> list[float]:
        bad = [s for s in v if not s > 0 or s != s or s == float("inf")]
        if bad:
            raise ValueError(f"every sigma_w must be a positive finite number (got {bad[0]})")
        if len(set(v)) != len(v):
            raise ValueError("sigma_w levels must be distinct")
        return sorted(float(s) for s in v)

    @field_validator("pipelines")
    @classmethod
    def _names(cls, v: dict[str, PipelineSpec | UserPipelineSpec]) -> dict[str, PipelineSpec | UserPipelineSpec]:
        for name in v:
            check_name(name, "pipeline name")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Grid:
        self.dataset.check_fields()
        self._check_model()
        data = dataset_entry(self.dataset.name)
        if data.needs_root and self.dataset.root is None:
            raise ValueError(f"dataset.root: {self.dataset.name} needs a torchvision data folder")
        for where, model in self._models_in_use():
            if self.init.scale == "normalized_kernels" and not (
                    model.norm == "batch" or (model.arch == "mlp" and model.norm == "layer")):
                raise ValueError(f"init.scale: normalized_kernels needs {where}.norm: batch (or an mlp with "
                                 "norm: layer)")
            if self.init.scale == "convolutions" and model.arch in DENSE_ARCHS:
                raise ValueError(f"init.scale: {model.arch} has no convolutions ({where}.arch)")
            if data.convs is not None and not data.sequence and model.arch not in (*data.convs, *DENSE_ARCHS):
                raise ValueError(f"{where}.arch: the {data.size[0]}x{data.size[1]} {data.name} images need "
                                 f"{', '.join(data.convs)}, mlp or vit_tiny")
            if data.sequence and model.arch not in ("resnet1d", *DENSE_ARCHS):
                raise ValueError(f"{where}.arch: the 1-D {data.name} signals need resnet1d, mlp or vit_tiny")
            if model.arch == "resnet1d" and not data.sequence:
                raise ValueError(f"{where}.arch: resnet1d needs a 1-D data set ({', '.join(SEQUENCES)}), not "
                                 f"{data.name}")
            if data.sequence and model.arch == "vit_tiny" and MNIST1D_LENGTH % (model.patch or 2):
                raise ValueError(f"{where}.patch: must divide the mnist1d length {MNIST1D_LENGTH} (got {model.patch})")
            self._check_probe(model, where)
        for name, spec in self.engine_pipelines.items():
            arch = self.model_of(name).arch
            if spec.dropout > 0 and arch not in DROPOUT_ARCHS:
                raise ValueError(f"pipelines.{name}.dropout: only for arch {' or '.join(DROPOUT_ARCHS)} (this "
                                 f"pipeline trains {arch})")
        if self.init.parametrization == "mup":
            for name, spec in self.engine_pipelines.items():
                if optimizers.get(spec.optimizer).schedule_free:
                    raise ValueError(f"pipelines.{name}.optimizer: muP's per-layer learning rates scale a step's "
                                     f"change, which {spec.optimizer}'s averaged iterates do not allow")
        if self.budget is not None:
            _check_budget(self.budget)
        if self.user_pipelines and self.init.probe == "width_scaling":
            raise ValueError("init.probe: width_scaling builds the engine's own net at each width; a pipeline of "
                             "user code takes scale, layer_scale or shape")
        for name, spec in self.engine_pipelines.items():
            if spec.epochs is None and spec.budget is None and self.budget is None:
                raise ValueError(f"pipelines.{name}: give epochs or a clock budget (pipeline or grid-wide)")
        return self

    @property
    def engine_pipelines(self) -> dict[str, PipelineSpec]:
        """The pipelines the built-in engine trains, in grid order."""
        return {n: p for n, p in self.pipelines.items() if isinstance(p, PipelineSpec)}

    @property
    def base_dir(self) -> str | None:
        """The folder of the grid file this grid was read from (absolute), or None for a preset or a grid made
        in Python: user-code pipelines take a relative ``workdir`` from it (docs/own-model.md)."""
        return self._base_dir

    def __eq__(self, other: object) -> bool:
        """Grids are equal when their fields are: the folder a grid was read from (:attr:`base_dir`) is where
        to find its code, not part of the grid, as it is not part of the hash."""
        if not isinstance(other, Grid):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = _Strict.__hash__

    def read_from(self, folder: str | None) -> Grid:
        """This grid as read from a grid file in ``folder`` (:attr:`base_dir`); its fields and hash unchanged."""
        grid = self.model_copy()
        grid._base_dir = folder
        return grid

    @property
    def user_pipelines(self) -> dict[str, UserPipelineSpec]:
        """The pipelines that are the user's code (an entry point or a command), in grid order."""
        return {n: p for n, p in self.pipelines.items() if isinstance(p, UserPipelineSpec)}

    def model_of(self, pipeline: str) -> ModelSpec:
        """The model section a pipeline trains: its own, or the grid's."""
        return self.pipelines[pipeline].model or self.model

    @property
    def mixed_models(self) -> bool:
        """Whether some pipeline sets its own model (then the cube records arch and norm per pipeline)."""
        return any(spec.model is not None for spec in self.pipelines.values())

    def _models_in_use(self) -> list[tuple[str, ModelSpec]]:
        """Every model section some pipeline trains, with the key that sets it (``model`` for the
        grid's, ``pipelines.NAME.model`` for a pipeline's own), so a message can name it."""
        own = [(f"pipelines.{name}.model", spec.model) for name, spec in self.engine_pipelines.items()
               if spec.model is not None]
        shared = [("model", self.model)] if any(spec.model is None for spec in self.engine_pipelines.values()) \
            else []
        return shared + own

    def _check_model(self) -> None:
        self._check_one_model(self.model, "model")
        for where, m in self._models_in_use():
            if where != "model":
                self._check_one_model(m, where)

    def _check_one_model(self, m: ModelSpec, where: str) -> None:
        allowed = {"mlp": ("none", "layer"), "vit_tiny": ("layer",)}.get(m.arch, ("batch", "none"))
        if m.norm not in allowed:
            raise ValueError(f"{where}.norm: {m.arch} takes one of {', '.join(allowed)} (got {m.norm!r})")
        for key in ("depth", "heads", "patch"):
            takes = ("vit_tiny",) if key != "depth" else ("mlp", "vit_tiny", "resnet1d")
            if getattr(m, key) is not None and m.arch not in takes:
                raise ValueError(f"{where}.{key}: only for arch {' or '.join(takes)}")

    def _check_probe(self, model: ModelSpec, where: str = "model") -> None:
        init = self.init
        if (init.layers is not None) != (init.probe == "layer_scale"):
            raise ValueError("init.layers: set it for probe layer_scale, and only then")
        if (init.shapes is not None) != (init.probe == "shape"):
            raise ValueError("init.shapes: set it for probe shape, and only then")
        if init.shapes is not None and (len(init.shapes) < 2 or len(set(init.shapes)) != len(init.shapes)):
            raise ValueError("init.shapes: at least two distinct distributions")
        if init.parametrization != "standard" and init.probe != "width_scaling":
            raise ValueError("init.parametrization: only for probe width_scaling")
        if init.probe == "shape" and self.sigma_w != [float(i + 1) for i in range(len(init.shapes or []))]:
            raise ValueError(f"sigma_w: with probe shape it holds the level codes 1..{len(init.shapes or [])} "
                             "of init.shapes (leave it out to get them)")
        if init.probe == "width_scaling":
            if model.arch != "mlp" or model.norm != "none":
                raise ValueError(f"init.probe: width_scaling needs {where}.arch mlp with norm none")
            base = model.width or DEFAULT_WIDTH["mlp"]
            if any(abs(s * base - round(s * base)) > 1e-9 or round(s * base) < 1 for s in self.sigma_w):
                raise ValueError(f"sigma_w: with probe width_scaling each level times {where}.width ({base}) "
                                 "must be a whole number of units")

    # ---------------------------------------------------------------------------------------
    @property
    def crossed(self) -> bool:
        """Whether ``seeds`` is a crossed (init x data) design."""
        return isinstance(self.seeds, CrossedSeeds)

    @property
    def runs(self) -> list[int]:
        """The run indices, in ascending order: the cube's ``seed`` coordinate.

        A list of seeds: the seeds themselves (unchanged from grids without crossed designs). A crossed
        design: ``0 .. len(init) * len(data) - 1``, row-major over (init, data) (:meth:`CrossedSeeds.pair`)."""
        if isinstance(self.seeds, CrossedSeeds):
            return list(range(self.seeds.n_runs))
        return list(self.seeds)

    def seed_pair(self, run: int) -> tuple[int, int]:
        """The (init seed, data seed) of run index ``run``: ``(run, run)`` for a list of seeds (one seed fixes
        every random stream), the design's pair for a crossed one."""
        if isinstance(self.seeds, CrossedSeeds):
            return self.seeds.pair(int(run))
        return int(run), int(run)

    def seed_coords(self, runs: list[int] | None = None) -> dict[str, list[int]]:
        """The cube's coordinates on the ``seed`` dim besides the run index, for ``runs`` (default: every
        run): ``init_seed`` and ``data_seed`` for a crossed design, none for a list of seeds (so its cubes
        hold exactly what they held before crossed designs existed)."""
        if not isinstance(self.seeds, CrossedSeeds):
            return {}
        pairs = [self.seeds.pair(int(r)) for r in (self.runs if runs is None else runs)]
        return {"init_seed": [i for i, _ in pairs], "data_seed": [d for _, d in pairs]}

    def cells(self, pipeline: str) -> list[tuple[float, int]]:
        """Every (sigma_w, run index) of a pipeline, sigma_w-major, in ascending order (:attr:`runs`)."""
        if pipeline not in self.pipelines:
            raise UserError(f"no pipeline {pipeline!r} in grid {self.name} (has {', '.join(self.pipelines)})")
        return [(s, k) for s in self.sigma_w for k in self.runs]

    def to_dict(self) -> dict[str, Any]:
        """Every field, except the clock budgets, the run design (``decide``), eval.every and the recipe knobs
        (``RECIPE_FIELDS``) at their defaults, the Slurm options added later (``SLURM_OPTIONAL``) and
        ``engine.cells_per_gpu`` at theirs, and the dataset fields of the other kind of data set (mnist1d's
        sizes and seed; the read sets' fractions): grids written before those options existed keep their
        canonical form and hash (resumable runs). A user-code pipeline lists the fields it sets."""
        d = self.model_dump(mode="json")
        dataset = d["dataset"]
        for key in MNIST1D_FIELDS if dataset_entry(self.dataset.name).source != GENERATED else SPLIT_FIELDS:
            dataset.pop(key)   # the fields of the other kind of data set: absent, not defaulted
        for key in ("budget", "decide"):
            if d.get(key) is None:
                d.pop(key, None)
        if d["eval"].get("every") == 1:
            d["eval"].pop("every")
        if d.get("slurm") is not None:
            for key, off in SLURM_OPTIONAL.items():
                if d["slurm"].get(key) == off:
                    d["slurm"].pop(key)
        if d["engine"].get("cells_per_gpu") == 1:
            d["engine"].pop("cells_per_gpu")
        for name, p in d["pipelines"].items():
            if name in self.user_pipelines:
                for key in ("timeout_min", "workdir", "entry", "command"):
                    if p.get(key) is None:
                        p.pop(key)
                continue
            for key in ("budget", "eval_every"):
                if p.get(key) is None:
                    p.pop(key, None)
            for key in RECIPE_FIELDS:
                if p.get(key) == 0:
                    p.pop(key)
        return d

    def to_yaml(self) -> str:
        """Canonical YAML: every field explicit, keys in model order, so equal grids hash equal."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None, width=100)


BUDGET_CLOCKS = clocks.names(clocks.SCHEDULE)  # schedule clocks: known before training


def _check_budget(budget: dict[str, float]) -> None:
    if not budget:
        raise ValueError("budget: give at least one clock, e.g. {T_l2: 1.2}")
    for k, v in budget.items():
        if k not in BUDGET_CLOCKS:
            raise ValueError(f"budget: clock must be one of {', '.join(BUDGET_CLOCKS)} (got {k!r})")
        if not (v > 0 and v != float("inf")):
            raise ValueError(f"budget.{k}: must be a positive finite number (got {v})")


def epochs_text(n: int) -> str:
    return f"{n} epoch{'' if n == 1 else 's'}"


def budget_text(budget: dict[str, float]) -> str:
    """A clock budget as the grid file writes it: ``{T_eta: 0.1}``."""
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in budget.items()) + "}"


def probe_levels(grid: Grid) -> list[str]:
    """The name of every sigma_w level, in sigma_w order (the cube's ``probe_levels``)."""
    init = grid.init
    if init.probe == "shape":
        return list(init.shapes or [])
    if init.probe == "width_scaling":
        return [f"width x{s:g}" for s in grid.sigma_w]
    return [f"{s:g}" for s in grid.sigma_w]


def probe_target(init: InitSpec) -> str:
    """What the probe acts on: the kernels (scale, shape), the layer group, the parametrization."""
    if init.probe == "layer_scale":
        return str(init.layers)
    if init.probe == "width_scaling":
        return init.parametrization
    return init.scale

"""The cube's vocabulary: its dimensions, variables, attributes, dtypes and status codes (docs/cube.md).

Every cube variable has one name, defined here; no other module spells it as a string. Pure names and
tables (numpy-free), so anything may read it.
"""

from __future__ import annotations

from initmem import clocks as _clocks

SCHEMA = "initmem.cube/1"

# Dimensions -------------------------------------------------------------------------------
PIPELINE, SIGMA, SEED, EPOCH, LAYER, EXAMPLE = "pipeline", "sigma_w", "seed", "epoch", "layer", "example"
CELL_DIMS = (PIPELINE, SIGMA, SEED)
CURVE_DIMS = (*CELL_DIMS, EPOCH)
REQUIRED_DIMS = CELL_DIMS

# Variables --------------------------------------------------------------------------------
# Every cube variable has one name, exported here; no other module spells it as a string
# (docs/cube.md documents each one).
# Curves, dims (pipeline, sigma_w, seed, epoch).
TRAIN_LOSS, TRAIN_ACC = "train_loss", "train_acc"
VAL_LOSS, VAL_ACC = "val_loss", "val_acc"
TEST_LOSS, TEST_ACC = "test_loss", "test_acc"
KERNEL_NORM = "kernel_norm"
STEP, LR_NOW = _clocks.STEP, _clocks.LR_NOW  # schedule quantities, named by the clocks table
# Clock names are owned by the clocks table, initmem/clocks.py (docs/cube.md, "Clocks"); take them from here.
T_ETA, T_SGD, T_L2, T_ADAPT, T_WD = _clocks.T_ETA, _clocks.T_SGD, _clocks.T_L2, _clocks.T_ADAPT, _clocks.T_WD
T_ETA_MOM, T_SGD_MOM, T_L2_MOM = _clocks.T_ETA_MOM, _clocks.T_SGD_MOM, _clocks.T_L2_MOM
T_ANGLE, T_EFF = _clocks.T_ANGLE, _clocks.T_EFF
# Per layer, dims (pipeline, sigma_w, seed, epoch, layer).
LAYER_NORM = "layer_norm"
COS_TO_INIT = "cos_to_init"    # cosine between each kernel and its value at epoch 0
ANGULAR_PATH = "angular_path"  # cumulative sum of per-step angles, radians
EFF_LR = "eff_lr"              # eta / ||w||^2 where a normalisation follows the layer (NaN elsewhere)
# Runs, dims (pipeline, sigma_w, seed).
STATUS, TAU_INTERP, TAU_BEST = "status", "tau_interp", "tau_best"
SELECTED_VAL_ACC, SELECTED_TEST_ACC = "selected_val_acc", "selected_test_acc"
SELECTED_TEST_CORRECT, FINAL_TEST_ACC = "selected_test_correct", "final_test_acc"
INIT_KERNEL_NORM, WALL_SECONDS = "init_kernel_norm", "wall_seconds"
# Per-example predictions.
TEST_PRED, TEST_LABEL = "test_pred", "test_label"

CLOCKS = (T_ETA, T_SGD, T_L2, T_ADAPT)  # the clocks every collected cube has (SPEC section 2)
MOMENTUM_CLOCKS = (T_ETA_MOM, T_SGD_MOM, T_L2_MOM)
SCHEDULE_CLOCKS = _clocks.names(_clocks.SCHEDULE)  # every clock computed from the learning-rate schedule
MEASURED_CLOCKS = _clocks.names(_clocks.MEASURED)
ALL_CLOCKS = _clocks.names()
CURVE_VARS = (
    TRAIN_LOSS, TRAIN_ACC, VAL_LOSS, VAL_ACC, TEST_LOSS, TEST_ACC,
    KERNEL_NORM, STEP, LR_NOW, *ALL_CLOCKS,
)
LAYER_VARS = (LAYER_NORM, COS_TO_INIT, ANGULAR_PATH, EFF_LR)  # dims CURVE_DIMS + (layer,)
RUN_VARS = (
    STATUS, TAU_INTERP, TAU_BEST, SELECTED_VAL_ACC, SELECTED_TEST_ACC,
    SELECTED_TEST_CORRECT, FINAL_TEST_ACC, INIT_KERNEL_NORM, WALL_SECONDS,
)
PRED_VARS = (TEST_PRED,)   # dims CELL_DIMS + (example,)
LABEL_VARS = (TEST_LABEL,)  # dims (example,)
ACCURACY_VARS = (TRAIN_ACC, VAL_ACC, TEST_ACC, SELECTED_VAL_ACC, SELECTED_TEST_ACC, FINAL_TEST_ACC)

EXPECTED_DIMS: dict[str, tuple[str, ...]] = {
    **{v: CURVE_DIMS for v in CURVE_VARS},
    **{v: (*CURVE_DIMS, LAYER) for v in LAYER_VARS},
    **{v: CELL_DIMS for v in RUN_VARS},
    **{v: (*CELL_DIMS, EXAMPLE) for v in PRED_VARS},
    **{v: (EXAMPLE,) for v in LABEL_VARS},
}

# CF attributes of each variable (``units``, ``long_name``), which xarray and other NetCDF tools read to label
# axes: accuracies are fractions of the examples (units "1"), losses mean cross-entropy in nats, clocks the
# units of their table entry. Written on every cube (cube/io.py ``canonicalize``), never over a user's own.
_SPLITS = {"train": "training", "val": "validation", "test": "test"}
VARIABLE_ATTRS: dict[str, dict[str, str]] = {
    **{f"{k}_acc": {"units": "1", "long_name": f"{v} accuracy (fraction of examples correct)"}
       for k, v in _SPLITS.items()},
    **{f"{k}_loss": {"units": "1", "long_name": f"{v} loss (mean cross-entropy, nats per example)"}
       for k, v in _SPLITS.items()},
    KERNEL_NORM: {"units": "1", "long_name": "norm of all kernels together (Frobenius)"},
    STEP: {"units": "1", "long_name": "optimizer steps taken"},
    LR_NOW: {"units": "1", "long_name": "learning rate of the epoch's last step"},
    **{c.name: {"units": c.units, "long_name": c.formula} for c in _clocks.CLOCKS},
    LAYER_NORM: {"units": "1", "long_name": "norm of each layer's kernel (Frobenius)"},
    COS_TO_INIT: {"units": "1", "long_name": "cosine between each kernel and its initial value"},
    ANGULAR_PATH: {"units": "rad", "long_name": "cumulative per-step angle of each kernel"},
    EFF_LR: {"units": "1", "long_name": "effective learning rate eta / ||w||^2 of a normalised layer"},
    STATUS: {"long_name": "run status (0 ok, 1 diverged, 2 failed, 3 missing)"},
    TAU_INTERP: {"units": "epoch", "long_name": "first epoch the run interpolates its training set"},
    TAU_BEST: {"units": "epoch", "long_name": "epoch of the validation-selected checkpoint"},
    SELECTED_VAL_ACC: {"units": "1", "long_name": "validation accuracy of the selected checkpoint (fraction)"},
    SELECTED_TEST_ACC: {"units": "1", "long_name": "test accuracy of the selected checkpoint (fraction)"},
    SELECTED_TEST_CORRECT: {"units": "1", "long_name": "test examples the selected checkpoint gets right"},
    FINAL_TEST_ACC: {"units": "1", "long_name": "test accuracy at the last epoch (fraction)"},
    INIT_KERNEL_NORM: {"units": "1", "long_name": "norm of all kernels at initialization (Frobenius)"},
    WALL_SECONDS: {"units": "s", "long_name": "wall-clock time of the run"},
    TEST_PRED: {"long_name": "class predicted for each test example by the selected checkpoint"},
    TEST_LABEL: {"long_name": "true class of each test example"},
}

# Integer variables and the fill value that marks "no value" in them.
INT_VARS: dict[str, tuple[str, int]] = {
    STATUS: ("int8", 3),  # 3 = MISSING
    SELECTED_TEST_CORRECT: ("int32", -1),
    TEST_PRED: ("int16", -1),
    TEST_LABEL: ("int16", -1),
}
FLOAT_DTYPE = "float32"

# Per-pipeline settings (coordinates on the pipeline dim).
PIPELINE_COORDS = ("optimizer", "lr", "batch_size", "momentum", "weight_decay", "schedule", "epochs")

# Run status codes.
OK, DIVERGED, FAILED, MISSING = 0, 1, 2, 3
STATUS_NAMES = {OK: "ok", DIVERGED: "diverged", FAILED: "failed", MISSING: "missing"}

# Global attributes. GRID, TRUTH and FAILED_CELLS hold JSON/YAML text: read them with json_attr.
A_SCHEMA, A_N_TEST, A_INTERP_THRESHOLD, A_SELECT = "schema", "n_test", "interp_threshold", "select"
A_GRID, A_DATASET_FINGERPRINT = "grid", "dataset_fingerprint"
A_INITMEM_VERSION, A_TORCH_VERSION, A_DEVICE, A_CREATED = "initmem_version", "torch_version", "device", "created"
# The optimizer libraries beside torch (Lion, Schedule-Free AdamW; initmem/optimizers.py): '' where not installed.
A_LION_VERSION, A_SCHEDULEFREE_VERSION = "lion_pytorch_version", "schedulefree_version"
A_TRUTH, A_FAILED_CELLS, A_CORRUPT_SHARDS, A_SOURCE = "truth", "failed_cells", "corrupt_shards", "source"
# What a collected cube was trained with, for provenance and for telling grids apart.
A_GRID_HASH, A_GRID_NAME, A_DATASET = "grid_hash", "grid_name", "dataset"
A_ARCH, A_NORM, A_INIT_SCALE, A_AUGMENT = "arch", "norm", "init_scale", "augment"
# The init probe sigma_w holds (absent: scale), what it acts on, its level names (docs/arms.md).
A_PROBE, A_PROBE_TARGET, A_PROBE_LEVELS = "probe", "probe_target", "probe_levels"
PROBE_SCALE, PROBE_SHAPE = "scale", "shape"
# How seeds relate across sigma_w levels: "paired" (one seed shares initial direction, data order and
# augmentation across every level: initmem's own collect) or "independent" (imported runs whose seeds
# share nothing). Absent means paired. The memory model keeps the shared seed effect only when paired.
A_SEED_DESIGN = "seed_design"
SEED_PAIRED, SEED_INDEPENDENT = "paired", "independent"
SEED_DESIGNS = (SEED_PAIRED, SEED_INDEPENDENT)
# A crossed seed design (grid ``seeds: {init: [...], data: [...]}``): the ``seed`` dim is then a run index,
# and these integer coordinates on it give each run's init seed (its initial weights) and data seed (its
# data order and augmentation). Both or neither; no (init, data) pair twice. Absent: one seed per run.
INIT_SEED, DATA_SEED = "init_seed", "data_seed"
SEED_COORDS = (INIT_SEED, DATA_SEED)
GLOBAL_ATTRS = (
    A_SCHEMA, A_N_TEST, A_INTERP_THRESHOLD, A_SELECT, A_GRID, A_DATASET_FINGERPRINT,
    A_INITMEM_VERSION, A_TORCH_VERSION, A_LION_VERSION, A_SCHEDULEFREE_VERSION, A_DEVICE, A_CREATED,
)
COMPRESSION = {"zlib": True, "complevel": 4}


def known_variables() -> tuple[str, ...]:
    return tuple(EXPECTED_DIMS)

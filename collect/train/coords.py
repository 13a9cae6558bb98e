"""Per-pipeline coordinates and global attributes of a collected cube, without torch or data.

A shard merge and the shard of a failed cell need these, and neither should import torch or
load a dataset for them: the dataset's size and fingerprint are passed in by the engine (which
has the split loaded anyway) and, for a failed cell, left out; the merge takes them from the
first finished shard (see :func:`initmem.collect.execution.shards.merge_dir`).
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from initmem import cube, optimizers
from initmem.cube.schema import A_LION_VERSION, A_SCHEDULEFREE_VERSION
from initmem.grid import Grid, ModelSpec, PipelineSpec, grid_hash, probe_levels, probe_target
from initmem.grid.datasets import GENERATED, dataset
from initmem.version import __version__

# A generated data set's recipe (JSON: generator, its arguments, package version, split ranges): the
# fingerprint names the arrays, this says how to make them again. Only for dataset mnist1d.
A_DATASET_PROVENANCE = "dataset_provenance"
# The machine that trained the cube. A CPU cube is bitwise reproducible on the same CPU model with the same
# torch; another CPU (an AVX2-only one against an AVX-512 one) runs other kernels and trains another cube.
# ``cpu_capability`` is the vector ISA torch's own CPU kernels dispatch to on it (torch.backends.cpu).
# A merge of shards trained on several machines lists each value once, joined by CPU_JOIN.
A_CPU_MODEL, A_CPU_CAPABILITY = "cpu_model", "cpu_capability"
MACHINE_ATTRS = (A_CPU_MODEL, A_CPU_CAPABILITY)
CPU_JOIN = "; "


def pipeline_coords(spec: PipelineSpec, model: ModelSpec | None = None) -> dict[str, Any]:
    """The per-pipeline settings stored as coordinates on the pipeline dim (with ``model``, a
    grid whose pipelines set their own models: also ``arch`` and ``norm``)."""
    adam = optimizers.get(spec.optimizer).betas
    arch = {} if model is None else {cube.A_ARCH: model.arch, cube.A_NORM: model.norm}
    return {**arch,
        "optimizer": spec.optimizer, "lr": float(spec.lr), "batch_size": int(spec.batch_size),
        "momentum": float(spec.momentum), "weight_decay": float(spec.weight_decay),
        "schedule": spec.schedule, "epochs": int(spec.epochs),
        "nesterov": int(spec.nesterov), "warmup_epochs": int(spec.warmup_epochs),
        "l2": float(spec.coupled_l2), "decoupled_wd": float(spec.decoupled_wd),
        "beta1": float(spec.betas[0]) if adam else float("nan"),
        "beta2": float(spec.betas[1]) if adam else float("nan"),
        "gamma": float(spec.gamma) if spec.schedule == "step" else float("nan"),
        "milestones": ",".join(str(m) for m in spec.milestones),
        # the recipe knobs (0: off)
        "label_smoothing": float(spec.label_smoothing), "ema_decay": float(spec.ema_decay),
        "sam_rho": float(spec.sam_rho), "dropout": float(spec.dropout),
    }


def _version(distribution: str) -> str:
    """The installed version of ``distribution``, '' where it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # a merge-only install without torch
        return ""


def _torch_version() -> str:
    return _version("torch")


def cpu_model() -> str:
    """The CPU's model name as the operating system reports it ('' where it cannot say).

    Linux: the first processor's ``model name`` in /proc/cpuinfo with its family, model and
    stepping numbers, e.g. ``AMD EPYC (cpu family 25, model 17, stepping 1)``: a virtual machine
    often shows a bare brand name, which the numbers tell apart (ARM kernels have no model name;
    then the machine type is used). macOS: ``sysctl machdep.cpu.brand_string``; elsewhere
    ``platform.processor()``.
    """
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        try:
            text = cpuinfo.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        fields: dict[str, str] = {}
        for line in text.split("\n\n", 1)[0].splitlines():   # the first processor's block
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), " ".join(value.split()))
        name = fields.get("model name", "")
        if name:
            ids = [f"{k} {fields[k]}" for k in ("cpu family", "model", "stepping") if fields.get(k)]
            return f"{name} ({', '.join(ids)})" if ids else name
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                                 timeout=5, check=False).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine()


def cpu_capability() -> str:
    """The ISA torch's CPU kernels use here (``torch.backends.cpu.get_cpu_capability()``, e.g.
    ``AVX512``, ``AVX2``, ``DEFAULT``); '' where torch is not loaded (a merge-only process never
    imports it for this)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return ""


def machine_attrs() -> dict[str, str]:
    """The cube attributes that name the machine: CPU model and torch's CPU ISA (docs/collect.md)."""
    return {A_CPU_MODEL: cpu_model(), A_CPU_CAPABILITY: cpu_capability()}


def cube_attrs(grid: Grid, device: str, *, n_test: int | None = None,
               dataset_fingerprint: str | None = None) -> dict[str, Any]:
    """Global attributes of a cube made from ``grid`` on ``device`` (docs/cube.md).

    ``n_test`` and ``dataset_fingerprint`` come from the loaded split; without them (a failed
    cell) they are omitted rather than computed by loading the data.
    """
    attrs: dict[str, Any] = {
        cube.A_SCHEMA: cube.SCHEMA,
        cube.A_INTERP_THRESHOLD: float(grid.eval.interp_threshold),
        cube.A_SELECT: grid.eval.select,
        cube.A_GRID: grid.to_yaml(),
        cube.A_GRID_HASH: grid_hash(grid),
        cube.A_GRID_NAME: grid.name,
        cube.A_DATASET: grid.dataset.name,
        # one model per grid, or the pipelines' models in grid order (then also per pipeline)
        cube.A_ARCH: ",".join(dict.fromkeys(grid.model_of(p).arch for p in grid.pipelines)),
        cube.A_NORM: ",".join(dict.fromkeys(grid.model_of(p).norm for p in grid.pipelines)),
        cube.A_INIT_SCALE: grid.init.scale,
        cube.A_PROBE: grid.init.probe,
        cube.A_PROBE_TARGET: probe_target(grid.init),
        cube.A_PROBE_LEVELS: ",".join(probe_levels(grid)),
        cube.A_AUGMENT: grid.dataset.augment,
        cube.A_INITMEM_VERSION: __version__,
        cube.A_TORCH_VERSION: _torch_version(),
        A_LION_VERSION: _version("lion-pytorch"),
        A_SCHEDULEFREE_VERSION: _version("schedulefree"),
        cube.A_DEVICE: str(device),
        **machine_attrs(),
        cube.A_CREATED: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    if n_test is not None:
        attrs[cube.A_N_TEST] = int(n_test)
    if dataset_fingerprint is not None:
        attrs[cube.A_DATASET_FINGERPRINT] = dataset_fingerprint
    if dataset(grid.dataset.name).source == GENERATED:
        from initmem.collect.train import mnist1d_gen  # numpy only; the recipe follows from the grid

        attrs[A_DATASET_PROVENANCE] = json.dumps(mnist1d_gen.provenance(grid.dataset), sort_keys=True)
    return attrs

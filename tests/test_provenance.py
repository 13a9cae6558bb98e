"""The machine in a cube's provenance: the CPU model and the ISA torch's CPU kernels use.

A CPU cube is bitwise reproducible only on the same CPU (docs/collect.md, *Reproducibility*), so
the cube names the machine that trained it; the values must be what the machine itself reports,
the grid (and its hash) must not depend on them, and a merge of shards from several machines
must list every machine.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from initmem import cube
from initmem.collect.execution import shards
from initmem.collect.train.coords import A_CPU_CAPABILITY, A_CPU_MODEL, CPU_JOIN, cpu_model
from initmem.collect.train.engine import train_pack
from initmem.grid import grid_hash, parse_grid


def tiny_grid(seeds: tuple[int, ...] = (0,)) -> object:
    return parse_grid({
        "name": "prov", "dataset": {"name": "digits"},
        "model": {"arch": "resnet_tiny", "width": 4, "norm": "batch"},
        "sigma_w": [1.0], "seeds": list(seeds),
        "pipelines": {"a": {"optimizer": "sgd", "lr": 0.05, "batch_size": 128, "epochs": 1}},
        "engine": {"cpu_threads": 1},
    })


def reported_cpu_model() -> str:
    """The model name, family, model and stepping as ``lscpu`` prints them (Linux x86), else
    the operating system's own report: an independent reading of the same machine."""
    if sys.platform.startswith("linux") and shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True,
                             env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout
        fields = {}
        for line in out.splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), " ".join(value.split()))
        if fields.get("Model name") and fields.get("CPU family"):
            return (f"{fields['Model name']} (cpu family {fields['CPU family']}, model {fields['Model']}, "
                    f"stepping {fields['Stepping']})")
    if sys.platform == "darwin":
        return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True,
                              check=True).stdout.strip()
    pytest.skip(f"no independent CPU report on {platform.system()} {platform.machine()}")


@pytest.mark.slow
def test_cube_names_the_cpu_and_torch_isa_it_was_trained_on():
    g = tiny_grid()
    ds = train_pack(g, "a", g.cells("a"))
    assert ds.attrs[A_CPU_MODEL] == reported_cpu_model()
    assert ds.attrs[A_CPU_CAPABILITY] == torch.backends.cpu.get_cpu_capability()
    assert ds.attrs[A_CPU_CAPABILITY] != ""
    # Provenance, not configuration: the grid and its hash are the same on every machine.
    assert ds.attrs[cube.A_GRID_HASH] == grid_hash(g)
    assert ds.attrs[cube.A_GRID] == g.to_yaml()
    assert A_CPU_MODEL not in ds.attrs[cube.A_GRID] and A_CPU_CAPABILITY not in ds.attrs[cube.A_GRID]


def test_cpu_model_is_known_without_torch():
    """A merge-only process (no torch) still reads the model; torch's ISA is left empty there."""
    code = ("import json, sys; from initmem.collect.train.coords import machine_attrs; a = machine_attrs(); "
            "assert 'torch' not in sys.modules; print(json.dumps(a))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {A_CPU_MODEL: cpu_model(), A_CPU_CAPABILITY: ""}


@pytest.mark.slow
def test_merge_lists_every_machine_that_trained_a_cell(tmp_path: Path):
    g = tiny_grid(seeds=(0, 1))
    ds = train_pack(g, "a", g.cells("a"))
    here = ds.attrs[A_CPU_MODEL]
    parts = shards.split_pack(ds, [("a", s, k) for s, k in g.cells("a")])
    h = grid_hash(g)
    for n, (cell, part) in enumerate(sorted(parts.items())):
        if n == 1:   # the second cell came from another machine
            part = part.copy()
            part.attrs = {**part.attrs, A_CPU_MODEL: "Other CPU (cpu family 6, model 85, stepping 7)",
                          A_CPU_CAPABILITY: "AVX2"}
        shards.write_shard(part, tmp_path, cell, grid_hash=h)
    rep = shards.merge_dir(tmp_path, tmp_path / "cube.nc", pipelines=["a"], sigma_w=[1.0], seeds=[0, 1],
                           accepted_hashes={h}, attrs={cube.A_GRID_HASH: h}, pipeline_defaults={})
    want_model = CPU_JOIN.join(sorted({here, "Other CPU (cpu family 6, model 85, stepping 7)"}))
    want_isa = CPU_JOIN.join(sorted({ds.attrs[A_CPU_CAPABILITY], "AVX2"}))
    assert rep.ds.attrs[A_CPU_MODEL] == want_model
    assert rep.ds.attrs[A_CPU_CAPABILITY] == want_isa
    back = cube.open_cube(tmp_path / "cube.nc")
    assert back.attrs[A_CPU_MODEL] == want_model and back.attrs[cube.A_GRID_HASH] == h

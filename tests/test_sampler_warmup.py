"""The background compile of ``initmem run`` (analysis/sampler_warmup.py): it compiles the sampler the analysis
will load, for the shape the grid fixes, and it is never needed for a correct analysis."""

from __future__ import annotations

import numpy as np
import pytest

from initmem.analysis.sampler_warmup import SamplerWarmup, warm_shape
from initmem.grid import load_grid, resolve_preset
from initmem.models import compiled
from initmem.models.data import prepare_data
from initmem.models.designs import SMALL
from initmem.models.memory import MemoryModel, placeholder_data
from initmem.simulate import SimPipeline, simulate_cube


def _key(model: MemoryModel) -> str:
    return compiled.structure_key(model.structure())


def test_the_placeholder_has_the_compiled_structure_of_every_real_table_of_its_shape():
    # A simulated cube of the quick preset's shape at its first look (7 pipelines x 3 levels x 4 seeds, per-example
    # predictions, a cell lost), padded to the last look's 16 seeds as a sequential run compiles it.
    pipes = [SimPipeline(f"p{k}", sigma_sd=0.1 * k, n_sigma=3, n_seed=4) for k in range(7)]
    ds = simulate_cube(pipes, n_test=600, seed=3)
    acc = ds["selected_test_acc"].values.copy()
    acc[0, 2, 1] = np.nan
    ds["selected_test_acc"].values[:] = acc
    real = MemoryModel(prepare_data(ds, "selected_test_acc", gate="all"), delta=0.02, slots=(0, 0, 16))
    assert real.shape == (7, 3, 16)
    assert _key(MemoryModel(placeholder_data((7, 3, 16)))) == _key(real)
    assert _key(MemoryModel(placeholder_data((7, 3, 15)))) != _key(real)   # another shape, another sampler


def test_the_warm_shape_is_the_shape_each_analysis_of_the_run_compiles():
    grid = load_grid(resolve_preset("quick"))
    assert warm_shape(grid, len(grid.seeds)) == (7, 3, 4)                  # a fixed design
    assert warm_shape(grid, 16) == (7, 3, 16)                              # every look of looks 4, 8, 12, 16
    assert warm_shape(grid, 16, (8, 0, 20)) == (8, 3, 20)                  # never below the compile_shape option


def test_no_warm_up_without_a_trusted_disk_cache_or_for_a_shape_the_model_cannot_fit(monkeypatch, tmp_path):
    monkeypatch.setenv(compiled.CACHE_ENV, "off")
    assert not SamplerWarmup.possible((7, 5, 16))
    warm = SamplerWarmup((7, 5, 16)).start()
    assert warm._process is None
    warm.wait()
    warm.stop()
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)                                                  # writable by others: never loaded from
    monkeypatch.setenv(compiled.CACHE_ENV, str(shared))
    assert not SamplerWarmup.possible((7, 5, 16))
    monkeypatch.setenv(compiled.CACHE_ENV, str(tmp_path / "mine"))
    assert SamplerWarmup.possible((7, 5, 16))
    assert not SamplerWarmup.possible((7, 1, 16)) and not SamplerWarmup.possible((7, 5, 1))


def test_a_placeholder_refuses_a_shape_without_two_levels_and_two_seeds():
    with pytest.raises(ValueError, match="2 sigma_w levels and 2 seeds"):
        placeholder_data((1, 1, 4))


@pytest.mark.slow
def test_the_background_process_leaves_the_sampler_in_the_disk_cache():
    # The suite's small shape: the session cache holds it already, or this compile is the one other tests load.
    # Niceness 0 here: at 19 a test beside a busy machine would wait for idle cores.
    warm = SamplerWarmup(SMALL, niceness=0).start()
    assert warm._process is not None
    warm.wait()
    model = MemoryModel(placeholder_data(SMALL))
    key = compiled.structure_key(model.structure())
    assert (compiled.cache_dir() / "compiled" / key[:32] / "meta.json").is_file()
    compiled.clear_memory()                      # this process must load it from disk, as an analysis would
    assert compiled.compile_model(model.model, key, model._inputs()).source == "disk"

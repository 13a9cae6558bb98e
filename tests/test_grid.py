"""The grid file: presets, validation with one-line errors naming the field, canonical form."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from _cli import assert_user_error

from initmem.errors import UserError
from initmem.grid import Grid, grid_hash, load_grid, parse_grid, resolve_preset

BASE = {
    "name": "t",
    "dataset": {"name": "digits"},
    "model": {"arch": "resnet_tiny", "width": 4},
    "sigma_w": [1, 0.5, 2],
    "seeds": [1, 0],
    "pipelines": {
        "sgd": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 3},
        "adam": {"optimizer": "adam", "lr": 0.001, "batch_size": 64, "epochs": 2},
    },
}


def _with(path: str, value) -> dict:
    d = copy.deepcopy(BASE)
    keys = path.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    cur[keys[-1]] = value
    return d


def test_presets_load_and_have_the_promised_shape():
    demo, paper = load_grid("quick"), load_grid("paper")
    assert resolve_preset("quick").name == "quick.yaml"
    assert demo.dataset.name == "mnist1d" and demo.model.arch == "resnet1d" and demo.dataset.n_test >= 10_000
    quick = load_grid("digits")
    assert quick.dataset.name == "digits" and quick.model.arch == "resnet_tiny"
    assert len(quick.pipelines) >= 6
    opts = {p.optimizer for p in quick.pipelines.values()}
    assert {"sgd", "adam"} <= opts
    # The clocks must be distinguishable: eta not simply proportional to b, lambda not constant.
    ratios = {round(p.lr / p.batch_size, 12) for p in quick.pipelines.values()}
    assert len(ratios) > 1
    assert len({p.coupled_l2 for p in quick.pipelines.values()}) > 1
    assert len({p.batch_size for p in quick.pipelines.values()}) > 1
    assert paper.dataset.name == "cifar10" and paper.model.arch == "resnet9"
    assert paper.sigma_w == [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert len(paper.seeds) >= 5
    assert {p.batch_size for p in paper.pipelines.values()} == {128}
    kinds = {(p.optimizer, p.momentum > 0, p.schedule, p.weight_decay > 0) for p in paper.pipelines.values()}
    assert ("sgd", False, "constant", False) in kinds        # low-LR SGD
    assert ("sgd", False, "constant", True) in kinds         # SGD + L2
    assert ("sgd", True, "cosine", True) in kinds            # momentum + wd + cosine
    assert any(k[0] == "adam" for k in kinds) and any(k[0] == "adamw" for k in kinds)


def test_parse_sorts_levels_and_lists_cells():
    g = parse_grid(BASE)
    assert g.sigma_w == [0.5, 1.0, 2.0] and g.seeds == [0, 1]
    assert g.cells("sgd") == [(0.5, 0), (0.5, 1), (1.0, 0), (1.0, 1), (2.0, 0), (2.0, 1)]
    with pytest.raises(UserError, match="no pipeline 'nope'"):
        g.cells("nope")


def test_canonical_yaml_round_trips_and_hash_is_stable():
    g = parse_grid(BASE)
    again = parse_grid(yaml.safe_load(g.to_yaml()))
    assert again == g
    assert again.to_yaml() == g.to_yaml()
    assert grid_hash(again) == grid_hash(g) and len(grid_hash(g)) == 64
    assert grid_hash(parse_grid(_with("pipelines.sgd.lr", 0.2))) != grid_hash(g)
    # key order and flow style in the file do not matter
    shuffled = dict(reversed(list(copy.deepcopy(BASE).items())))
    assert grid_hash(parse_grid(shuffled)) == grid_hash(g)


def test_slurm_block_defaults():
    g = parse_grid(_with("slurm", {"partition": "gpu"}))
    assert g.slurm is not None
    assert (g.slurm.partition, g.slurm.gpus_per_job, g.slurm.time_min, g.slurm.mem_gb,
            g.slurm.array_parallelism, g.slurm.cpus_per_task) == ("gpu", 1, 60, 16, 16, 4)
    assert parse_grid(BASE).slurm is None


@pytest.mark.parametrize("path,value,needles", [
    ("pipelines.adam.optimizer", "adamm", ["pipelines.adam.optimizer", "must be one of sgd, adam, adamw, "
                                                                       "rmsprop", "adamm"]),
    ("pipelines.sgd.lr", 0, ["pipelines.sgd.lr", "greater than 0"]),
    ("pipelines.sgd.lr", "fast", ["pipelines.sgd.lr", "number"]),
    ("pipelines.sgd.batch_size", 0, ["pipelines.sgd.batch_size"]),
    ("pipelines.sgd.schedule", "linear", ["pipelines.sgd.schedule", "constant, cosine, step"]),
    ("pipelines.sgd.lrr", 0.1, ["pipelines.sgd.lrr", "unknown key"]),
    ("sigma_w", [1, -2], ["sigma_w", "positive"]),
    ("sigma_w", [0, 1], ["sigma_w", "positive"]),
    ("sigma_w", [], ["sigma_w"]),
    ("seeds", [], ["seeds"]),
    ("seeds", [1, 1], ["seeds", "distinct"]),
    ("dataset.name", "mnist", ["dataset.name", "digits, cifar10, cifar100, fashion_mnist, svhn"]),
    ("dataset.augment", "mixup", ["dataset.augment", "none, crop_flip"]),
    ("dataset.val_fraction", 1.5, ["dataset.val_fraction"]),
    ("model.arch", "resnet19", ["model.arch", "6n+2"]),
    ("model.arch", "vgg", ["model.arch", "resnet_tiny, resnet9"]),
    ("model.norm", "layer", ["model.norm", "batch, none"]),
    ("init.scale", "everything", ["init.scale", "all_kernels, normalized_kernels, convolutions, head"]),
    ("eval.select", "best", ["eval.select", "best_val_acc, last"]),
    ("eval.interp_threshold", 1.5, ["eval.interp_threshold"]),
    ("colour", "red", ["colour", "unknown key"]),
    ("pipelines.sgd.nesterov", True, ["nesterov", "momentum"]),
    ("pipelines.sgd.warmup_epochs", 3, ["warmup_epochs"]),
    ("pipelines.adam.momentum", 0.9, ["momentum", "betas"]),
    ("slurm", {"gpus": 2}, ["slurm.gpus", "unknown key"]),
])
def test_bad_values_are_refused_with_one_line_naming_the_field(path, value, needles):
    with pytest.raises(UserError) as exc:
        parse_grid(_with(path, value), source="grid file bad.yaml")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("grid file bad.yaml: ")
    for n in needles:
        assert n in msg, (n, msg)


def test_quick_preset_has_its_remembering_and_forgetting_arms():
    """The design its header promises: no sigma_w = 8, plain SGD without L2 at a constant rate
    (remembers), SGD + L2 and the Adam family with a decaying schedule (forget), and horizons,
    momenta and L2 that vary across pipelines."""
    quick = load_grid("digits")
    assert max(quick.sigma_w) == 4.0 and len(quick.seeds) >= 5
    pipes = quick.pipelines.values()
    remember = [p for p in pipes if p.optimizer == "sgd" and p.weight_decay == 0 and p.schedule == "constant"]
    assert len(remember) >= 2 and len({(p.lr, p.batch_size) for p in remember}) == len(remember)
    assert any(p.optimizer == "sgd" and p.coupled_l2 > 0 and p.momentum == 0 and p.schedule == "cosine" for p in pipes)
    assert any(p.optimizer == "adamw" and p.decoupled_wd > 0 and p.schedule == "cosine" for p in pipes)
    assert len({p.epochs for p in pipes}) > 1 and len({p.momentum for p in pipes}) > 1
    assert sum(p.coupled_l2 > 0 for p in pipes) >= 3 and sum(p.optimizer != "sgd" for p in pipes) >= 3


@pytest.mark.parametrize("scale", ["all_kernels", "convolutions", "head"])
def test_every_init_scale_but_normalized_kernels_works_without_normalisation(scale):
    g = parse_grid({**_with("model.norm", "none"), "init": {"scale": scale}})
    assert (g.model.norm, g.init.scale) == ("none", scale)


def test_cross_field_rules():
    with pytest.raises(UserError, match="normalized_kernels needs model.norm: batch"):
        parse_grid({**_with("model.norm", "none"), "init": {"scale": "normalized_kernels"}})
    with pytest.raises(UserError, match="dataset.root"):
        parse_grid({**_with("dataset.name", "cifar10"), "model": {"arch": "resnet20"}})
    with pytest.raises(UserError, match="milestones"):
        parse_grid(_with("pipelines.sgd.schedule", "step"))


def test_load_grid_file_errors(tmp_path: Path):
    bad = tmp_path / "quick.yaml"
    d = _with("pipelines.adam.optimizer", "adamm")
    bad.write_text(yaml.safe_dump(d))
    with pytest.raises(UserError) as exc:
        load_grid(bad)
    assert str(exc.value) == ("grid file quick.yaml: pipelines.adam.optimizer: must be one of sgd, adam, "
                              "adamw, rmsprop (got 'adamm')")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_grid(broken)
    with pytest.raises(UserError, match="no such grid file"):
        load_grid(tmp_path / "absent.yaml")
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(UserError, match="must be a YAML mapping"):
        load_grid(listy)


def test_collect_cli_refuses_a_bad_grid_with_exit_2(tmp_path: Path, cli):
    bad = tmp_path / "BAD.yaml"
    bad.write_text(yaml.safe_dump(_with("sigma_w", [0.5, -1])))
    proc = cli("collect", str(bad), "--out", str(tmp_path / "out"))
    assert_user_error(proc, "sigma_w", "positive")
    assert not (tmp_path / "out" / "cube.nc").exists()


def test_grid_model_is_frozen():
    g = parse_grid(BASE)
    assert isinstance(g, Grid)
    with pytest.raises(Exception):  # noqa: B017 -- pydantic raises ValidationError on assignment
        g.name = "other"  # type: ignore[misc]


def test_rmsprop_is_an_adaptive_optimizer_with_coupled_l2():
    """RMSprop: T_adapt = T_eta, weight decay is coupled L2 (lambda of T_l2), no heavy-ball momentum."""
    import numpy as np

    from initmem import cube
    from initmem.schedule import pipeline_clocks

    g = parse_grid(_with("pipelines.adam", {"optimizer": "rmsprop", "lr": 0.001, "batch_size": 64,
                                            "weight_decay": 0.01, "epochs": 2}))
    spec = g.pipelines["adam"]
    assert (spec.coupled_l2, spec.decoupled_wd) == (0.01, 0.0)
    c = pipeline_clocks(spec, 1000)
    np.testing.assert_array_equal(c[cube.T_ADAPT], c[cube.T_ETA])
    np.testing.assert_allclose(c[cube.T_L2], 0.01 * c[cube.T_ETA], rtol=1e-12)
    with pytest.raises(UserError, match="momentum: only for optimizer sgd"):
        parse_grid(_with("pipelines.adam", {"optimizer": "rmsprop", "lr": 0.001, "batch_size": 64, "epochs": 2,
                                            "momentum": 0.9}))

"""The grid file: presets, validation with one-line errors naming the field, canonical form."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from initmem.errors import UserError
from initmem.grid import Grid, grid_hash, load_grid, parse_grid, resolve_preset
from initmem.tests._cli import assert_user_error, invoke

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
                                                                       "rmsprop, lion, sf_adamw", "adamm"]),
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
                              "adamw, rmsprop, lion, sf_adamw (got 'adamm')")
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


def test_collect_cli_refuses_a_bad_grid_with_exit_2(tmp_path: Path):
    bad = tmp_path / "BAD.yaml"
    bad.write_text(yaml.safe_dump(_with("sigma_w", [0.5, -1])))
    proc = invoke("collect", str(bad), "--out", str(tmp_path / "out"))
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


# Hardening (one line naming the key, never an internal error) ---------------------------------------------

def _budgeted(**fields) -> dict:
    return _with("pipelines.sgd", {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "budget": {"T_eta": 0.1},
                                   **fields})


def _refused(data, *needles: str) -> str:
    with pytest.raises(UserError) as exc:
        parse_grid(data, source="grid file g.yaml")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("grid file g.yaml: "), msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


@pytest.mark.parametrize("name", ["quick", "digits", "paper", "clocks", "arms", "atlas", "crossed"])
def test_every_packaged_preset_still_loads(name):
    assert load_grid(name).name == name


def test_a_budgeted_pipeline_with_a_bad_horizon_field_is_refused_naming_it():
    from initmem.collect.execution.budgets import resolve_budgets

    # Read without the data: no horizon yet, but the milestones' order is still checked (was a TypeError).
    assert _refused(_budgeted(schedule="step", milestones=[5, 3])) == (
        "grid file g.yaml: pipelines.sgd.milestones: must be increasing epochs, from 1 up (got [5, 3])")
    # Resolved (24 steps of lr 0.1 per epoch at n_train 768, b 32: T_eta 0.1 in 1 epoch): named, in one line.
    with pytest.raises(UserError) as exc:
        resolve_budgets(parse_grid(_budgeted(warmup_epochs=5)), n_train=768, source="grid file g.yaml")
    assert str(exc.value) == ("grid file g.yaml: pipelines.sgd.warmup_epochs: must be smaller than the horizon, "
                              "and the budget {T_eta: 0.1} resolves to 1 epoch")
    with pytest.raises(UserError) as exc:
        resolve_budgets(parse_grid(_budgeted(schedule="step", milestones=[50])), n_train=768)
    assert str(exc.value) == ("grid t: pipelines.sgd.milestones: must be epochs before the horizon, and the budget "
                              "{T_eta: 0.1} resolves to 1 epoch (none fits: use schedule constant; got [50])")
    big = _budgeted(schedule="step", milestones=[50])
    big["pipelines"]["sgd"]["budget"] = {"T_eta": 24}   # 2.4 per epoch before the milestone: 10 epochs
    with pytest.raises(UserError, match=r"pipelines\.sgd\.milestones: .* resolves to 10 epochs \(1\.\.9; got"):
        resolve_budgets(parse_grid(big), n_train=768)
    big["pipelines"]["sgd"]["milestones"] = [9]         # 21.6 by epoch 9, then 0.24 per epoch: 19 epochs
    assert resolve_budgets(parse_grid(big), n_train=768).pipelines["sgd"].epochs == 19


def test_a_pipeline_with_epochs_and_its_own_budget_must_agree():
    """Both given and different: the budget would be silently ignored, so refuse. Both given and equal is
    the canonical form of a resolved grid (the grid folder's grid.yaml), which must read back."""
    from initmem.collect.execution.budgets import resolve_budgets

    with pytest.raises(UserError) as exc:
        resolve_budgets(parse_grid(_budgeted(epochs=30)), n_train=768, source="grid file g.yaml")
    assert str(exc.value) == ("grid file g.yaml: pipelines.sgd.budget: give epochs or a budget, not both (the "
                              "budget {T_eta: 0.1} resolves to 1 epoch, epochs is 30)")
    resolved = resolve_budgets(parse_grid(_budgeted()), n_train=768)
    again = parse_grid(yaml.safe_load(resolved.to_yaml()))
    assert again.pipelines["sgd"].epochs == 1 and again.pipelines["sgd"].budget == {"T_eta": 0.1}
    assert resolve_budgets(again, n_train=768) == again


def test_collect_refuses_a_budget_horizon_problem_in_one_line(tmp_path: Path):
    bad = tmp_path / "g.yaml"
    bad.write_text(yaml.safe_dump(_budgeted(warmup_epochs=5)))
    proc = invoke("collect", bad, "--out", tmp_path / "out")
    assert_user_error(proc, "grid file g.yaml: pipelines.sgd.warmup_epochs: must be smaller than the horizon",
                      "resolves to 1 epoch")
    assert not (tmp_path / "out").exists()


def test_seeds_must_fit_the_cubes_int64():
    assert parse_grid(_with("seeds", [0, 2**63 - 1])).seeds == [0, 2**63 - 1]
    for bad in (2**63, 2**64, -1):
        _refused(_with("seeds", [0, bad]), "seeds: every seed must be a whole number in 0..9223372036854775807",
                 f"got {bad}")


@pytest.mark.parametrize("key,name,needle", [
    ("name", "..", "name: grid name '..' is not a usable folder name"),
    ("name", ".", "name: grid name '.' is not a usable folder name"),
    ("name", "t\n", "name: grid name 't\\n' may only hold"),
    ("name", "a/b", "name: grid name 'a/b' may only hold"),
    ("name", "g" * 101, "name: grid name is 101 characters long (at most 100"),
    ("pipeline", "..", "pipelines: pipeline name '..' is not a usable folder name"),
    ("pipeline", "sgd\n", "pipelines: pipeline name 'sgd\\n' may only hold"),
    ("pipeline", "p" * 300, "pipelines: pipeline name is 300 characters long (at most 100"),
])
def test_unsafe_names_are_refused(key, name, needle):
    if key == "name":
        data = _with("name", name)
    else:
        data = copy.deepcopy(BASE)
        data["pipelines"][name] = data["pipelines"].pop("sgd")
    _refused(data, needle)


def test_names_up_to_100_characters_are_fine():
    data = _with("name", "g" * 100)
    data["pipelines"]["p" * 100] = data["pipelines"].pop("sgd")
    assert set(parse_grid(data).pipelines) == {"p" * 100, "adam"}


def test_duplicate_yaml_keys_are_refused_naming_key_and_line(tmp_path: Path):
    head = "name: t\nsigma_w: [1]\nseeds: [0]\n"
    sgd = "  sgd: {optimizer: sgd, lr: 0.1, batch_size: 32, epochs: 2}\n"
    cases = {
        "pipes.yaml": (head + "pipelines:\n" + sgd + sgd, "pipelines.sgd: duplicate key at line 6 (first given at "
                                                          "line 5)"),
        "seeds.yaml": (head + "seeds: [1]\npipelines:\n" + sgd, "seeds: duplicate key at line 4 (first given at "
                                                                "line 3)"),
        "deep.yaml": (head + "pipelines:\n  sgd:\n    optimizer: sgd\n    lr: 0.1\n    lr: 0.2\n",
                      "pipelines.sgd.lr: duplicate key at line 8 (first given at line 7)"),
    }
    for name, (text, needle) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UserError) as exc:
            load_grid(path)
        assert str(exc.value) == f"grid file {name}: {needle}; give each key once"
    # A merge key may still be overridden (YAML's own rule), and safe loading stays safe.
    merged = tmp_path / "merged.yaml"
    merged.write_text(head + "pipelines:\n  base: &b {optimizer: sgd, lr: 0.1, batch_size: 32, epochs: 2}\n"
                      "  sgd: {<<: *b, lr: 0.2}\n")
    assert [p.lr for p in load_grid(merged).pipelines.values()] == [0.1, 0.2]
    unsafe = tmp_path / "unsafe.yaml"
    unsafe.write_text(head + "pipelines: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_grid(unsafe)


@pytest.mark.parametrize("path,value,needle", [
    ("seeds", [True, False], "seeds.0: must be a whole number, not a boolean (got true"),
    ("sigma_w", [True, 2], "sigma_w.0: must be a number, not a boolean (got true"),
    ("pipelines.sgd.epochs", True, "pipelines.sgd.epochs: must be a whole number, not a boolean"),
    ("pipelines.sgd.lr", True, "pipelines.sgd.lr: must be a number, not a boolean"),
    ("pipelines.sgd.batch_size", False, "pipelines.sgd.batch_size: must be a whole number, not a boolean"),
    ("model.width", True, "model.width: must be a whole number, not a boolean"),
    ("eval.interp_threshold", True, "eval.interp_threshold: must be a number, not a boolean"),
    ("seeds", ["0"], "seeds.0: must be a whole number, not a string (got '0'; write it without quotes)"),
    ("pipelines.sgd.epochs", "3", "pipelines.sgd.epochs: must be a whole number, not a string"),
])
def test_booleans_and_quoted_whole_numbers_are_not_numbers(path, value, needle):
    _refused(_with(path, value), needle)


def test_numbers_still_read_as_written(tmp_path: Path):
    import numpy as np

    f = tmp_path / "g.yaml"
    f.write_text("name: t\nsigma_w: [1, 2.5]\nseeds: [0, 3]\npipelines:\n"
                 "  adam: {optimizer: adam, lr: 1e-3, eps: 1e-8, batch_size: 32, epochs: 2, weight_decay: 5e-4}\n")
    spec = load_grid(f).pipelines["adam"]        # PyYAML reads 1e-3 as a string: still a float
    assert (spec.lr, spec.eps, spec.weight_decay) == (1e-3, 1e-8, 5e-4)
    g = parse_grid(_with("seeds", [np.int64(2), np.int32(0)]))  # NumPy integers from code are whole numbers
    assert g.seeds == [0, 2] and all(type(s) is int for s in g.seeds)


@pytest.mark.parametrize("path,value", [
    ("pipelines.sgd.lr", float("inf")),
    ("pipelines.sgd.weight_decay", float("inf")),
    ("pipelines.adam.eps", float("inf")),
    ("pipelines.sgd.momentum", float("nan")),
    ("pipelines.adam.betas", [0.9, float("nan")]),
    ("pipelines.sgd.lr", "inf"),
    ("sigma_w", [1, float("inf")]),
    ("budget", {"T_eta": float("nan")}),
    ("dataset.val_fraction", float("nan")),
])
def test_non_finite_numbers_are_refused(path, value):
    _refused(_with(path, value), path.split(".")[0], "finite")


def test_a_pipelines_own_model_is_named_in_its_errors():
    own = _with("pipelines.sgd.model", {"arch": "resnet_tiny", "depth": 3})
    assert _refused(own) == "grid file g.yaml: pipelines.sgd.model.depth: only for arch mlp or vit_tiny or resnet1d"
    _refused(_with("pipelines.sgd.model", {"arch": "resnet_tiny", "norm": "layer"}), "pipelines.sgd.model.norm: ")
    _refused(_with("pipelines.sgd.model", {"arch": "resnet20"}), "pipelines.sgd.model.arch: the 8x8 digits")
    _refused(_with("model.depth", 3), "grid file g.yaml: model.depth: only for arch")


def test_a_pipeline_validator_names_the_field_under_the_pipeline():
    assert _refused(_with("pipelines.sgd.warmup_epochs", 3)) == (
        "grid file g.yaml: pipelines.sgd.warmup_epochs: must be smaller than epochs (3)")
    _refused(_with("pipelines.sgd.budget", {"T_nope": 1}), "pipelines.sgd.budget: clock must be one of")
    step = _with("pipelines.sgd.schedule", "step")
    step["pipelines"]["sgd"]["milestones"] = [2, 7]
    assert _refused(step) == ("grid file g.yaml: pipelines.sgd.milestones: must be increasing epochs in 1..2 "
                              "(got [2, 7])")

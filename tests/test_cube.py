"""The cube schema: valid cubes validate; each kind of damage is reported by name."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from initmem import atomic, cube


@st.composite
def valid_cubes(draw) -> xr.Dataset:
    n_p = draw(st.integers(1, 3))
    n_sig = draw(st.integers(2, 5))
    n_seed = draw(st.integers(2, 4))
    n_ep = draw(st.integers(0, 4))
    sigma = np.sort(np.asarray(draw(st.lists(st.floats(0.01, 100), min_size=n_sig, max_size=n_sig, unique=True))))
    seeds = draw(st.lists(st.integers(0, 10_000), min_size=n_seed, max_size=n_seed, unique=True))
    names = draw(st.lists(st.text("abcxyz_<>&é", min_size=1, max_size=8), min_size=n_p, max_size=n_p, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    ds = cube.empty_cube(names, sigma.tolist(), seeds, epochs=n_ep - 1 if n_ep else None, attrs={"n_test": 100})
    shape = (n_p, n_sig, n_seed)
    ds[cube.STATUS] = (cube.CELL_DIMS, rng.integers(0, 4, shape).astype("int8"))
    ds[cube.SELECTED_TEST_ACC] = (cube.CELL_DIMS, rng.random(shape))
    ds[cube.SELECTED_TEST_CORRECT] = (cube.CELL_DIMS, rng.integers(0, 100, shape))
    if n_ep:
        ds["val_acc"] = (cube.CURVE_DIMS, rng.random((*shape, n_ep)))
        ds[cube.KERNEL_NORM] = (cube.CURVE_DIMS, rng.random((*shape, n_ep)) + 1)
    ds = ds.assign_coords(lr=("pipeline", rng.random(n_p)), optimizer=("pipeline", np.array(["sgd"] * n_p,
                                                                                            dtype=object)))
    return cube.canonicalize(ds)


def codes(ds: xr.Dataset) -> set[str]:
    return {p.code for p in cube.validate(ds)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_cubes())
def test_valid_cubes_validate(ds):
    assert cube.errors(ds) == []


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(ds=valid_cubes())
def test_round_trip_is_identical(tmp_path_factory, ds):
    path = tmp_path_factory.mktemp("rt") / "c.nc"
    cube.write_cube(ds, path)
    back = cube.open_cube(path)
    xr.testing.assert_identical(back, ds)
    assert back.attrs == ds.attrs
    assert atomic.leftover_temporaries(path.parent) == []


@settings(max_examples=25, deadline=None)
@given(valid_cubes(), st.sampled_from(["missing_dim", "wrong_dtype", "unpaired_seed", "nan_coord", "schema_attr"]))
def test_each_damage_is_reported_by_name(ds, damage):
    if damage == "missing_dim":
        bad = ds.rename({"seed": "replicate"})
    elif damage == "wrong_dtype":
        bad = ds.assign(status=ds[cube.STATUS].astype("float32"))
    elif damage == "unpaired_seed":
        status = ds[cube.STATUS].values.copy()
        status[0] = cube.OK
        status[0, 0, 0] = cube.MISSING
        bad = ds.assign(status=(cube.CELL_DIMS, status))
    elif damage == "nan_coord":
        sig = ds["sigma_w"].values.copy()
        sig[-1] = np.nan
        bad = ds.assign_coords(sigma_w=sig)
    else:
        bad = ds.assign_attrs(schema="initmem.cube/0")
    assert damage in codes(bad)


def test_all_problems_are_reported_not_only_the_first():
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1])
    ds[cube.STATUS] = (cube.CELL_DIMS, np.zeros((1, 2, 2), dtype="float64"))
    ds.attrs["schema"] = "nope"
    ds = ds.assign_coords(sigma_w=[1.0, np.nan])
    found = codes(ds)
    assert {"schema_attr", "wrong_dtype", "nan_coord"} <= found


def test_nan_in_pipeline_or_seed_coordinate_is_named():
    ds = cube.empty_cube(["a", "b"], [1.0, 2.0], [0, 1])
    ds[cube.SELECTED_TEST_ACC] = (cube.CELL_DIMS, np.zeros((2, 2, 2), dtype="float32"))
    assert "nan_coord" in codes(ds.assign_coords(seed=[0.0, np.nan]))
    assert "nan_coord" in codes(ds.assign_coords(pipeline=np.array(["a", None], dtype=object)))


def test_unpaired_seed_is_a_warning_not_an_error():
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1])
    ds[cube.STATUS] = (cube.CELL_DIMS, np.array([[[0, 0], [0, 3]]], dtype="int8"))
    problems = cube.validate(ds)
    assert [p.code for p in problems] == ["unpaired_seed"]
    assert problems[0].severity == "warning"
    assert cube.unpaired_seeds(ds) == {"a": [1]}


def test_write_refuses_invalid_cube_and_leaves_nothing(tmp_path):
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1])  # no variable at all
    with pytest.raises(ValueError, match="no run or curve variable"):
        cube.write_cube(ds, tmp_path / "c.nc")
    assert list(tmp_path.iterdir()) == []


def test_curves_are_float32_and_compressed(tmp_path):
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1], epochs=3)
    ds["val_acc"] = (cube.CURVE_DIMS, np.full((1, 2, 2, 4), 0.5))
    cube.write_cube(ds, tmp_path / "c.nc")
    import netCDF4

    with netCDF4.Dataset(tmp_path / "c.nc") as nc:
        assert nc.data_model == "NETCDF4"
        assert nc["val_acc"].dtype == np.float32
        assert nc["val_acc"].filters()["zlib"]


def test_variables_carry_cf_units_and_names_and_keep_their_own(tmp_path):
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1], epochs=3)
    ds["val_acc"] = (cube.CURVE_DIMS, np.full((1, 2, 2, 4), 0.5))
    ds[cube.T_SGD] = (cube.CURVE_DIMS, np.ones((1, 2, 2, 4)))
    ds[cube.T_ANGLE] = (cube.CURVE_DIMS, np.ones((1, 2, 2, 4)))
    ds[cube.WALL_SECONDS] = (cube.CELL_DIMS, np.ones((1, 2, 2)), {"units": "min"})   # the writer's own unit
    back = cube.open_cube(cube.write_cube(ds, tmp_path / "c.nc"))
    assert back["val_acc"].attrs == {"units": "1", "long_name": "validation accuracy (fraction of examples correct)"}
    assert back[cube.T_SGD].attrs == {"units": "1", "long_name": "sum of eta_k^2 / b (SGD noise)"}
    assert back[cube.T_ANGLE].attrs["units"] == "rad"
    assert back[cube.WALL_SECONDS].attrs["units"] == "min"
    assert set(cube.VARIABLE_ATTRS) >= set(cube.known_variables())   # every variable the schema knows is labelled

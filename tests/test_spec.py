"""AnalysisSpec: every analysis option validated once, errors that name the option, and the command
line that names the flag instead; the public API of the package root."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from initmem.errors import OptionError, UserError
from initmem.results.spec import AnalysisSpec
from initmem.tests._cli import assert_user_error, invoke


@pytest.mark.parametrize(("options", "message"), [
    ({"delta": -1.0}, "delta must be a positive number (got -1.0)"),
    ({"delta": math.inf}, "delta must be a positive number (got inf)"),
    ({"gate": "some"}, "gate must be one of interpolated, all (got 'some')"),
    ({"family": "student_t"}, "family must be one of binomial, gaussian (got 'student_t')"),
    ({"sampler": "stan"}, "sampler must be one of nutpie, pymc (got 'stan')"),
    ({"memory": "angular"}, "memory must be one of radial, radial_above, radial_below, functional (got 'angular')"),
    ({"chains": 1}, "chains must be at least 2 (got 1)"),
    ({"tune": -1}, "tune must be at least 0 (got -1)"),
    ({"delt": 0.01}, "delt is not an analysis option"),
    ({"fraction": 1.0}, "fraction must lie strictly between 0 and 1 (got 1.0)"),
    ({"rope": 0.0}, "rope must be a positive number (got 0.0)"),
    ({"tolerance": math.nan}, "tolerance must be a positive number (got nan)"),
    ({"axes": ("T_sgd", "T_bogus")}, "axes names an unknown axis 'T_bogus' (choose among step, "),
    ({"axes": ()}, "axes names no axis (choose among step, "),
    ({"exponents": "maybe"}, "exponents: input should be a valid boolean"),
])
def test_a_bad_option_is_one_line_naming_the_option(options, message):
    with pytest.raises(OptionError) as exc:
        AnalysisSpec.of(**options)
    assert str(exc.value).startswith(message) and "--" not in str(exc.value)
    assert exc.value.for_flag("--" + exc.value.option) == "--" + str(exc.value)


@pytest.mark.parametrize(("flags", "message"), [
    (("--fraction", "1.5"), "--fraction must lie strictly between 0 and 1 (got 1.5)"),
    (("--rope", "-1"), "--rope must be a positive number (got -1.0)"),
    (("--tolerance", "0"), "--tolerance must be a positive number (got 0.0)"),
    (("--axes", "T_sgd,T_bogus"), "--axes names an unknown axis 'T_bogus'"),
    (("--axes", ","), "--axes names no axis"),
    (("--memory", "angular"), "'--memory'"),
])
def test_a_bad_collapse_option_is_one_line_naming_the_flag(tmp_path: Path, flags, message):
    """Checked by the spec before the cube is read: the cube need not exist."""
    assert_user_error(invoke("collapse", tmp_path / "absent.nc", "--out", tmp_path / "o", *flags), message)


def test_the_collapse_options_reach_the_test_through_the_spec():
    from initmem.analysis.collapse import collapse_view

    spec = AnalysisSpec.of(fraction=0.3, axes=["T_sgd"], exponents=False)
    assert spec.axes == ("T_sgd",) and (spec.rope, spec.tolerance) == (None, None)
    with pytest.raises(OptionError, match="^fraction must lie"):
        collapse_view(None, spec, fraction=2.0)  # type: ignore[arg-type]  # refused before the data are read


def test_defaults_and_replacing_fields():
    spec = AnalysisSpec.of(delta=0.02, gate="all")
    assert (spec.delta, spec.gate, spec.sampler, spec.chains, spec.memory, spec.n_boot) == (0.02, "all", "nutpie", 4,
                                                                                          "radial", 200)
    again = AnalysisSpec.of(spec, chains=2)
    assert again.chains == 2 and again.delta == 0.02 and spec.chains == 4  # frozen: a new spec
    assert AnalysisSpec.of(**again.options()) == again


def test_analyze_validates_before_reading_the_cube(tmp_path: Path):
    from initmem.analysis import analyze_cube

    with pytest.raises(OptionError, match="^delta must be a positive number"):
        analyze_cube(tmp_path / "absent.nc", tmp_path / "out", delta=0.0)
    with pytest.raises(UserError, match="no such cube file"):  # a valid spec reaches the cube
        analyze_cube(tmp_path / "absent.nc", tmp_path / "out", AnalysisSpec.of(delta=0.01))


def test_the_command_line_names_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from initmem.cli import params as cli
    from initmem.collect.execution import runner

    assert cli.option_flag("pack_size") == "--pack-size"
    err = OptionError("n_sim", "{option} must be at least 10")
    assert err.for_flag(cli.option_flag(err.option)) == "--n-sim must be at least 10"

    def refuse(*args, **kwargs):  # a library error naming an option, as collect raises it
        raise OptionError("checkpoint_minutes", "{option} must be positive (got 0)")

    monkeypatch.setattr(runner, "collect", refuse)
    (tmp_path / "g.yaml").write_text("name: g\n")
    assert_user_error(invoke("collect", tmp_path / "g.yaml", "--out", tmp_path / "o"),
                      "initmem: error: --checkpoint-minutes must be positive (got 0)")


def test_the_package_root_is_a_small_public_api():
    import initmem

    for name in ("open_cube", "analyze", "report", "AnalysisSpec", "load_grid", "simulate_cube"):
        assert name in initmem.__all__ and callable(getattr(initmem, name)), name


def test_run_checks_the_analysis_options_before_it_trains(tmp_path: Path):
    assert_user_error(invoke("run", "--preset", "quick", "--chains", "1", "--out", tmp_path / "run"),
                      "--chains must be at least 2 (got 1)")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("options", "message"), [
    ({"delta": "0.02"}, "delta must be a number, not the string '0.02'; pass delta=0.02"),
    ({"chains": "4"}, "chains must be a number, not the string '4'; pass chains=4"),
    ({"delta": "2pt"}, "delta must be a number, not the string '2pt'"),
    ({"draws": True}, "draws must be a number, not True"),
    ({"chain": 2}, "chain is not an analysis option; did you mean chains?"),
    ({"deltta": 0.02}, "deltta is not an analysis option; did you mean delta?"),
    ({"zzz": 1}, "zzz is not an analysis option"),
])
def test_a_wrong_type_or_a_misspelt_keyword_is_one_line_before_the_cube_is_read(tmp_path: Path, options, message):
    """A string is never read as a number (``"0.02"`` might have been meant as points), and a misspelt keyword
    names the option it resembles; both before anything is opened, so the cube need not exist."""
    import initmem

    with pytest.raises(OptionError) as exc:
        initmem.analyze(tmp_path / "absent.nc", tmp_path / "out", **options)
    assert str(exc.value) == message and "\n" not in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_every_analysis_option_is_described():
    """The descriptions are the attribute docstrings: help(), pydantic's schema and the API page show them."""
    for name, field in AnalysisSpec.model_fields.items():
        assert field.description and len(field.description) > 15, name
    assert AnalysisSpec.model_json_schema()["properties"]["delta"]["description"].startswith("The smallest spread")

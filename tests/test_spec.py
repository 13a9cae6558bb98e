"""AnalysisSpec: every analysis option validated once, errors that name the option, and the command
line that names the flag instead; the public API of the package root."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from initmem.errors import OptionError, UserError
from initmem.spec import AnalysisSpec

from .conftest import assert_user_error, invoke


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
])
def test_a_bad_option_is_one_line_naming_the_option(options, message):
    with pytest.raises(OptionError) as exc:
        AnalysisSpec.of(**options)
    assert str(exc.value) == message and "--" not in str(exc.value)
    assert exc.value.for_flag("--" + exc.value.option) == "--" + message


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
    from initmem import cli
    from initmem.collect.run import runner

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

"""initmem's version, in a module of its own: what a cube or a fit records as its provenance.

Everything that stamps a version imports it from here, never from the package root, so no module climbs to the
root façade (which imports the whole public API lazily) to read one string.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _checkout_version() -> str:
    """The version in pyproject.toml, for a checkout put on the path without being installed (a GPU machine
    that runs ``benchmarks/gpu_checks.sh``, say)."""
    import tomllib
    from pathlib import Path

    with open(Path(__file__).with_name("pyproject.toml"), "rb") as f:
        return str(tomllib.load(f)["project"]["version"])


try:
    __version__ = version("initmem")
except PackageNotFoundError:
    __version__ = _checkout_version()

"""Lazily imported public names for the package ``__init__`` modules.

A package exports its public face without importing it: ``import initmem.schedule`` must not
import torch through ``initmem.collect``'s ``__init__``, nor ``import initmem`` PyMC.

A renamed public name keeps working for one release: listed in ``deprecated`` with its new name, it still
resolves, with a :class:`DeprecationWarning` that names the replacement on every use (it is never cached, so
each caller hears it), and ``dir()`` no longer lists it.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any, NamedTuple


class Deprecated(NamedTuple):
    """A public name renamed: where the old object lives, and what to use instead."""

    module: str
    attr: str
    use: str        # the new name as the user writes it, e.g. "initmem.collect_cube"
    removal: str    # the release that removes the old name, e.g. "0.3"


def lazy_getattr(package: str, api: dict[str, tuple[str, str]],
                 deprecated: Mapping[str, Deprecated] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``api[name] = (module, attribute)`` on first use, and resolves the
    ``deprecated`` names with a warning."""
    old = dict(deprecated or {})

    def __getattr__(name: str) -> Any:
        if name in old:
            d = old[name]
            warnings.warn(f"{package}.{name} is deprecated and will be removed in initmem {d.removal}; "
                          f"use {d.use}", DeprecationWarning, stacklevel=2)
            return getattr(import_module(d.module), d.attr)
        if name not in api:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = api[name]
        value = getattr(import_module(module), attr)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def lazy_dir(package: str, api: dict[str, tuple[str, str]]) -> Callable[[], list[str]]:
    """A module ``__dir__`` that lists the lazy names beside those already imported (completion in a shell)."""

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(api))

    return __dir__

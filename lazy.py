"""Lazily imported public names for the package ``__init__`` modules.

A package exports its public face without importing it: ``import initmem.schedule`` must not
import torch through ``initmem.collect``'s ``__init__``, nor ``import initmem`` PyMC.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, api: dict[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``api[name] = (module, attribute)`` on first use."""

    def __getattr__(name: str) -> Any:
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

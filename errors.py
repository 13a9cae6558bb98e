"""One exception type for bad user input.

Anything the user can fix (a bad flag, a malformed table, an invalid grid file) raises
``UserError``. The command line turns it into ``initmem: error: ...`` and exit status 2;
every other exception is an internal fault (exit status 1). Messages name options, never flags
(:func:`option`); the command line turns them into flags.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

_Options = TypeVar("_Options", bound="BaseModel")


class UserError(Exception):
    """Bad input that the user can fix; the message is one line that says what to fix."""


class OptionError(UserError):
    """A bad value of a named option (an analysis option, say).

    The library's message names the option (``delta must be a positive number``); the command line
    names its flag instead (``--delta must be ...``) through :meth:`for_flag`, so library code never
    spells a flag. ``template`` holds ``{option}`` where the name goes.
    """

    def __init__(self, option: str, template: str):
        self.option, self.template = option, template
        super().__init__(template.replace("{option}", option))

    def for_flag(self, flag: str) -> str:
        return self.template.replace("{option}", flag)


# The words a refusal of a value of the wrong kind uses, by pydantic's error type.
_TYPE_WORDS = {"bool_type": "true or false", "int_type": "a whole number", "float_type": "a number",
               "string_type": "a string", "dict_type": "a mapping"}


def validation_option_error(err: Mapping[str, Any], *, fields: Iterable[str], what: str, default: str) -> OptionError:
    """One pydantic validation error of an options record (``AnalysisSpec``, ``CollectOptions``) as one line
    naming the option: a misspelt one suggests the field it resembles, a wrong kind or a bound says what is due.

    ``what`` names the records' options in a refusal ("an analysis option"); ``default`` is the option a check
    across fields (which pydantic reports without a location) is named by."""
    name = str((err.get("loc") or (default,))[0])
    etype, got, ctx = str(err.get("type", "")), err.get("input"), err.get("ctx") or {}
    if etype == "extra_forbidden":
        close = difflib.get_close_matches(name, list(fields), n=1)
        return OptionError(name, f"{{option}} is not {what}" + (f"; did you mean {close[0]}?" if close else ""))
    if etype == "literal_error":
        allowed = str(ctx.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return OptionError(name, f"{{option}} must be one of {allowed} (got {got!r})")
    if etype == "value_error":
        return OptionError(name, f"{{option}} {ctx.get('error', err.get('msg', ''))}")
    if etype in ("greater_than_equal", "greater_than"):
        return OptionError(name, f"{{option}} must be at least {ctx.get('ge', ctx.get('gt'))} (got {got!r})")
    if etype in _TYPE_WORDS:
        return OptionError(name, f"{{option}} must be {_TYPE_WORDS[etype]}, not {type(got).__name__} (got {got!r})")
    msg = str(err.get("msg", "invalid value"))
    return OptionError(name, f"{{option}}: {msg[0].lower() + msg[1:]} (got {got!r})")


def validated_options(record: type[_Options], base: Mapping[str, Any] | None, changes: Mapping[str, Any], *,
                      what: str, default: str) -> _Options:
    """``base`` (an options record's fields, or None) with ``changes`` replaced, validated into ``record``
    (``AnalysisSpec``, ``CollectOptions``): the one way either is built, so a refusal reads the same from both, one
    line naming the option (:func:`validation_option_error`, with ``what`` and ``default`` as there)."""
    from pydantic import ValidationError  # pydantic only where an options record is built

    try:
        return record.model_validate({**(base or {}), **changes})
    except ValidationError as exc:
        raise validation_option_error(exc.errors()[0], fields=record.model_fields, what=what,
                                      default=default) from None


# Naming an option inside a message ----------------------------------------------------------------
# Library code never spells a command-line flag: a hint such as "rerun with --resume" is written
# ``f"rerun with {option('resume', True)}"``. The command line renders options as flags for the
# length of one command (``options_as_flags``, with its own option -> flag map); any other caller
# reads the keyword it would pass (``resume=True``).

_FLAG_OF: ContextVar[Callable[[str], str] | None] = ContextVar("initmem_flag_of", default=None)


def option(name: str, value: object = None) -> str:
    """``name`` (with ``value``, if any) as the reader passes it: ``--pack-size 4`` under the command
    line, ``pack_size=4`` from Python; ``value=True`` marks an on/off flag (``--resume`` /
    ``resume=True``)."""
    flag_of = _FLAG_OF.get()
    if flag_of is not None:
        flag = flag_of(name)
        return flag if value is None or value is True else f"{flag} {value}"
    return name if value is None else f"{name}={value!r}"


@contextmanager
def options_as_flags(flag_of: Callable[[str], str]) -> Iterator[None]:
    """Within the block, :func:`option` renders an option as ``flag_of(name)`` (the command line)."""
    token = _FLAG_OF.set(flag_of)
    try:
        yield
    finally:
        _FLAG_OF.reset(token)

"""Reading a grid file: the packaged presets, YAML parsing, and pydantic errors turned into one line.

This module turns a file, a preset name or a parsed mapping into a valid
:class:`~initmem.grid.schema.Grid` (clock budgets still unresolved: the collector resolves them, knowing
the training set's size), or one ``UserError`` line that names the field: ``grid file quick.yaml:
pipelines.adam.optimizer: must be one of sgd, adam, adamw (got 'adamm')``.
"""

from __future__ import annotations

import hashlib
import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from initmem.errors import UserError
from initmem.grid.schema import ENGINE_TAG, USER_TAG, Grid

PRESETS = ("quick", "digits", "paper", "clocks", "arms", "atlas", "crossed")


def resolve_preset(name_or_path: str | Path) -> Path:
    """'quick' / 'paper' / 'arms' -> the packaged configs/*.yaml; anything else is taken as a path."""
    if str(name_or_path) in PRESETS:
        ref = resources.files("initmem").joinpath("configs", f"{name_or_path}.yaml")
        return Path(str(ref))
    path = Path(name_or_path)
    if not path.exists():
        raise UserError(f"no such grid file: {path} (presets: {', '.join(PRESETS)})")
    return path


def _field_path(loc: tuple[Any, ...]) -> str:
    # pydantic's own steps in a location (validators, the tags of the two pipeline kinds) are no keys of the file
    skip = ("function-after", "function-before", ENGINE_TAG, USER_TAG)
    parts = [str(p) for p in loc if not (isinstance(p, str) and p in skip)]
    return ".".join(parts) if parts else "(top level)"


def _one_line(err: dict[str, Any]) -> str:
    loc = err.get("loc", ())
    etype = err.get("type", "")
    ctx = err.get("ctx") or {}
    got = err.get("input")
    path = _field_path(loc)
    if etype == "extra_forbidden":
        return f"{path}: unknown key (remove it or check its spelling)"
    if etype == "missing":
        return f"{path}: required field is missing"
    if etype == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        return f"{path}: must be one of {', '.join(allowed)} (got {got!r})"
    if etype == "value_error":
        msg = str(ctx.get("error", err.get("msg", "")))
        # A model-level validator names its own field at the start of the message ("warmup_epochs: ..."):
        # below the top level that field sits under the model's own key (pipelines.sgd.warmup_epochs).
        if re.match(r"^[A-Za-z0-9_.-]+: ", msg):
            return f"{path}.{msg}" if loc else msg
        return f"{path}: {msg}"
    msg = err.get("msg", "invalid value")
    return f"{path}: {msg[0].lower() + msg[1:] if msg else msg} (got {got!r})"


class DuplicateKeyError(yaml.YAMLError):
    """A mapping that gives one key twice (YAML itself keeps the last one silently)."""

    def __init__(self, path: str, line: int, first_line: int):
        self.path, self.line, self.first_line = path, line, first_line
        super().__init__(f"{path}: duplicate key at line {line} (first given at line {first_line}); give each key once")


class GridLoader(yaml.SafeLoader):
    """``yaml.safe_load``'s loader (safe tags only) that refuses duplicate mapping keys.

    ``yaml.load(text, Loader=GridLoader)`` composes the document, walks its mappings (naming each key by
    its path, e.g. ``pipelines.sgd``) and raises :class:`DuplicateKeyError` at the first key given twice;
    keys brought in by a merge (``<<: *base``) may still be overridden, as YAML intends.
    """

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        self._check_unique_keys(node, "", set())
        return self.construct_document(node)

    def _check_unique_keys(self, node: yaml.Node, path: str, seen: set[int]) -> None:
        if id(node) in seen:  # an alias of a node already walked (or a recursive one)
            return
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self._check_unique_keys(value_node, path, seen)
                    continue
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                sub = f"{path}.{name}" if path else str(name)
                if isinstance(key_node, yaml.ScalarNode):
                    key = self.construct_object(key_node)
                    line = key_node.start_mark.line + 1
                    try:
                        if key in first:
                            raise DuplicateKeyError(sub, line, first[key])
                        first[key] = line
                    except TypeError:  # an unhashable key: YAML's own constructor refuses it
                        pass
                self._check_unique_keys(value_node, sub, seen)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._check_unique_keys(item, f"{path}.{i}" if path else str(i), seen)


def parse_grid(data: Any, *, source: str = "grid") -> Grid:
    """Validate a parsed grid mapping; raise ``UserError`` with one line naming the field."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: the grid file must be a YAML mapping, got {type(data).__name__}")
    try:
        grid = Grid.model_validate(data)
    except ValidationError as exc:
        errs = exc.errors()
        first = _one_line(errs[0])
        more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
        raise UserError(f"{source}: {first}{more}".replace("\n", " ")) from None
    return grid


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid file (a preset name such as ``"quick"`` or ``"paper"`` works too).

    Parameters
    ----------
    path : str or pathlib.Path
        A grid YAML file (docs/collect.md) or a preset's name.

    Returns
    -------
    Grid
        The validated grid; ``grid_hash(grid)`` identifies it. Its ``base_dir`` is the file's folder (None for
        a preset), from which user-code pipelines take a relative ``workdir``.

    Raises
    ------
    UserError
        The file cannot be read, is not YAML, or fails validation (one line naming the field).

    Examples
    --------
    >>> import initmem
    >>> grid = initmem.load_grid("quick")
    >>> grid.name, len(grid.pipelines)
    ('quick', 7)
    >>> initmem.load_grid("configs/none.yaml")
    Traceback (most recent call last):
    initmem.errors.UserError: no such grid file: configs/none.yaml ...
    """
    preset = str(path) in PRESETS
    path = resolve_preset(path)
    source = f"grid file {path.name}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot read grid file {path}: {exc.strerror}") from None
    try:
        data = yaml.load(text, Loader=GridLoader)  # GridLoader is a SafeLoader: safe tags only
    except DuplicateKeyError as exc:
        raise UserError(f"{source}: {exc}".replace("\n", " ")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{source}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    grid = parse_grid(data, source=source)
    # a grid file's relative paths (a user pipeline's workdir) are its folder's; a packaged preset has none
    return grid if preset else grid.read_from(str(path.resolve().parent))


def grid_hash(grid: Grid) -> str:
    """sha256 of the canonical YAML form."""
    return hashlib.sha256(grid.to_yaml().encode("utf-8")).hexdigest()

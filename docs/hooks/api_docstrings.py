"""A Griffe extension for the API page (docs/reference/api.md): the docstrings as a reader of the site needs them.

The docstrings are written for ``help()`` and an editor as much as for the site, so they keep their plain forms,
and this extension turns them into the site's forms when mkdocstrings loads the package:

- a Sphinx role (``:class:`AnalysisSpec```, ``:func:`~initmem.analyze```) becomes a cross-reference, resolved
  in the scope of the object whose docstring holds it: a link where the target is on the site, its name in code
  where it is not (an internal helper);
- a documentation path (``docs/crossed.md``) becomes a link to that page, which ``docs/hooks/pages.py`` points
  at the built page (a page that does not exist fails the strict build);
- a pydantic model shows its fields as fields: each with its description (the attribute's docstring) and its
  default value with its bounds, without ``model_config`` or the ``Field(...)`` call that sets them.
"""

from __future__ import annotations

import html
import importlib
import re
from collections.abc import Iterator
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(?P<short>~?)\.?(?P<target>[\w.]+)`")
# docs/x.md, bare or in double backquotes, not already inside a Markdown link or a longer path.
DOC_PATH = re.compile(r"(?<![\w/.\[])(?<!\]\()(?P<tick>``)?docs/(?P<page>[\w-]+(?:/[\w-]+)*\.md)(?P=tick)?(?![\w/])")
DOC_SCHEME = "initmem-docs:"   # the link target docs/hooks/pages.py resolves to the built page
BOUNDS = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}


def _walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


def _resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path of ``target`` as named in ``obj``'s docstring, or None when it names nothing known."""
    if target.split(".")[0] == obj.package.name:
        return target
    head, _, rest = target.partition(".")
    try:
        full = obj.resolve(head)
    except (griffe.NameResolutionError, griffe.AliasResolutionError):
        return None
    return f"{full}.{rest}" if rest else full


def cross_references(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role as an autorefs cross-reference (optional: a target that is not on the site
    shows as its name in code) and every docs/ path as a link."""

    def role(m: re.Match[str]) -> str:
        target = m["target"]
        shown = target.rsplit(".", 1)[-1] if m["short"] else target
        full = _resolve(obj, target)
        code = f"<code>{html.escape(shown)}</code>"
        return f'<autoref identifier="{full}" optional>{code}</autoref>' if full else code

    def page(m: re.Match[str]) -> str:
        shown = f"`docs/{m['page']}`" if m["tick"] else f"docs/{m['page']}"
        return f"[{shown}]({DOC_SCHEME}{m['page']})"

    return DOC_PATH.sub(page, ROLE.sub(role, text))


def _is_pydantic_model(cls: griffe.Class) -> bool:
    for base in cls.bases:
        path = getattr(base, "canonical_path", str(base))
        if path == "pydantic.BaseModel":
            return True
        try:
            parent = cls.modules_collection[path]
        except (KeyError, griffe.AliasResolutionError):
            continue
        if isinstance(parent, griffe.Class) and _is_pydantic_model(parent):
            return True
    return False


def _bounds(metadata: list[Any]) -> str:
    said = [f"{sign} {getattr(m, name)}" for m in metadata for name, sign in BOUNDS.items() if hasattr(m, name)]
    return f"Must be {' and '.join(said)}." if said else ""


def pydantic_fields(cls: griffe.Class) -> None:
    """Show a pydantic model's fields as fields: the description, the default and its bounds, no internals."""
    model = getattr(importlib.import_module(cls.module.path), cls.name, None)
    fields = getattr(model, "model_fields", {})
    if "model_config" in cls.members:
        del cls.members["model_config"]
    for name, field in fields.items():
        attr = cls.members.get(name)
        if not isinstance(attr, griffe.Attribute):
            continue
        attr.labels = {"field"}
        if not field.is_required():
            attr.value = repr(field.default)
        text = " ".join(part for part in (field.description or "", _bounds(field.metadata)) if part)
        if text:
            attr.docstring = griffe.Docstring(text, parent=attr)


class ApiDocstrings(griffe.Extension):
    """Cross-references, documentation links and pydantic fields for the API page (the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **_kwargs: Any) -> None:
        for obj in _walk(pkg):
            if isinstance(obj, griffe.Class) and _is_pydantic_model(obj):
                pydantic_fields(obj)
            if obj.docstring is not None:
                obj.docstring.value = cross_references(obj, obj.docstring.value)

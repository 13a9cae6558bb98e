"""Matplotlib figures as inline SVG that is safe to paste into an HTML page.

Why a module of its own: an inline SVG shares the page's DOM, so (1) element ids must not collide
between figures (matplotlib derives clip-path ids from ``svg.hashsalt``, set per figure here),
(2) it must not reference anything outside the page (no fonts, images or stylesheets to load),
and (3) text drawn from user strings (pipeline names) must stay text. Matplotlib escapes text in
SVG; :func:`figure_to_svg` checks the result anyway and refuses markup that could execute or load.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from markupsafe import Markup

from initmem.plot.core import description
from initmem.plot.theme import SCREEN

# Only markup is checked: text content is escaped, so '<' cannot appear in it.
_UNSAFE = re.compile(r"<\s*(script|foreignobject|iframe|object|embed|image|a)\b|<[^>]*\son[a-z]+\s*=",
                     re.IGNORECASE)
_EXTERNAL_REF = re.compile(r"""(?:xlink:)?href\s*=\s*["'](?!#)|url\(\s*["']?(?!#)|@import""", re.IGNORECASE)


class UnsafeSVG(RuntimeError):
    """Rendered SVG contained markup that could execute or load something (an internal fault)."""


@dataclass(frozen=True)
class Figure:
    """One rendered figure: inline SVG plus its caption and alt text (both plain text)."""

    key: str
    svg: Markup
    caption: str
    alt: str


def check_svg(svg: str) -> None:
    """Refuse SVG that could run script or load a resource from outside the page."""
    m = _UNSAFE.search(svg)
    if m:
        raise UnsafeSVG(f"figure SVG contains unsafe markup near {svg[max(0, m.start() - 40): m.end() + 40]!r}")
    m = _EXTERNAL_REF.search(svg)
    if m:
        raise UnsafeSVG(f"figure SVG references an outside resource near {svg[m.start(): m.end() + 60]!r}")


def embed(fig: plt.Figure) -> Figure:
    """A figure drawn by an :mod:`initmem.plot` function as the report shows it: inline SVG under its
    own key, caption and alt text (the ones the function attached)."""
    d = description(fig)
    return figure_to_svg(fig, d.key, d.caption, d.alt)


def figure_to_svg(fig: plt.Figure, key: str, caption: str, alt: str) -> Figure:
    """Render ``fig`` to an inline ``<svg>`` with a ``<title>`` (alt text) and close the figure."""
    buf = io.StringIO()
    try:
        with matplotlib.rc_context({**SCREEN, "svg.hashsalt": f"initmem-{key}"}):
            fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.04, metadata={"Date": None})
    finally:
        plt.close(fig)
    text = buf.getvalue()
    start = text.find("<svg")
    if start < 0:
        raise UnsafeSVG("matplotlib produced no <svg> element")
    text = text[start:]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.DOTALL)
    # Namespace declarations are names, not loads; keep only the SVG one (xlink is needed for <use>).
    check_svg(re.sub(r'xmlns(:xlink)?="http://www\.w3\.org/[^"]*"', "", text))
    # Every figure names its groups axes_1, patch_1, ...: prefix all ids and the references to them.
    prefix = f"{key}-"
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r'(href="#)([^"]+)"', lambda m: f'{m.group(1)}{prefix}{m.group(2)}"', text)
    text = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", text)
    title_id = f"fig-{key}-title"
    text = re.sub(
        r"<svg\b",
        f'<svg role="img" aria-labelledby="{title_id}" class="plot"',
        text,
        count=1,
    )
    close = text.find(">", text.find("<svg")) + 1
    text = text[:close] + f'<title id="{title_id}">{html.escape(alt)}</title>' + text[close:]
    return Figure(key=key, svg=Markup(text), caption=caption, alt=alt)


__all__ = ["Figure", "UnsafeSVG", "check_svg", "embed", "figure_to_svg"]

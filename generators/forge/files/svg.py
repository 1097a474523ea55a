"""SVG shapes as text, escaped and in a fixed attribute order (deterministic): what `forge draw`
and the bench chart (forge.bench.chart) draw with."""
from __future__ import annotations

from html import escape
from typing import Any

MARGIN = 20  # around every picture


def attrs(**attrs: Any) -> str:
    return " ".join(f'{k.rstrip("_").replace("_", "-")}="{escape(str(v), quote=True)}"' for k, v in attrs.items())


def rect(x: float, y: float, w: float, h: float, fill: str, **extra: Any) -> str:
    return f'<rect {attrs(x=x, y=y, width=w, height=h, fill=fill, **extra)}/>'


def text(x: float, y: float, text: str, size: int = 11, **extra: Any) -> str:
    return f'<text {attrs(x=x, y=y, font_size=size, **extra)}>{escape(text)}</text>'

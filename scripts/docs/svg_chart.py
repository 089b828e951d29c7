"""Small SVG charts for the documentation's figures (scripts/docs/figures.py draws them from real
runs; nothing here knows about hetrun).

Each figure is written twice, for the site's light and dark themes (`name.svg`, `name-dark.svg`;
the pages show one with Material's `#only-light` / `#only-dark`): the series colours are the
same in both, chosen to read on white and on Material's slate background; text, axes and grid
change. Backgrounds are transparent. Output is deterministic for the same input.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

# Colour-blind-safe hues that keep contrast on white and on #1e2129 (Material slate).
SERIES = ["#4e79a7", "#e8762b", "#59a14f", "#d64550", "#8c6bb1", "#3ba3a3", "#b8860b", "#8c8c8c"]


@dataclass(frozen=True)
class Theme:
    name: str
    text: str
    muted: str
    grid: str
    axis: str


LIGHT = Theme("light", text="#1f2328", muted="#57606a", grid="#d8dee4", axis="#8c959f")
DARK = Theme("dark", text="#e6edf3", muted="#adbac7", grid="#373e47", axis="#768390")
THEMES = (LIGHT, DARK)


def esc(text: str) -> str:
    return html.escape(str(text), quote=True)


@dataclass
class Canvas:
    """An SVG document; items are (z, text) so grids stay behind series."""

    width: int
    height: int
    theme: Theme
    title: str
    items: List[Tuple[int, str]] = field(default_factory=list)

    def add(self, text: str, z: int = 1) -> None:
        self.items.append((z, text))

    def text(self, x, y, s, size=12, anchor="start", color=None, weight="normal", z=3) -> None:
        color = color or self.theme.text
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
                 f'fill="{color}" font-weight="{weight}">{esc(s)}</text>', z)

    def line(self, x1, y1, x2, y2, color, width=1.0, dash: Optional[str] = None, z=1) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
                 f'stroke-width="{width}"{d}/>', z)

    def rect(self, x, y, w, h, fill, stroke=None, opacity=1.0, z=2, tip: str = "") -> None:
        s = f' stroke="{stroke}" stroke-width="1"' if stroke else ""
        t = f"<title>{esc(tip)}</title>" if tip else ""
        self.add(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
                 f'fill="{fill}" fill-opacity="{opacity}"{s}>{t}</rect>', z)

    def polyline(self, points, color, width=2.0, dash: Optional[str] = None, z=2) -> None:
        d = f' stroke-dasharray="{dash}"' if dash else ""
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}" '
                 f'stroke-linejoin="round"{d}/>', z)

    def circle(self, x, y, r, color, z=3) -> None:
        self.add(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{color}"/>', z)

    def svg(self) -> str:
        body = "\n".join(t for _, t in sorted(self.items, key=lambda it: it[0]))
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}" role="img" '
                f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">\n'
                f"<title>{esc(self.title)}</title>\n{body}\n</svg>\n")


def nice_ticks(lo: float, hi: float, count: int = 5) -> List[float]:
    """About `count` round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


@dataclass
class Axes:
    """A plot area inside a canvas, mapping data to pixels."""

    canvas: Canvas
    x0: float
    y0: float
    w: float
    h: float
    xlim: Tuple[float, float]
    ylim: Tuple[float, float]

    def px(self, x: float) -> float:
        lo, hi = self.xlim
        return self.x0 + (x - lo) / ((hi - lo) or 1.0) * self.w

    def py(self, y: float) -> float:
        lo, hi = self.ylim
        return self.y0 + self.h - (y - lo) / ((hi - lo) or 1.0) * self.h

    def frame(self, xlabel: str, ylabel: str, xticks: Sequence[float], yticks: Sequence[float],
              yfmt="{:g}", xfmt="{:g}") -> None:
        c, t = self.canvas, self.canvas.theme
        for y in yticks:
            c.line(self.x0, self.py(y), self.x0 + self.w, self.py(y), t.grid, z=0)
            c.text(self.x0 - 6, self.py(y) + 4, yfmt.format(y), size=11, anchor="end",
                   color=t.muted)
        for x in xticks:
            c.text(self.px(x), self.y0 + self.h + 16, xfmt.format(x), size=11, anchor="middle",
                   color=t.muted)
        c.line(self.x0, self.y0 + self.h, self.x0 + self.w, self.y0 + self.h, t.axis)
        c.line(self.x0, self.y0, self.x0, self.y0 + self.h, t.axis)
        c.text(self.x0 + self.w / 2, self.y0 + self.h + 34, xlabel, size=12, anchor="middle",
               color=t.muted)
        c.add(f'<text transform="translate({self.x0 - 44:.1f},{self.y0 + self.h / 2:.1f}) '
              f'rotate(-90)" font-size="12" text-anchor="middle" fill="{t.muted}">'
              f"{esc(ylabel)}</text>", 3)

    def series(self, xs, ys, color, label: str = "", dash=None, dots=False) -> None:
        pts = [(self.px(x), self.py(y)) for x, y in zip(xs, ys) if y is not None]
        if len(pts) > 1:
            self.canvas.polyline(pts, color, dash=dash)
        if dots or len(pts) == 1:
            for x, y in pts:
                self.canvas.circle(x, y, 2.5, color)


def legend(canvas: Canvas, x: float, y: float, entries, dash_of=None, per_row: int = 6) -> None:
    """entries: [(label, colour)], per_row to a row, each as wide as its label."""
    cx = x
    for i, (label, color) in enumerate(entries):
        if i and i % per_row == 0:
            cx, y = x, y + 18
        dash = dash_of.get(label) if dash_of else None
        canvas.line(cx, y - 4, cx + 18, y - 4, color, width=2.5, dash=dash, z=3)
        canvas.text(cx + 24, y, label, size=11, color=canvas.theme.muted)
        cx += 24 + 6.5 * len(label) + 22

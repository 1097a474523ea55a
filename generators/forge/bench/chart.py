"""`forge bench --svg FILE`: the bench table as a bar chart.

One row per benchmark: forge's seconds as a bar and bare `kustomize build` of the same fleet as a
thinner bar under it, on one time scale, labelled with the benchmark, both times and their ratio.
The shapes come from forge.files.svg (the same SVG helpers and deterministic text), and each row is a
`<g class="benchmark">` whose data- attributes carry the figures, so the chart can be checked
(and searched) as text. Only the measured numbers change from run to run.
"""
from __future__ import annotations

from html import escape

from forge.bench.pipeline import Result
from forge.files.svg import MARGIN, attrs as _attrs, rect as _rect, text as _text

LABEL_W, BAR_W, ROW_H = 330, 420, 34
FORGE_FILL, BARE_FILL = "#1565c0", "#9e9e9e"


def _width(seconds: float, scale: float) -> float:
    return max(round(seconds * scale, 2), 1.0)  # a bar of a few milliseconds stays visible


def _row(row, y: float, scale: float) -> list[str]:
    x = MARGIN + LABEL_W
    label = f"{row.seconds:.2f} s vs {row.baseline:.2f} s bare kustomize: ratio {row.ratio:.2f}"
    return [f'<g {_attrs(class_="benchmark", data_benchmark=row.benchmark, data_seconds=f"{row.seconds:.2f}", data_baseline=f"{row.baseline:.2f}", data_ratio=f"{row.ratio:.2f}")}>',
            f"<title>{escape(f'{row.benchmark}: {label}')}</title>",
            _text(MARGIN, y + 12, row.benchmark, 11, font_weight="bold"),
            _text(MARGIN, y + 26, label, 9, fill="#555", class_="ratio"),
            _rect(x, y + 2, _width(row.seconds, scale), 14, FORGE_FILL, class_="forge"),
            _rect(x, y + 18, _width(row.baseline, scale), 8, BARE_FILL, class_="bare-kustomize"),
            "</g>"]


def bench_svg(result: Result) -> str:
    """The SVG text of a bench result."""
    longest = max([max(r.seconds, r.baseline) for r in result.rows] + [1e-9])
    scale = BAR_W / longest
    top = MARGIN + 44
    body = [line for i, row in enumerate(result.rows) for line in _row(row, top + i * ROW_H, scale)]
    width, height = MARGIN * 2 + LABEL_W + BAR_W, top + len(result.rows) * ROW_H + MARGIN
    legend = (f"ratio {result.ratio:.2f}: shipped render+validate / bare kustomize (target at most 1.00). "
              "Blue: forge; grey: bare kustomize build, overlay after overlay")
    lines = [
        f'<svg xmlns="http://www.w3.org/2000/svg" {_attrs(width=width, height=height, viewBox=f"0 0 {width} {height}", font_family="sans-serif")}>',
        "<!-- Written by forge bench (its svg option): one run's measurements. -->",
        _text(MARGIN, MARGIN + 6, result.title, 15, font_weight="bold", class_="title"),
        _text(MARGIN, MARGIN + 24, legend, 10, fill="#555", class_="legend", data_ratio=f"{result.ratio:.2f}"),
        *body, "</svg>"]
    return "\n".join(lines) + "\n"

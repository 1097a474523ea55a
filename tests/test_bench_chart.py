"""`forge bench --svg`: the bench table as a chart (forge.bench.chart), checked as text: one group
per benchmark, labelled with it, both times and the ratio; bars on one scale; deterministic.
The renderer is fed a small result object: the bench itself takes minutes."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from forge.bench.pipeline import Result, Row
from forge.bench.chart import bench_svg

from tests.helpers import REPO, cli

SVG = "{http://www.w3.org/2000/svg}"
RESULT = Result([Row("shipped: render+validate", 3.0, 4.0), Row("synthetic 10x100: cold generate+render+validate", 12.5, 10.0),
                 Row("synthetic 10x100: forge diff of it", 0.8, 10.0)], ratio=0.75)


def test_each_benchmark_is_a_bar_labelled_with_its_times_and_ratio():
    svg = bench_svg(RESULT)
    root = ET.fromstring(svg)
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "benchmark"]
    assert [g.get("data-benchmark") for g in groups] == [r.benchmark for r in RESULT.rows]
    assert [g.get("data-ratio") for g in groups] == ["0.75", "1.25", "0.08"]
    for group, row in zip(groups, RESULT.rows):
        texts = ["".join(t.itertext()) for t in group.iter(f"{SVG}text")]
        assert texts == [row.benchmark, f"{row.seconds:.2f} s vs {row.baseline:.2f} s bare kustomize: ratio {row.ratio:.2f}"]
        bars = {r.get("class"): float(r.get("width")) for r in group.iter(f"{SVG}rect")}
        assert bars["forge"] / bars["bare-kustomize"] == pytest.approx(row.seconds / row.baseline, rel=1e-3)  # one time scale
    widest = max(float(r.get("width")) for r in root.iter(f"{SVG}rect"))
    assert widest == float(next(g for g in groups if g.get("data-ratio") == "1.25").find(f"{SVG}rect").get("width"))
    legend = next(t for t in root.iter(f"{SVG}text") if t.get("class") == "legend")
    assert legend.get("data-ratio") == "0.75" and legend.text.startswith("ratio 0.75: shipped render+validate")
    assert bench_svg(RESULT) == svg  # deterministic


def test_a_benchmark_name_is_escaped():
    svg = bench_svg(Result([Row('a <b> & "c"', 1.0, 2.0)], ratio=0.5))
    group = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "benchmark")
    assert group.get("data-benchmark") == 'a <b> & "c"'


def test_svg_into_a_missing_folder_is_refused_before_measuring(tmp_path):
    result = cli("bench", "--root", str(REPO), "--svg", str(tmp_path / "nowhere" / "bench.svg"))
    assert result.exit_code == 2 and "give --svg a path in an existing folder" in result.output
    assert "[shipped]" not in result.output

"""Helpers of the network fabric tests: the real inventories, inventory edits with line numbers,
the upstream chart data."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.charts import chart_pins
from forge.errors import InventoryError
from forge.fleet import load_plan, load_plan_text
from forge.model import ClusterModel
from tests.conftest import REPO

H200_FILE = "clusters/h200/inventory.yaml"
A100_FILE = "clusters/a100/inventory.yaml"


def model_of(file: str) -> ClusterModel:
    return load_plan(REPO / file, file).cluster


def h200_text() -> str:
    return (REPO / H200_FILE).read_text()


def edit(text: str, old: str, new: str) -> str:
    """Replace one exact, unique piece of the inventory text (so a test edits what it means to)."""
    assert text.count(old) == 1, f"expected exactly one {old!r} in the inventory"
    return text.replace(old, new)


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the one line holding needle."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


def problems_of(text: str, file: str = H200_FILE) -> list[str]:
    """Every problem the loader reports for this inventory text, as `file:line: path: message`."""
    with pytest.raises(InventoryError) as caught:
        load_plan_text(text, file)
    return [str(p) for p in caught.value.problems]


def chart_data(upstream: Path, key: str) -> Path:
    """The upstream data folder of a pinned chart; FORGE_UPSTREAM set but lacking it fails."""
    folder = upstream / chart_pins(REPO)[key].data_dir_name
    assert folder.is_dir(), f"FORGE_UPSTREAM has no {folder.name}/ for the pinned {key} chart"
    return folder

"""Helpers of the network fabric tests: the real inventories, inventory edits with line numbers,
a scratch copy of the repo, the upstream chart data. (A module name of its own: other test areas
have a conftest.py too, and `from conftest import` would pick whichever was imported first.)"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from forge.charts import chart_pins
from forge.errors import InventoryError
from forge.inventory import load_inventory, load_inventory_text
from forge.model import ClusterModel, derive

REPO = Path(__file__).resolve().parents[2]
H200_FILE = "clusters/h200/inventory.yaml"
A100_FILE = "clusters/a100/inventory.yaml"


def model_of(file: str) -> ClusterModel:
    return derive(load_inventory(REPO / file, file))


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
        load_inventory_text(text, file)
    return [str(p) for p in caught.value.problems]


def scratch_repo(tmp_path: Path, clusters: dict[str, str]) -> Path:
    """A repository copy holding what build_tree reads: the given inventories (name -> text), the
    hand-written bases and the chart pins."""
    for name, text in clusters.items():
        (tmp_path / "clusters" / name).mkdir(parents=True)
        (tmp_path / "clusters" / name / "inventory.yaml").write_text(text)
    shutil.copytree(REPO / "base", tmp_path / "base")
    shutil.copytree(REPO / "charts", tmp_path / "charts")
    return tmp_path


def chart_data(upstream: Path, key: str) -> Path:
    """The upstream data folder of a pinned chart; FORGE_UPSTREAM set but lacking it fails."""
    folder = upstream / chart_pins(REPO)[key].data_dir_name
    assert folder.is_dir(), f"FORGE_UPSTREAM has no {folder.name}/ for the pinned {key} chart"
    return folder

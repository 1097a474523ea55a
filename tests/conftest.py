"""Shared test helpers. Tests work in their own temp folders and never chdir."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED_CLUSTERS = ("a100", "h200")
# Example inventories that are not shipped fleets (never under clusters/, so Argo CD never syncs
# them): tests/fixtures/<cluster>/inventory.yaml, copied into a scratch repository to run on.
FIXTURES = REPO / "tests" / "fixtures"


def fixture_file(cluster: str) -> Path:
    return FIXTURES / cluster / "inventory.yaml"


def add_fixture_cluster(root: Path, cluster: str) -> Path:
    """Put a fixture inventory at clusters/<cluster>/ of a scratch repository (see copy_repo_inputs)."""
    target = root / "clusters" / cluster / "inventory.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(fixture_file(cluster), target)
    return target


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="Regenerate golden trees (the committed generated tree) instead of comparing; review the git diff after.")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


def copy_repo_inputs(dest: Path) -> Path:
    """The hand-written inputs of generation (inventories, bases, chart pins) in a fresh folder."""
    for cluster in sorted((REPO / "clusters").glob("*/inventory.yaml")):
        target = dest / cluster.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(cluster, target)
    shutil.copytree(REPO / "base", dest / "base")
    shutil.copytree(REPO / "charts", dest / "charts")
    return dest


@pytest.fixture
def repo_inputs(tmp_path: Path) -> Path:
    return copy_repo_inputs(tmp_path / "repo")


def inventory_text(cluster: str) -> str:
    return (REPO / "clusters" / cluster / "inventory.yaml").read_text()


@pytest.fixture
def upstream_dir() -> Path:
    value = os.environ.get("FORGE_UPSTREAM")
    if not value or not Path(value).is_dir():
        pytest.skip("FORGE_UPSTREAM is not set to the upstream chart data folder (CI sets it to ../shared/upstream)")
    return Path(value)

"""Shared fixtures: the real inventories' cluster models, the repo's tools, upstream chart data."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from forge.fleet import load_fleet

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def clusters():
    return {c.name: c for c in load_fleet(REPO).clusters}


@pytest.fixture(scope="session")
def promtool() -> str:
    """tools/bin/promtool (make setup links it), else one on PATH. Missing is a failure, not a skip:
    the rule tests are the only check that the alerts fire."""
    for cand in (REPO / "tools" / "bin" / "promtool", shutil.which("promtool")):
        if cand and Path(cand).exists():
            return str(cand)
    pytest.fail("promtool not found: run `make setup` (installs Debian's prometheus package, which ships it)")


@pytest.fixture(scope="session")
def upstream() -> Path:
    root = os.environ.get("FORGE_UPSTREAM")
    if not root:
        pytest.skip("FORGE_UPSTREAM is not set: upstream chart values, schemas and CRDs are needed")
    return Path(root)

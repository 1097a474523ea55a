"""Fixtures of the observability tests: promtool (the shared ones, such as clusters and upstream,
are in tests/conftest.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO


@pytest.fixture(scope="session")
def promtool() -> str:
    """tools/bin/promtool (make setup links it), else one on PATH. Missing is a failure, not a skip:
    the rule tests are the only check that the alerts fire."""
    for cand in (REPO / "tools" / "bin" / "promtool", shutil.which("promtool")):
        if cand and Path(cand).exists():
            return str(cand)
    pytest.fail("promtool not found: run `make setup` (installs Debian's prometheus package, which ships it)")


@pytest.fixture(scope="session")
def amtool() -> str:
    """tools/bin/amtool (make setup links it), else one on PATH: the check of the generated
    Alertmanager configuration. Missing is a failure, like promtool."""
    for cand in (REPO / "tools" / "bin" / "amtool", shutil.which("amtool")):
        if cand and Path(cand).exists():
            return str(cand)
    pytest.fail("amtool not found: run `make setup` (installs Debian's prometheus-alertmanager package, which ships it)")

"""Fixtures every test folder shares (plain helpers are in tests/helpers.py). Tests work in their
own temp folders and never chdir."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from forge.fleet import load_fleet
from tests.helpers import REPO, copy_repo_inputs, git_repo_copy, kustomize_or_skip


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="Regenerate golden trees (the committed generated tree) instead of comparing; review the git diff after.")


@pytest.fixture
def update_golden(request) -> bool:
    return request.config.getoption("--update-golden")


@pytest.fixture
def repo_inputs(tmp_path: Path) -> Path:
    return copy_repo_inputs(tmp_path / "repo")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """This repo's files (tracked and untracked, not ignored), generated, committed once."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    return git_repo_copy(tmp_path / "repo")


@pytest.fixture
def kustomize() -> list[str]:
    return kustomize_or_skip()


@pytest.fixture(scope="session")
def clusters():
    """The real inventories' cluster models, by name."""
    return {c.name: c for c in load_fleet(REPO).clusters}


@pytest.fixture(scope="session")
def upstream() -> Path:
    """The read-only upstream chart data (never copied into the repo), from FORGE_UPSTREAM."""
    value = os.environ.get("FORGE_UPSTREAM")
    if not value or not Path(value).is_dir():
        pytest.skip("FORGE_UPSTREAM is not set to the upstream chart data folder (CI sets it to ../shared/upstream)")
    return Path(value)

"""Fixtures of the network fabric tests (helpers live in network_helpers.py; the repo-wide ones,
such as upstream_dir and repo_inputs, in tests/conftest.py)."""
from __future__ import annotations

import pytest

from forge.generate import build_tree
from forge.model import ClusterModel
from tests.network.network_helpers import A100_FILE, H200_FILE, REPO, model_of


@pytest.fixture(scope="session")
def h200() -> ClusterModel:
    return model_of(H200_FILE)


@pytest.fixture(scope="session")
def a100() -> ClusterModel:
    return model_of(A100_FILE)


@pytest.fixture(scope="session")
def tree():
    """The generated tree of the real repository (pure: nothing is written)."""
    return build_tree(REPO)

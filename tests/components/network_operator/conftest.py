"""Fixtures of the network fabric tests (helpers live in tests/helpers.py; the repo-wide fixtures,
such as upstream and repo_inputs, in tests/conftest.py)."""
from __future__ import annotations

import pytest

from forge.generate.tree import build_tree
from forge.model.cluster import ClusterModel
from tests.helpers import REPO, model


@pytest.fixture(scope="session")
def h200() -> ClusterModel:
    return model("h200")


@pytest.fixture(scope="session")
def a100() -> ClusterModel:
    return model("a100")


@pytest.fixture(scope="session")
def tree():
    """The generated tree of the real repository (pure: nothing is written)."""
    return build_tree(REPO)

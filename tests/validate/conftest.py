"""Shared fixtures for the validator tests."""
from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

@pytest.fixture(scope="session")
def kube():
    from forge.validate.kube import KubeSchemas

    return KubeSchemas("1.34")


@pytest.fixture(scope="session")
def upstream() -> Path:
    """The read-only upstream chart data (never copied into the repo), from FORGE_UPSTREAM."""
    root = os.environ.get("FORGE_UPSTREAM")
    if not root or not Path(root).is_dir():
        pytest.skip("FORGE_UPSTREAM is not set to the upstream chart data folder")
    return Path(root)


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "apps", "labels": {"app.kubernetes.io/managed-by": "forge"}},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                "containers": [
                    {
                        "name": "web",
                        "image": "nginx:1.27.1",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}},
                    }
                ],
            },
        },
    },
}


@pytest.fixture
def deployment() -> dict:
    return copy.deepcopy(DEPLOYMENT)

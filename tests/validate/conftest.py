"""Fixtures of the validator tests (upstream is in tests/conftest.py)."""
from __future__ import annotations

import copy

import pytest

@pytest.fixture(scope="session")
def kube():
    from forge.validate.kube import KubeSchemas

    return KubeSchemas("1.34")


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

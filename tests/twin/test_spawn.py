"""A developer pod as JupyterHub's KubeSpawner makes it from forge's hub values (forge.twin.spawn),
judged without a box: the box's scenario developer-pod-two-spawns runs it on the API server."""
from __future__ import annotations

import pytest

from forge.fleet import load_fleet
from forge.twin.spawn import Spawner
from tests.helpers import REPO


@pytest.fixture(scope="module")
def h200():
    return next(p for p in load_fleet(REPO) if p.name == "h200")


def test_the_server_pod_is_what_kubespawner_makes_from_the_profile(h200):
    pvc, pod = Spawner(None, h200, "forge.exa.ai/twin-scenario").objects("research", "alice", "gpu", "s")
    assert pvc["metadata"]["name"] == "claim-alice" and pvc["metadata"]["namespace"] == "research-development"
    assert pvc["spec"]["storageClassName"] == "nfs-homes"
    assert pod["metadata"]["name"] == "jupyter-alice"
    labels = pod["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "default" and labels["component"] == "singleuser-server"
    assert labels["hub.jupyter.org/username"] == "alice"
    spec = pod["spec"]
    assert spec["priorityClassName"] == "interactive"
    notebook = spec["containers"][0]
    assert notebook["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert notebook["resources"]["requests"]["memory"] == str(32 * 1024 ** 3)  # ByteSpecification: G is 1024^3
    assert {"secretRef": {"name": "s3-credentials"}} in notebook["envFrom"]
    assert spec["volumes"] == [{"name": "volume-alice", "persistentVolumeClaim": {"claimName": "claim-alice"}}]


def test_no_server_gets_the_chart_s_privileged_init_container(h200):
    """The project namespaces admit no privileged container (forge's baseline fence): with the
    chart's default singleuser.cloudMetadata every spawn was refused."""
    _, pod = Spawner(None, h200, "forge.exa.ai/twin-scenario").objects("training", "bob", "cpu", "s")
    containers = pod["spec"].get("initContainers", []) + pod["spec"]["containers"]
    assert not any((c.get("securityContext") or {}).get("privileged") for c in containers), containers


def test_an_unknown_profile_or_project_is_named(h200):
    from forge.errors import ForgeError
    with pytest.raises(ForgeError, match="no profile 'a100'.*has: mig-1g-18gb, gpu, cpu"):
        Spawner(None, h200, "l").objects("research", "alice", "a100", "s")
    with pytest.raises(ForgeError, match="no JupyterHub for project 'nobody'"):
        Spawner(None, h200, "l").objects("nobody", "alice", "gpu", "s")

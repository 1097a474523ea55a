"""Issue 25, issue 30: a task the on-premises manager sends to the cloud reaches S3 at the cloud
cluster's own endpoint, with no admission mutation (EKS serves no MutatingAdmissionPolicy): Flyte
names no endpoint value, only the ConfigMap every project namespace of every cluster has, each
with its own cluster's endpoint. tests/twin/test_api_served.py has the box's API server store it."""
from __future__ import annotations

import pytest

from forge.components.flyte import Flyte, cloud_storage, storage_endpoint
from tests.helpers import generated, model

CLUSTERS = ("h200", "a100", "h200-burst")


def k8s_plugin(cluster: str) -> dict:
    import yaml

    values = generated(f"overlays/{cluster}/flyte/values.yaml")
    return yaml.safe_load(values["configuration"]["inline"]) if isinstance(values["configuration"]["inline"], str) \
        else values["configuration"]["inline"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_tasks_name_the_configmap_not_an_endpoint(cluster):
    k8s = k8s_plugin(cluster)["plugins"]["k8s"]
    assert k8s["default-env-from-configmaps"] == [cloud_storage.CONFIGMAP]
    assert cloud_storage.VARIABLE not in (k8s.get("default-env-vars") or {})  # a value would travel with the spec


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_project_namespace_has_its_own_clusters_endpoint(cluster):
    cm = model(cluster)
    found = {o["metadata"]["namespace"]: o for o in Flyte().manifests(cm)
             if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cloud_storage.CONFIGMAP}
    projects = {o["metadata"]["name"] for o in Flyte().manifests(cm) if o["kind"] == "Namespace"} - {"flyte"}
    assert projects and set(found) == projects
    assert {o["data"][cloud_storage.VARIABLE] for o in found.values()} == {storage_endpoint(cm)}


def test_the_manager_and_its_cloud_worker_resolve_the_same_spec_to_their_own_endpoints():
    assert storage_endpoint(model("h200")).startswith("http://alluxio")  # Alluxio's S3 proxy on premises
    assert storage_endpoint(model("h200-burst")) == "https://s3.us-west-2.amazonaws.com"  # S3 itself in the cloud
    assert k8s_plugin("h200")["plugins"]["k8s"]["default-env-from-configmaps"] == \
        k8s_plugin("h200-burst")["plugins"]["k8s"]["default-env-from-configmaps"]

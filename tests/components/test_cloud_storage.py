"""Issue 25: a task the on-premises manager sends to the cloud names the manager's storage endpoint
(Alluxio's S3 proxy); on a cloud cluster a MutatingAdmissionPolicy replaces it with the cluster's
own. Content here; tests/twin/test_admission_fences.py has the real API server apply it."""
from __future__ import annotations

from forge.components.flyte import Flyte, storage_endpoint
from forge.components.flyte.cloud_storage import POLICY
from tests.helpers import model


def policies(cluster: str) -> dict[str, dict]:
    return {o["kind"]: o for o in Flyte().manifests(model(cluster)) if o["metadata"]["name"] == POLICY}


def test_the_cloud_cluster_rewrites_the_endpoint_of_its_project_pods_to_its_own():
    burst = model("h200-burst")
    found = policies("h200-burst")
    assert set(found) == {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}
    endpoint = storage_endpoint(burst)
    assert endpoint == "https://s3.us-west-2.amazonaws.com"  # S3 itself: no Alluxio in the cloud
    expression = found["MutatingAdmissionPolicy"]["spec"]["mutations"][0]["applyConfiguration"]["expression"]
    assert f"env{{name: 'FLYTE_AWS_ENDPOINT', value: '{endpoint}'}}" in expression
    assert found["MutatingAdmissionPolicyBinding"]["spec"]["matchResources"]["namespaceSelector"] == {
        "matchExpressions": [{"key": "forge.exa.ai/flyte-project", "operator": "Exists"}]}


def test_on_premises_clusters_keep_the_endpoint_their_flyte_sets():
    assert policies("h200") == {} and policies("a100") == {}

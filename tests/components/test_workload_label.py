"""Issue 22 item 3: a workload started outside Flyte (a PyTorchJob, RayJob or Pod applied with
kubectl in a project namespace) carries the label the driver upgrades wait for, so a cordoned node
waits for it instead of draining it: forge's MutatingAdmissionPolicy labels every unlabelled pod
of a project namespace. The real API server applying it: tests/twin/test_admission_fences.py."""
from __future__ import annotations

import pytest

from forge.components.driver_upgrades import WORKLOAD_LABEL
from forge.components.flyte import workload_label
from forge.model.queues import FLYTE_PROJECT_LABEL
from tests.helpers import REPO, generated

CLUSTERS = ("h200", "a100")  # h200-burst (EKS) serves no MutatingAdmissionPolicy: tests/components/test_api_served.py


def policy_and_binding(cluster: str) -> tuple[dict, dict]:
    folder = f"overlays/{cluster}/flyte"
    return (generated(f"{folder}/mutatingadmissionpolicy-{workload_label.POLICY}.yaml"),
            generated(f"{folder}/mutatingadmissionpolicybinding-{workload_label.POLICY}.yaml"))


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_project_namespace_labels_its_unlabelled_pods_with_the_upgrade_wait_label(cluster):
    policy, binding = policy_and_binding(cluster)
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1beta1"
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] == workload_label.POLICY
    # Pods, as they are created, fail closed.
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    assert spec["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
    # Every project namespace is selected: each carries the project label the binding selects on.
    assert binding["spec"]["matchResources"]["namespaceSelector"] == {
        "matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]}
    namespaces = [generated(str(p.relative_to(REPO))) for p in sorted((REPO / f"overlays/{cluster}/flyte").glob("namespace-*.yaml"))]
    projects = [ns for ns in namespaces if ns["metadata"]["name"] != "flyte"]
    assert projects and all(FLYTE_PROJECT_LABEL in ns["metadata"]["labels"] for ns in projects)
    # Only a pod without the label is changed (Flyte's keep `flyte`), and it gets exactly that label.
    [condition] = spec["matchConditions"]
    assert condition["expression"] == f"!has(object.metadata.labels) || !('{WORKLOAD_LABEL}' in object.metadata.labels)"
    [mutation] = spec["mutations"]
    assert mutation == {"patchType": "ApplyConfiguration", "applyConfiguration": {
        "expression": f"Object{{metadata: Object.metadata{{labels: {{'{WORKLOAD_LABEL}': 'external'}}}}}}"}}


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_the_label_is_the_one_both_driver_upgrades_wait_for(cluster):
    gpu = generated(f"overlays/{cluster}/gpu-operator/values.yaml")
    assert gpu["driver"]["upgradePolicy"]["waitForCompletion"]["podSelector"] == WORKLOAD_LABEL  # an existence selector
    if cluster == "h200":  # the fabric cluster's DOCA driver
        nic = generated("overlays/h200/network-operator/nicclusterpolicy-nic-cluster-policy.yaml")
        assert nic["spec"]["ofedDriver"]["upgradePolicy"]["waitForCompletion"]["podSelector"] == WORKLOAD_LABEL


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_flytes_project_may_sync_the_policy(cluster):
    project = generated(f"clusters/{cluster}/argocd/appproject-flyte.yaml")
    allowed = {(k["group"], k["kind"]) for k in project["spec"]["clusterResourceWhitelist"]}
    assert set(workload_label.KINDS) <= allowed

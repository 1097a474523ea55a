"""Issue 30: forge's output for a cluster uses only the APIs that cluster's API server serves. The
inventory says what that is (cluster.api_server on premises; a managed control plane serves the
upstream defaults: forge.facts.kube_apis); forge validate refuses any other, naming the inventory fact.
The box's API server runs with exactly those flags: tests/twin/test_api_served.py."""
from __future__ import annotations

import json

import pytest
import yaml

from forge.argocd.bootstrap import bootstrap_objects
from forge.fleet import components_of
from forge.fleet import load_plan_text
from forge.facts.kube_apis import Served, built_in
from forge.validate.served import ServedApis
from forge.facts.versions import chart_pins
from tests.helpers import REPO, edit, inventory_file, inventory_text, model, problems

MUTATING = "admissionregistration.k8s.io/v1beta1"
API_SERVER = """  api_server:
    feature_gates: [MutatingAdmissionPolicy]
    runtime_config: [admissionregistration.k8s.io/v1beta1]
"""


def objects_of(cluster: str) -> list[dict]:
    """The objects forge writes into the cluster's overlays (a kustomization's resources; not the
    node-join files, examples or values, which are never synced)."""
    out = []
    for kustomization in sorted((REPO / "overlays" / cluster).glob("*/kustomization.yaml")):
        for name in yaml.safe_load(kustomization.read_text()).get("resources") or []:
            path = kustomization.parent / name
            if path.is_file():
                out += [o for o in yaml.safe_load_all(path.read_text()) if isinstance(o, dict)]
    return out


def test_the_on_premises_clusters_serve_mutating_admission_policies_and_the_cloud_cluster_does_not():
    for cluster in ("h200", "a100"):
        served = model(cluster).served
        assert served.serves(MUTATING, "MutatingAdmissionPolicy"), cluster
        assert served.flags() == ["--feature-gates", "MutatingAdmissionPolicy=true",
                                  "--runtime-config", "admissionregistration.k8s.io/v1beta1=true"]
        assert served.source.startswith(f"clusters/{cluster}/inventory.yaml:") and "cluster.api_server" in served.source
    burst = model("h200-burst").served
    assert burst.flags() == [] and not burst.serves(MUTATING, "MutatingAdmissionPolicy")
    line = next(i for i, t in enumerate(inventory_text("h200-burst").splitlines(), 1) if t.strip() == "cloud:")
    assert burst.source.startswith(f"clusters/h200-burst/inventory.yaml:{line}: cluster.cloud (EKS ")


@pytest.mark.parametrize("cluster", ["h200", "a100", "h200-burst"])
def test_no_generated_object_uses_an_api_its_cluster_does_not_serve(cluster):
    served = model(cluster).served
    unserved = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in objects_of(cluster)
                if not served.serves(o["apiVersion"], o["kind"])]
    assert unserved == []


def test_the_cloud_cluster_has_no_mutating_admission_policy():
    kinds = {o["kind"] for o in objects_of("h200-burst")}
    assert not kinds & {"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"}


def test_an_on_premises_cluster_without_the_flags_gets_no_policy_and_validate_names_the_fact():
    text = edit(inventory_text("h200"), API_SERVER, "")
    cluster = load_plan_text(text, inventory_file("h200")).cluster
    assert cluster.served.flags() == []
    policy = {"apiVersion": MUTATING, "kind": "MutatingAdmissionPolicy", "metadata": {"name": "forge-alluxio-worker-mounts"}}

    class Report:
        failures: list = []

    report = Report()
    ServedApis(cluster.served)(report, "h200", "alluxio", [policy])
    [failure] = report.failures
    assert "MutatingAdmissionPolicy" in str(failure.reason) and "feature gate MutatingAdmissionPolicy" in failure.reason \
        or "off by default in Kubernetes 1.34" in failure.reason
    assert "clusters/h200/inventory.yaml:" in failure.reason and "cluster.kubernetes_version" in failure.reason
    from forge.components.scheduling import Scheduling
    plan = load_plan_text(text, inventory_file("h200"))
    found = Scheduling().fleet_manifests(plan.cluster, plan.components)
    assert {o["kind"] for o in found} == {"PriorityClass"}  # no policy the cluster would refuse


def test_a_served_group_version_without_its_gate_still_refuses_the_gated_kind():
    served = Served("1.34", frozenset({MUTATING}), frozenset(), "clusters/x/inventory.yaml:9: cluster.api_server")
    assert served.serves(MUTATING, "ValidatingAdmissionPolicy")
    assert served.missing(MUTATING, "MutatingAdmissionPolicy") == (
        "MutatingAdmissionPolicy needs the feature gate MutatingAdmissionPolicy, which the cluster's API server does not enable")
    assert served.serves("kueue.x-k8s.io/v1beta1", "ClusterQueue")  # a CRD's group: not the API server's to decide


def test_a_cloud_cluster_takes_no_api_server_flags():
    text = edit(inventory_text("h200-burst"), "  cloud:\n", "  api_server:\n    feature_gates: [MutatingAdmissionPolicy]\n  cloud:\n")
    [found] = problems(text, inventory_file("h200-burst"))
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip() == "api_server:")
    assert found.startswith(f"clusters/h200-burst/inventory.yaml:{line}: cluster.api_server: a cloud cluster's control plane "
                            "is the provider's: EKS runs the control plane with the upstream defaults")


@pytest.mark.parametrize("entry, message", [
    ("apps/v1", "apps/v1 is on by default in Kubernetes 1.34"),
    ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta1 is not a built-in API of Kubernetes 1.34 that is off by default"),
    ("apps", "an API group/version such as admissionregistration.k8s.io/v1beta1"),
])
def test_runtime_config_names_only_built_in_apis_that_are_off_by_default(entry, message):
    text = edit(inventory_text("h200"), "    runtime_config: [admissionregistration.k8s.io/v1beta1]\n",
                f"    runtime_config: [admissionregistration.k8s.io/v1beta1, {entry}]\n")
    [found] = problems(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith("runtime_config:"))
    assert found.startswith(f"clusters/h200/inventory.yaml:{line}: cluster.api_server.runtime_config[1]: ") and message in found


@pytest.mark.parametrize("cluster", ["h200", "h200-burst"])
def test_the_presync_check_lists_every_built_in_api_forges_objects_use(cluster):
    plan = load_plan_text(inventory_text(cluster), inventory_file(cluster))
    files = bootstrap_objects(plan.cluster, list(components_of(plan.cluster)), chart_pins(REPO))
    apis = json.loads(files["prerequisites/configmap.yaml"]["data"]["prerequisites.json"])["apis"]
    used: dict[str, set] = {}
    for o in objects_of(cluster):
        if built_in("1.34", o["apiVersion"]):
            used.setdefault(o["apiVersion"], set()).add(o["kind"])
    assert {gv: sorted(k) for gv, k in sorted(used.items())} == apis
    assert (MUTATING in apis) is (cluster == "h200")

"""Issue 30: the box runs each cluster's API server as the cluster runs it. h200's is built with
MutatingAdmissionPolicy and admissionregistration.k8s.io/v1beta1 (its inventory's
cluster.api_server); h200-burst is EKS and serves the upstream defaults only. An object of an
API the cluster does not serve is refused, naming the object, the API and the inventory fact;
the PreSync check, run against the box's real API server, names what it lacks."""
from __future__ import annotations

import json
import ssl

import yaml

from forge.pod_scripts import prereq_check
from forge.facts.kube_apis import DEFAULT_ON, built_in
from forge.twin.pki import Pki
from forge.twin.served import REASON
from forge.twin.sources import Application, Item
from forge.twin.controllers import Controllers
from forge.twin.sync import Syncer
from tests.twin.conftest import say  # noqa: F401  (the boxes fixture comes from conftest)

MUTATING = "admissionregistration.k8s.io/v1beta1"


def built_in_served(kube) -> set[str]:
    """The built-in group/versions the box's API server serves (its discovery)."""
    found = {"v1"}
    for group in kube.request("GET", "/apis").get("groups", []):
        found |= {v["groupVersion"] for v in group.get("versions", []) if built_in("1.34", v["groupVersion"])}
    return found


def test_the_cloud_clusters_box_serves_the_upstream_defaults_and_nothing_more(boxes):
    plan, kube, _, report = boxes.get("h200-burst")
    assert built_in_served(kube) == set(DEFAULT_ON["1.34"])
    assert kube.resource(MUTATING, "MutatingAdmissionPolicy") is None
    assert [str(r) for r in report.refused if r.reason == REASON] == []  # forge's output for it uses none


def test_the_on_premises_box_serves_what_the_inventory_turns_on(boxes):
    plan, kube, _, report = boxes.get("h200")
    assert built_in_served(kube) == set(DEFAULT_ON["1.34"]) | {MUTATING}
    assert kube.resource(MUTATING, "MutatingAdmissionPolicy") is not None
    assert [str(r) for r in report.refused if r.reason == REASON] == []


def test_an_object_of_an_api_the_cluster_does_not_serve_is_refused_naming_the_api_and_the_fact(boxes):
    plan, kube, state, _ = boxes.get("h200-burst")
    policy = {"apiVersion": MUTATING, "kind": "MutatingAdmissionPolicy", "metadata": {"name": "forge-workload-label"},
              "spec": {"matchConstraints": {"resourceRules": []}, "mutations": []}}
    item = Item(policy, "overlays/h200-burst/flyte/mutatingadmissionpolicy-forge-workload-label.yaml", 2)
    report = Syncer(kube, Controllers.wiring_for(state.kueue_webhook_port), say, plan.cluster.served).sync(
        [Application("h200-burst-flyte", "flyte", 40, False, [item])])
    [refused] = report.refused
    line = next(i for i, t in enumerate((boxes.root / plan.cluster.source).read_text().splitlines(), 1) if t.strip() == "cloud:")
    assert str(refused) == (
        "overlays/h200-burst/flyte/mutatingadmissionpolicy-forge-workload-label.yaml:2: MutatingAdmissionPolicy "
        "forge-workload-label (Application h200-burst-flyte): refused (NotServed): the cluster does not serve "
        f"{MUTATING} MutatingAdmissionPolicy: {MUTATING} is off by default in Kubernetes 1.34 and not in the cluster's "
        f"runtime-config (clusters/h200-burst/inventory.yaml:{line}: cluster.cloud (EKS runs the control plane with the "
        "upstream defaults and takes no feature gates or runtime-config (aws/containers-roadmap#512)))")


def test_tasks_on_the_cloud_cluster_read_its_own_endpoint_from_their_namespace(boxes):
    # Issue 25: a task MultiKueue sends from h200 names the ConfigMap, which h200-burst has with S3's endpoint.
    _, kube, _, _ = boxes.get("h200-burst")
    found = kube.get("v1", "ConfigMap", "forge-storage-endpoint", "training-production")
    assert found and found["data"] == {"FLYTE_AWS_ENDPOINT": "https://s3.us-west-2.amazonaws.com"}


def test_the_presync_check_against_the_real_api_server(boxes):
    _, kube, state, _ = boxes.get("h200-burst")
    pki = Pki(boxes.root / "build" / "twin" / "h200-burst" / "pki")
    get = prereq_check.api_getter(state.server, pki.token(), ssl.create_default_context(cafile=str(pki.ca)))

    def spec(cluster: str) -> dict:
        configmap = yaml.safe_load((boxes.root / f"clusters/{cluster}/argocd/prerequisites/configmap.yaml").read_text())
        return json.loads(configmap["data"]["prerequisites.json"])

    assert prereq_check.missing_apis(spec("h200-burst")["apis"], get) == []
    # h200's output on a cluster built with default flags: its one missing API named
    [line] = prereq_check.missing_apis(spec("h200")["apis"], get)
    assert line.startswith(f"missing prerequisite: API {MUTATING} (forge's objects use it: MutatingAdmissionPolicy, "
                           "MutatingAdmissionPolicyBinding): the API server does not serve it")

"""Issue 21 item 5: Alluxio's masters inside the NetworkPolicies (off the host network, spread one
per node by an admission policy instead), and the S3 proxy reachable only by Flyte."""
from __future__ import annotations

import pytest

from forge.components.alluxio import placement
from tests.helpers import CLUSTERS, generated, generated_dir


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_masters_leave_the_host_network_and_stay_one_per_node(cluster):
    v = generated(f"overlays/{cluster}/alluxio/values.yaml")
    assert v["master"]["hostNetwork"] is False
    assert all(not (v.get(role) or {}).get("hostNetwork") for role in ("worker", "proxy", "jobMaster", "jobWorker"))
    policy = generated(f"overlays/{cluster}/alluxio/mutatingadmissionpolicy-{placement.POLICY}.yaml")
    binding = generated(f"overlays/{cluster}/alluxio/mutatingadmissionpolicybinding-{placement.POLICY}.yaml")
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["alluxio"]
    [condition] = policy["spec"]["matchConditions"]
    assert "object.metadata.labels['role'] == 'alluxio-master'" in condition["expression"]
    # a JSON patch: the real server refuses apply configurations of atomic lists (tests/twin/test_admission_fences.py)
    [mutation] = policy["spec"]["mutations"]
    assert mutation["patchType"] == "JSONPatch"
    expr = mutation["jsonPatch"]["expression"]
    assert expr.count("{") == expr.count("}") and expr.count("[") == expr.count("]")
    assert "topologyKey: 'kubernetes.io/hostname'" in expr and "requiredDuringSchedulingIgnoredDuringExecution" in expr


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_only_flyte_reaches_the_s3_proxy(cluster):
    policies = {o["metadata"]["name"]: o for o in generated_dir(f"overlays/{cluster}/alluxio", "networkpolicy-")}
    proxy = policies["allow-s3-proxy"]["spec"]
    assert proxy["podSelector"]["matchLabels"]["role"] == "alluxio-proxy"
    sources = [peer for rule in proxy["ingress"] for peer in rule["from"]]
    assert sources and all("namespaceSelector" in p for p in sources)
    assert "default-deny-ingress" in policies

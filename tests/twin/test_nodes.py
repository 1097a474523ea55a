"""The box's Node objects: labels and taints from forge's rendered NodeFeatureRules (as nfd-master
would publish them), allocatable from forge.model.capacity (no box needed)."""
from __future__ import annotations

import copy

import pytest

from forge.errors import ForgeError
from forge.twin.box import nodes_not_as_made, register_nodes
from forge.twin.nodes import allocatable, nfd_results, node_objects
from tests.helpers import generated_dir


def rule(name: str, nodes: list[str], labels: dict, taints: list | None = None, feature: str = "system.name",
         attribute: str = "nodename", op: str = "In") -> tuple[dict, str]:
    obj = {"kind": "NodeFeatureRule", "metadata": {"name": name}, "spec": {"rules": [{
        "name": name, "labels": labels, "taints": taints or [],
        "matchFeatures": [{"feature": feature, "matchExpressions": {attribute: {"op": op, "value": nodes}}}]}]}}
    return obj, f"rendered/{name}.yaml:1"


def test_a_rule_labels_and_taints_only_the_nodes_it_names():
    rules = [rule("r1", ["gpu-1"], {"forge.exa.ai/rack": "r1"}, [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])]
    labels, taints, findings = nfd_results(rules, "gpu-1")
    assert labels == {"forge.exa.ai/rack": "r1"} and taints == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert nfd_results(rules, "gpu-2") == ({}, [], [])
    assert findings == []


def test_what_nfd_master_would_drop_is_reported_not_applied():
    rules = [rule("bad", ["n"], {"node-role.kubernetes.io/gpu": "", "plain": "x", "feature.node.kubernetes.io/ok": "y"},
                  [{"key": "node.kubernetes.io/gpu", "effect": "NoSchedule"}])]
    labels, taints, findings = nfd_results(rules, "n")
    # Unprefixed labels get NFD's own namespace; kubernetes.io's are refused, as nfd-master 0.19 refuses them.
    assert labels == {"feature.node.kubernetes.io/plain": "x", "feature.node.kubernetes.io/ok": "y"}
    assert taints == []
    assert len(findings) == 2 and all("rendered/bad.yaml:1: rule 'bad'" in f for f in findings)
    assert any("label node-role.kubernetes.io/gpu" in f and "namespace node-role.kubernetes.io" in f for f in findings)


def test_a_rule_on_a_feature_the_box_cannot_know_is_refused_by_name():
    with pytest.raises(ForgeError, match=r"rendered/r\.yaml:1: rule 'r' matches on feature pci.device, which no node"):
        nfd_results([rule("r", ["10de"], {"a.b/c": "d"}, feature="pci.device", attribute="vendor")], "n")
    with pytest.raises(ForgeError, match="operator Gt"):
        nfd_results([rule("r", ["1"], {"a.b/c": "d"}, op="Gt")], "n")


def test_a_feature_a_component_declares_is_evaluated_like_nfd_master_would():
    probe = rule("probe", [], {"forge.exa.ai/nvme": "true"}, feature="local.feature", attribute="forge-nvme-mounted", op="IsTrue")
    healthy = {"local.feature": {"forge-nvme-mounted": "true"}}
    assert nfd_results([probe], "n", healthy)[0] == {"forge.exa.ai/nvme": "true"}
    assert nfd_results([probe], "n", {"local.feature": {"forge-nvme-mounted": "false"}})[0] == {}
    assert nfd_results([probe], "n", {"local.feature": {}})[0] == {}  # nothing reported: no label


def test_shipped_nodes_carry_forges_labels_taints_and_the_capacity_queues_were_sized_from(clusters):
    # The rules as generate wrote them (the box reads them from the render: the same objects).
    folder = "overlays/h200/node-feature-discovery"
    rules = [(o, f"{folder}/{o['metadata']['name']}") for o in generated_dir(folder) if o["kind"] == "NodeFeatureRule"]
    cluster = clusters["h200"]
    nodes, findings = node_objects(cluster, rules, "v1.34.4")
    assert findings == []
    by_name = {n["metadata"]["name"]: n for n in nodes}
    gpu, mig, cp = by_name["h200-gpu-01"], by_name["h200-gpu-17"], by_name["h200-cp-01"]
    assert gpu["metadata"]["labels"]["forge.exa.ai/gpu-model"] == "H200-141GB"
    assert gpu["metadata"]["labels"]["nvidia.com/mig.config"] == "all-disabled"
    assert {"key": "nvidia.com/gpu", "effect": "NoSchedule"} in gpu["spec"]["taints"]
    assert gpu["status"]["allocatable"] == {"cpu": "192", "memory": "2048Gi", "nvidia.com/gpu": "8", "rdma/rdma_network": "1000",
                                            "rdma/rdma_storage": "1000", "pods": "110"}
    assert mig["status"]["allocatable"]["nvidia.com/mig-1g.18gb"] == "56" and "nvidia.com/gpu" not in mig["status"]["allocatable"]
    assert mig["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g"
    assert {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"} in cp["spec"]["taints"]
    assert allocatable(cluster, cluster.nodes[0])["cpu"] == "64"


@pytest.mark.parametrize("name", ["h200", "a100"])
def test_the_nvme_label_reaches_healthy_nvme_nodes_from_the_probe_feature_only(clusters, name):
    # issue 22 item 9: forge.exa.ai/nvme comes from alluxio's NodeFeatureRule on the probe's local
    # feature; the Alluxio component tells the box a healthy NVMe node reports it (node_features).
    from forge.components import COMPONENTS
    cluster = clusters[name]
    rules = [(o, f"{folder}/{o['metadata']['name']}")
             for folder in (f"overlays/{name}/node-feature-discovery", f"overlays/{name}/alluxio")
             for o in generated_dir(folder) if o["kind"] == "NodeFeatureRule"]
    nodes, findings = node_objects(cluster, rules, "v1.34.4", [c for c in COMPONENTS if c.enabled(cluster)])
    assert findings == []
    labelled = {n["metadata"]["name"] for n in nodes if n["metadata"]["labels"].get("forge.exa.ai/nvme") == "true"}
    assert labelled == {n.name for n in cluster.nvme_nodes} and labelled
    # A drive not mounted (feature false): the rule labels nothing.
    probe = next(pair for pair in rules if pair[0]["metadata"]["name"] == "forge-nvme-mounted")
    assert nfd_results([probe], "n", {"local.feature": {"forge-nvme-mounted": "false"}})[0] == {}


KWOK_DEFAULTS = {"cpu": "1k", "memory": "1Ti", "pods": "1M"}  # kwokctl's node-initialize stage, for a node with none


class KwokRacingApiServer:
    """The API server with kwok watching it, at kwok's worst timing: kwok sees each Node as it was
    created, and its node-initialize status (that node's capacity and allocatable, else kwok's
    defaults) lands after every request the box makes for it."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        self.seen_by_kwok: dict[str, dict] = {}

    def path(self, api_version, kind, name=None, namespace=None, subresource=None) -> str:
        return f"/api/v1/nodes/{name}" + (f"/{subresource}" if subresource else "")

    def create(self, obj: dict) -> dict:
        name = obj["metadata"]["name"]
        self.nodes[name] = copy.deepcopy(obj)  # a Node's create keeps its status (kubelets register so)
        self.seen_by_kwok[name] = copy.deepcopy(obj)
        return obj

    def request(self, method, path, body=None, content_type="application/json", query=None, timeout=60):
        assert method == "PATCH" and path.endswith("/status"), (method, path)
        node = self.nodes[path.split("/")[4]]
        node.setdefault("status", {}).update(body["status"])
        return node

    def kwok_initializes(self) -> list[dict]:
        for name, seen in self.seen_by_kwok.items():
            status = seen.get("status") or {}
            self.nodes[name].setdefault("status", {}).update(
                {f: status.get(f) or KWOK_DEFAULTS for f in ("capacity", "allocatable")})
        return list(self.nodes.values())


def test_kwok_keeps_the_resources_of_every_node_the_box_registers(clusters):
    # The 100-node burst job fitted only 99 nodes: one pool node stood with kwok's 1Ti of memory,
    # created bare and given its status by a second request that kwok's own status write overtook.
    nodes, _ = node_objects(clusters["h200"], [], "v1.34.4", [])
    server = KwokRacingApiServer()
    register_nodes(server, copy.deepcopy(nodes))
    standing = server.kwok_initializes()
    assert nodes_not_as_made(nodes, standing) == []
    gpu = [n for n in standing if n["status"]["allocatable"].get("nvidia.com/gpu")]
    assert len(gpu) >= 16 and all(n["status"]["allocatable"]["memory"] != "1Ti" for n in gpu)


def test_a_cloud_clusters_box_makes_only_its_system_pools_nodes(clusters):
    # Issue 32: the box made every node a pool may make (116 p5e, 10 m7i) before any scenario, so
    # a job found its nodes standing; Karpenter makes those now, for pods that wait for them.
    nodes, findings = node_objects(clusters["h200-burst"], [], "v1.34.4", [])
    assert [n["metadata"]["name"] for n in nodes] == ["system-001", "system-002", "system-003"] and findings == []
    assert all("karpenter.sh/nodepool" not in n["metadata"]["labels"] for n in nodes)


def test_a_node_standing_with_other_resources_than_the_box_gave_it_is_named():
    made = [{"metadata": {"name": "gpu-1"}, "status": {"capacity": {"cpu": "192", "memory": "2048Gi", "pods": "110"},
                                                       "allocatable": {"cpu": "192", "memory": "2048Gi", "pods": "110"}}}]
    served = copy.deepcopy(made)
    served[0]["status"]["allocatable"]["memory"] = served[0]["status"]["capacity"]["memory"] = "2Ti"  # the server's canonical form
    assert nodes_not_as_made(made, served) == []
    served[0]["status"]["allocatable"] = dict(KWOK_DEFAULTS)
    assert nodes_not_as_made(made, served) == ["gpu-1: allocatable cpu 1k, not 192", "gpu-1: allocatable memory 1Ti, not 2048Gi",
                                               "gpu-1: allocatable pods 1M, not 110"]

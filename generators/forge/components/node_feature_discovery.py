"""node-feature-discovery: the one NFD per cluster, and the node labels and taints of the inventory.

Both NVIDIA operators bundle an NFD; two would fight over the same labels, so both are told to
use this one. Per-node labels (rack, profile, roles, MIG layout, the inventory's extra labels)
and taints reach the nodes through a NodeFeatureRule per node that matches the node's name:
GitOps owns them, nobody runs `kubectl label` by hand.
"""
from __future__ import annotations

from typing import Any

from forge.components import network, node_join
from forge.components.driver_upgrades import skip_labels
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_FOUNDATION, Component, custom_resource
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL
from forge.model.cluster import ClusterModel, NodeModel

# PCI classes NFD labels by vendor: network (02) for the Network Operator's NIC selection,
# display (03), processing accelerators (12) and 0b40 (co-processors) for GPUs.
PCI_CLASSES = ["02", "03", "0b40", "12"]


METRICS_PORT = 8080  # the chart's master.port, worker.port and gc.port


class NodeFeatureDiscovery(Component):
    name = "node-feature-discovery"
    namespace = "node-feature-discovery"
    sync_wave = WAVE_FOUNDATION
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("apps", "DaemonSet"), ("batch", "Job"))
    chart = "node-feature-discovery"
    crd_groups = ("nfd.k8s-sigs.io",)
    # Only Argo CD's automated pruning is off: the chart's CRDs (NodeFeature, NodeFeatureRule, NodeFeatureGroup: every node label rule) cannot be annotated
    # Prune=false from values (see forge.validate.cluster_policies).
    prune = False
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("nfd.k8s-sigs.io", "NodeFeatureRule"),
    )

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape([METRICS_PORT]),)  # master, worker and gc: metrics and healthz

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        system = {"nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations}
        master: dict[str, Any] = dict(system)
        if any(n.taints for n in cluster.nodes):
            master["enableTaints"] = True  # taints in our NodeFeatureRules are ignored otherwise
        return {
            # No post-delete hook: the chart's default runs `nfd-master -prune` when the Application
            # is deleted, which strips every forge.exa.ai/* label, the GPU taints and
            # nvidia.com/mig.config from every node (the GPU Operator then tears the MIG layouts
            # down). forge validate refuses a delete hook on any Application (validate.delete_hooks).
            "postDeleteCleanup": False,
            # Never pre-empted by workloads: master and gc at the cluster services' class, the
            # worker (a node agent) at the node agents'.
            "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
            "master": master,
            "worker": {
                "priorityClassName": SYSTEM_NODE_CRITICAL,
                "tolerations": cluster.all_node_tolerations,
                "config": {"sources": {"pci": {"deviceClassWhitelist": PCI_CLASSES, "deviceLabelFields": ["vendor"]}}},
            },
            "gc": dict(system),
        }

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        # Maintenance mode a rack at a time: the GPU nodes of other racks carry the upgrade
        # controllers' skip labels (driver_upgrades.skip_labels). A cloud pool's nodes get their
        # labels and taints from Karpenter's NodePool (their names are not known before they
        # exist): no rule per node for them.
        return [node_rule(node, skip_labels(cluster, node.rack, node.gpu is not None))
                for node in cluster.nodes if node.pool is None]

    def local_files(self, cluster: ClusterModel) -> dict[str, Any]:
        # What the node-join step needs: each node registers with its taints (node_join).
        return node_join.join_files(cluster)


def node_rule(node: NodeModel, extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"name": f"forge-node-{node.name}", "labels": {**node.labels, **(extra_labels or {})}}
    if node.taints:
        rule["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} if t.value else
                          {"key": t.key, "effect": t.effect} for t in node.taints]
    rule["matchFeatures"] = [{"feature": "system.name", "matchExpressions": {"nodename": {"op": "In", "value": [node.name]}}}]
    return custom_resource({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": f"forge-node-{node.name}"},
        "spec": {"rules": [rule]},
    })

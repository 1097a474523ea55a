"""Karpenter: the nodes of a cloud cluster's node pools, made when pods wait for them.

One NodePool and one EC2NodeClass per pool of the inventory (`node_pools`, every role but
system): the pool's instance type and capacity type (spot or on-demand) as requirements, its
labels and taints as the nodes', and its max_count as the NodePool's `limits.nodes`, so
Karpenter never makes more nodes than Kueue's quotas were sized for (forge.model.capacity counts one
node per max_count). Empty GPU nodes are removed after CONSOLIDATE_AFTER: a burst costs nothing
when the queue is empty. Pools of one instance type fall back by weight (WEIGHTS: a capacity
reservation, then on-demand, then spot); a pool's placement_group (a cluster placement group the
operator made) goes to its EC2NodeClass, and a reserved pool consumes the reservations tagged
karpenter.sh/discovery=<cluster> and forge.exa.ai/pool=<pool>. The system pool is the managed node group the cluster was created with
(Karpenter cannot make the nodes it runs on); the controller runs there.

AWS names: the controller's IAM role (IRSA) KarpenterController-<cluster>, the nodes' role
KarpenterNodeRole-<cluster>, subnets and security groups tagged karpenter.sh/discovery=<cluster>,
and the spot interruption queue (SQS) named <cluster>: what Karpenter's getting-started template
creates. The account is the inventory's cluster.cloud.account.
"""
from __future__ import annotations

from typing import Any

from forge.facts import versions
from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WAVE_NETWORK, WORKLOAD_KINDS, Component, Expected, custom_resource
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import ClusterModel, NodeModel, PoolModel

DISCOVERY_TAG = "karpenter.sh/discovery"
IMAGE = "karpenter"  # images in charts/versions.yaml
AMI_FAMILY = "eks-al2023"  # machine_images in charts/versions.yaml
METRICS_PORT = 8080  # the chart's controller.metrics.port
# An empty node lives this long before Karpenter removes it. On GPU pools longer than Kueue's
# requeue of a gang its waitForPodsReady evicted (60 s, doubling: forge.components.kueue), so the
# requeued gang finds the nodes it just paid to launch instead of launching 100 more.
CONSOLIDATE_AFTER = {"gpu": "30m", "cpu": "10m"}
# NodePool weight by capacity type when the pool sets none: a capacity reservation (paid for
# whether used or not) first, on-demand next, spot last, so a pool of each type for one instance
# type falls back in that order (Karpenter tries the highest weight that can take the pod).
WEIGHTS = {"reserved": 100, "on-demand": 50, "spot": 10}
# Disruption budgets: empty nodes go at most 10% at a time; a drifted node (a new machine image
# pin) is never replaced under work: burst nodes are short-lived, the next ones get the new image.
BUDGETS = [{"nodes": "10%", "reasons": ["Empty"]}, {"nodes": "0", "reasons": ["Drifted"]}]
POOL_TAG = "forge.exa.ai/pool"  # on the nodes' EC2 resources, and on a reserved pool's capacity reservations
ROOT_VOLUME_GIB = {"gpu": 500, "cpu": 100}  # container images of GPU tasks are large
# Labels Karpenter sets on the nodes itself or refuses in a NodePool template (its restricted
# domains): forge's node labels minus these go into the template.
_KARPENTER_OWNED = ("karpenter.sh/", "karpenter.k8s.aws/", "kubernetes.io/", "k8s.io/")


CHART_NODE_SELECTOR = {"kubernetes.io/os": "linux"}  # the chart's default nodeSelector value


def controller_role_arn(cluster: ClusterModel) -> str:
    return f"arn:aws:iam::{cluster.cloud.account}:role/KarpenterController-{cluster.name}"


def node_role(cluster: ClusterModel) -> str:
    return f"KarpenterNodeRole-{cluster.name}"


class Karpenter(Component):
    name = "karpenter"
    namespace = "karpenter"
    other_namespaces = ("kube-system",)  # the chart's `karpenter-dns` Role and RoleBinding (it reads kube-dns)
    sync_wave = WAVE_NETWORK  # node pools before the operators whose pods need the nodes
    chart = "karpenter"
    server_side_apply = True  # the NodePool and EC2NodeClass CRDs are large
    # Only automated pruning is off: a CRD leaving the chart would delete every NodePool, and with
    # them every node Karpenter made (forge.validate.cluster_policies).
    prune = False
    crd_groups = ("karpenter.sh", "karpenter.k8s.aws", "autoscaling.x-k8s.io")
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("karpenter.sh", "NodePool"),
        ("karpenter.k8s.aws", "EC2NodeClass"),
    )
    # What the chart 1.14.1 renders with our values (serviceMonitor.enabled; its PodDisruptionBudget
    # is on by default), besides the cluster-scoped kinds above.
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("policy", "PodDisruptionBudget"),
                        ("monitoring.coreos.com", "ServiceMonitor"))
    inventory_values = frozenset({"controller.image.tag", "controller.image.repository"})

    def enabled(self, cluster: ClusterModel) -> bool:
        return any(p.karpenter for p in cluster.pools)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape([METRICS_PORT]),)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        image = versions.image(IMAGE)
        return {
            "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
            "nodeSelector": cluster.system_node_selector,
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, *cluster.system_tolerations],
            "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": controller_role_arn(cluster)}},
            "serviceMonitor": {"enabled": True},
            "controller": {"image": {"repository": image.repository, "tag": image.tag}},
            "settings": {"clusterName": cluster.name, "interruptionQueue": cluster.name},
        }

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        out = []
        for pool in cluster.pools:
            if pool.karpenter:
                first = next(n for n in cluster.nodes if n.pool == pool)
                out += [custom_resource(node_class(cluster, pool)), custom_resource(node_pool(pool, first))]
        return out

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        deployment = ("Deployment", "karpenter")
        pod = ("spec", "template", "spec")
        return [
            # helm merges our nodeSelector into the chart's default (kubernetes.io/os: linux, chart 1.14.1)
            Expected(*deployment, (*pod, "nodeSelector"), {**CHART_NODE_SELECTOR, **cluster.system_node_selector}),
            Expected(*deployment, (*pod, "containers", "name=controller", "image"), versions.image(IMAGE).ref),
        ]


def template_labels(node: NodeModel) -> dict[str, str]:
    return {k: v for k, v in node.labels.items() if not k.startswith(_KARPENTER_OWNED)}


def node_pool(pool: PoolModel, node: NodeModel) -> dict[str, Any]:
    """The pool as a Karpenter NodePool: `node` is one of its NodeModels (they all carry the same labels)."""
    spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.name},
        "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [pool.instance.key]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": [pool.capacity_type]},
        ],
        # A node is never expired under a running job; consolidation removes it once empty.
        "expireAfter": "Never",
    }
    if pool.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} if t.value else
                          {"key": t.key, "effect": t.effect} for t in pool.taints]
    limits: dict[str, Any] = {"nodes": str(pool.max_count), "cpu": str(pool.max_count * pool.instance.cpu_threads)}
    if pool.instance.gpu_count:
        limits["nvidia.com/gpu"] = str(pool.max_count * pool.instance.gpu_count)
    kind = "gpu" if pool.instance.gpu_count else "cpu"
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {"metadata": {"labels": template_labels(node)}, "spec": spec},
            "limits": limits,
            "weight": pool.weight or WEIGHTS[pool.capacity_type],
            # Only empty nodes go (a training job is never moved), never a drifted one under work.
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": CONSOLIDATE_AFTER[kind],
                           "budgets": [dict(b) for b in BUDGETS]},
        },
    }


def node_class(cluster: ClusterModel, pool: PoolModel) -> dict[str, Any]:
    discovery = [{"tags": {DISCOVERY_TAG: cluster.name}}]
    size = ROOT_VOLUME_GIB["gpu" if pool.instance.gpu_count else "cpu"]
    spec: dict[str, Any] = {
        "role": node_role(cluster),
        # The EKS-optimised AL2023 release (the NVIDIA variant on GPU instance types: driver,
        # container toolkit and EFA driver are in the image, so the GPU Operator leaves them off).
        "amiSelectorTerms": [{"alias": f"al2023@{versions.machine_image(AMI_FAMILY)}"}],
        "subnetSelectorTerms": discovery,
        "securityGroupSelectorTerms": discovery,
        "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {
            "volumeSize": f"{size}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}],
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1},
        "tags": {"forge.exa.ai/cluster": cluster.name, POOL_TAG: pool.name},
    }
    if pool.placement_group:  # made by the operator (docs/burst.md); not found, the class is not Ready
        spec["placementGroupSelector"] = {"name": pool.placement_group}
    if pool.capacity_type == "reserved":  # the reservations the operator tagged for this pool
        spec["capacityReservationSelectorTerms"] = [{"tags": {DISCOVERY_TAG: cluster.name, POOL_TAG: pool.name}}]
    if pool.instance.instance_store_gb:
        spec["instanceStorePolicy"] = "RAID0"  # the local NVMe as one volume for the kubelet and containers
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": pool.name}, "spec": spec}

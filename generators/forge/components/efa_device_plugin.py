"""The AWS EFA device plugin: on a cloud cluster, what the Network Operator is on premises.

EFA (Elastic Fabric Adapter) is the east-west fabric of p4d/p5-class instances: NCCL reaches it
through libfabric (aws-ofi-nccl in the task image), with GPUDirect RDMA done by the EFA kernel
driver of the node image, so there is no DOCA/OFED container, no RDMA shared device plugin, no
Multus rails and no nv-ipam: each node advertises `vpc.amazonaws.com/efa` (one per EFA interface,
the catalogue's efa_interfaces) and a job asks for them as it asks for GPUs. Karpenter attaches
the interfaces when a pending pod requests the resource.
"""
from __future__ import annotations

from typing import Any

from forge.facts import versions
from forge.components.base import WAVE_NETWORK, Component, Expected
from forge.model.cluster import EFA_RESOURCE, ClusterModel  # noqa: F401  (its one home is the model)

IMAGE = "aws-efa-k8s-device-plugin"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The EKS add-on images' account: its ECR serves every commercial region (the image pin names us-west-2).
EKS_ECR_ACCOUNT = "602401143452"


CHART_TOLERATION = {"key": "CriticalAddonsOnly", "operator": "Exists"}  # in the chart's DaemonSet template


def efa_pools(cluster: ClusterModel):
    return tuple(p for p in cluster.pools if p.efa_interfaces)


class EfaDevicePlugin(Component):
    name = "efa-device-plugin"
    namespace = "aws-efa"
    sync_wave = WAVE_NETWORK
    chart = "aws-efa-k8s-device-plugin"
    release_name = "aws-efa-k8s-device-plugin"
    inventory_values = frozenset({"image.repository", "image.tag"})
    namespaced_kinds = (("apps", "DaemonSet"),)  # the chart renders its DaemonSet and nothing else
    # The chart (v0.5.30) has no priorityClassName value: its DaemonSet runs at the default class.
    priority_exception = "the aws-efa-k8s-device-plugin chart has no priorityClassName value"

    def enabled(self, cluster: ClusterModel) -> bool:
        return bool(efa_pools(cluster))

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        image = versions.image(IMAGE)
        pools = efa_pools(cluster)
        nodes = [n for n in cluster.nodes if n.pool in pools]
        return {
            # The image from the cluster's own region (the chart's default is us-west-2's).
            "image": {"repository": image.repository.replace(".us-west-2.", f".{cluster.cloud.region}."), "tag": image.tag},
            # Only the instance types of our EFA pools (the chart lists every EFA type AWS sells).
            "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": sorted({p.instance.key for p in pools})},
            "tolerations": cluster.tolerations_for(nodes),
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        # The chart (v0.5.30) writes its own CriticalAddonsOnly toleration before ours.
        return [Expected("DaemonSet", "aws-efa-k8s-device-plugin", ("spec", "template", "spec", "tolerations"),
                         [CHART_TOLERATION, *cluster.tolerations_for([n for n in cluster.nodes if n.pool in efa_pools(cluster)])])]

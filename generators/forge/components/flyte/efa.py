"""Multi-node training over EFA in the cloud: the PodTemplate `forge-efa` and its policy.

Karpenter 1.14.1 (karpenter-provider-aws) attaches a node's EFA interfaces only when the NodeClaim
requests `vpc.amazonaws.com/efa` (a pending pod does: pkg/providers/amifamily/resolver.go, every
interface the instance type has) or the EC2NodeClass lists `networkInterfaces`; and the EFA device
plugin mounts the devices only into a container that requests them. A pod that does not ask runs
NCCL over TCP through the VPC, silently. So every project namespace of a cloud cluster with EFA
pools, and of its MultiKueue manager (where the job is made: its pods are the manager's), gets
`forge-efa`: the project's defaults plus
- `vpc.amazonaws.com/efa`: every interface of the burst pool's instance type (32 on p5e.48xlarge;
  the smallest count among the cluster's EFA GPU pools when they differ, so the pod fits each);
- a memory-backed /dev/shm for NCCL;
- `karpenter.sh/do-not-disrupt: "true"`: Karpenter never removes the node of a running gang pod
  on its own account (drift after a machine image bump, consolidation); the node goes when the
  pod has ended and the pool's consolidateAfter has passed.
No IPC_LOCK: the EKS-optimised AMI's containerd runs with an unlimited memlock limit, and the
cloud cluster's project namespaces enforce Pod Security `baseline`, which refuses the capability.
The policy (forge.components.flyte.rdma_policy) refuses a multi-node PyTorchJob on the cloud
queue (on the manager) or on a cloud cluster whose replicas do not all request EFA.
"""
from __future__ import annotations

import copy
from typing import Any

from forge.components.flyte import rdma_policy
from forge.components.flyte.rdma_policy import Fabric
from forge.model.cluster import EFA_RESOURCE, ClusterModel

EFA_POD_TEMPLATE = "forge-efa"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
SHM_VOLUME = "dshm"


def burst_cluster(cluster: ClusterModel) -> ClusterModel | None:
    """The cloud cluster whose EFA this cluster's jobs use: itself, or the one it is the manager of."""
    if cluster.cloud:
        return cluster
    kueue = cluster.component_settings.get("kueue")
    return cluster.linked.get(kueue.burst.cluster) if kueue is not None and kueue.burst else None


def efa_per_pod(cluster: ClusterModel) -> int:
    """EFA interfaces a multi-node pod asks for (0: no EFA GPU pool to run on)."""
    burst = burst_cluster(cluster)
    counts = [p.efa_interfaces for p in burst.pools if p.karpenter and p.instance.gpu_count and p.efa_interfaces] if burst else []
    return min(counts, default=0)


def fabric(cluster: ClusterModel) -> Fabric | None:
    if not efa_per_pod(cluster):
        return None
    return Fabric(EFA_RESOURCE, EFA_POD_TEMPLATE, "over the cloud cluster's EFA")


def efa_pod_template(cluster: ClusterModel, base: dict[str, Any]) -> dict[str, Any]:
    """`base` (a project's default PodTemplate) with the EFA interfaces added, named forge-efa."""
    count = efa_per_pod(cluster)
    out = copy.deepcopy(base)
    out["metadata"]["name"] = EFA_POD_TEMPLATE
    out["template"] = {"metadata": {"annotations": {DO_NOT_DISRUPT: "true"}}, **out["template"]}
    spec = out["template"]["spec"]
    container = spec["containers"][0]
    for field in ("requests", "limits"):
        container.setdefault("resources", {}).setdefault(field, {})[EFA_RESOURCE] = count
    container.setdefault("volumeMounts", []).append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    spec.setdefault("volumes", []).append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
    return out


def cloud_policy_objects(cluster: ClusterModel) -> list[dict[str, Any]]:
    """On a cloud cluster with EFA GPU pools: the policy refusing multi-node PyTorch without EFA
    (its manager's copy is forge.components.flyte.rdma.fence_objects)."""
    found = fabric(cluster) if cluster.cloud else None
    return rdma_policy.objects(found) if found else []

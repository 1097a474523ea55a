"""Multi-node training over the compute fabric from Flyte, and the Pod Security that admits it.

On a cluster with a compute fabric (compute-role RDMA NICs), every project namespace gets a
second PodTemplate, `forge-rdma`, which multi-node training tasks name
(`@task(pod_template_name="forge-rdma")`, PyTorch/MPI/Ray alike): the project's defaults plus
the fabric's RDMA resource, one interface per rail (Multus), the IPC_LOCK capability RDMA needs to
pin memory, and a memory-backed /dev/shm for NCCL. The default template stays as it was, so CPU
and single-node tasks take no rail addresses (each node has `addresses_per_node` per rail).

Pod Security on those namespaces: `baseline` has no room for IPC_LOCK, and the alternative, an
unlimited RLIMIT_MEMLOCK in the container runtime of every node, is node configuration forge does
not own and cannot check. So project namespaces of fabric clusters label Pod Security `privileged`
(warn and audit at `baseline`) and are bound by forge's ValidatingAdmissionPolicy
(forge.components.flyte.fence), which refuses every pod beyond baseline except for IPC_LOCK:
baseline + IPC_LOCK is what is enforced. `forge validate` holds forge's own pods to the same and
fails a project namespace that is privileged without the policy. Clusters without a fabric
enforce `baseline` with Pod Security alone.
"""
from __future__ import annotations

import copy
from typing import Any

from forge.components.flyte import efa, fence, rdma_policy
from forge.components.network_operator import MULTUS_NETWORKS_ANNOTATION, NetworkOperator
from forge.model.cluster import ClusterModel
from forge.model.queues import CLOUD_QUEUE

RDMA_POD_TEMPLATE = "forge-rdma"
SHM_VOLUME = "dshm"


def has_fabric(cluster: ClusterModel) -> bool:
    return cluster.rdma_resource("compute") is not None


def project_psa_levels(cluster: ClusterModel, default: str) -> dict[str, str]:
    """Pod Security labels of a project namespace: mode -> level."""
    if has_fabric(cluster):
        return {"enforce": "privileged", "audit": "baseline", "warn": "baseline"}
    return {"enforce": default, "audit": default, "warn": default}


def fence_labels(cluster: ClusterModel) -> dict[str, str]:
    """The label that binds a project namespace to the baseline + IPC_LOCK policy (fabric clusters)."""
    return {fence.POLICY_LABEL: fence.POLICY_VALUE} if has_fabric(cluster) else {}


def fence_objects(cluster: ClusterModel) -> list[dict[str, Any]]:
    """Fabric clusters: the baseline + IPC_LOCK policy, and the one refusing multi-node PyTorch
    jobs without the fabric (forge.components.flyte.rdma_policy)."""
    resource = cluster.rdma_resource("compute")
    if resource is None:
        return []
    kueue = cluster.component_settings.get("kueue")
    cloud = CLOUD_QUEUE if kueue is not None and kueue.burst else None  # a MultiKueue manager's cloud queue
    local = rdma_policy.Fabric(resource.resource, RDMA_POD_TEMPLATE)
    return fence.objects() + rdma_policy.objects(local, cloud, efa.fabric(cluster) if cloud else None)


def rdma_pod_template(cluster: ClusterModel, base: dict[str, Any]) -> dict[str, Any]:
    """`base` (a project's default PodTemplate) with the fabric added, named forge-rdma."""
    resource = cluster.rdma_resource("compute")
    assert resource is not None  # only on fabric clusters
    out = copy.deepcopy(base)
    out["metadata"]["name"] = RDMA_POD_TEMPLATE
    template = out["template"] = {"metadata": out["template"].get("metadata", {}), **out["template"]}  # metadata first
    if cluster.rails:
        network = cluster.component_settings.get(NetworkOperator.name)  # enabled wherever there is a fabric
        namespace = network.network_namespace if network is not None else "default"
        networks = ",".join(f"{namespace}/{rail.name}" for rail in cluster.rails)
        template["metadata"].setdefault("annotations", {})[MULTUS_NETWORKS_ANNOTATION] = networks
    if not template["metadata"]:
        del template["metadata"]
    spec = template["spec"]
    container = spec["containers"][0]
    for field in ("requests", "limits"):
        container.setdefault("resources", {}).setdefault(field, {})[resource.resource] = 1
    caps = container.setdefault("securityContext", {}).setdefault("capabilities", {})
    caps["add"] = sorted({*caps.get("add", []), "IPC_LOCK"})
    container.setdefault("volumeMounts", []).append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    spec.setdefault("volumes", []).append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
    return out

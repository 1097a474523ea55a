"""NCCL all-reduce per rail: for every tested fabric node, one Job of two pods (this node and a
peer), each with every GPU of its node, the compute fabric's RDMA resource and every rail
attached. torchrun starts one rank per GPU; GPU i of one node and GPU i of the other form a
two-rank group, and NCCL sends their traffic over the NIC nearest to GPU i: its rail on a
rail-optimised server (one NIC per GPU, under the same PCIe switch). All groups run at once; each
must reach the catalogue's floor for the node's GPU model, NIC model and port speed
(hardware.yaml nccl_floors, with the test shape it applies to). With two ranks the bus bandwidth
equals the algorithm bandwidth (nccl-tests doc/PERFORMANCE.md). Where the catalogue has a measured
two-node figure (two_node_floors), the same pods then run one all-reduce over every GPU of both
nodes against it. The script is allreduce.py's.

Plain batch/v1, not a PyTorchJob: an Indexed Job of two completions gives each pod a stable
hostname (`<job>-0`, `<job>-1`, resolvable through a headless Service of the same name), so
rank 0's address is known in advance and no MPI launcher or SSH is needed; kube-state-metrics
exports its status like the DCGM Job's, so the same alert and the release Job's wait read it. The
training operator stays out of it (its PyTorchJob status is not in kube-state-metrics).

The peer: the next fabric node of the same profile in the same rack (a rack in maintenance is
tested together, its GPUs free), else of the same profile anywhere; a profile with one fabric node
gets no pair test. The test pods take the node tests' class (scheduling.NODE_TEST_CLASS,
preemptionPolicy Never): they never pre-empt a job on the peer, they wait for its GPUs; and the
infrastructure-priority policy, which gives classless pods in this namespace a system class that
pre-empts, leaves a pod that names a class alone.
"""
from __future__ import annotations

from typing import Any

from forge.facts import hardware, versions
from forge.components.network_operator import MULTUS_NETWORKS_ANNOTATION
from forge.components.network_operator.ipoib import nccl_env
from forge.components.node_tests import allreduce
from forge.components.node_tests.base import (GPU_RESOURCE, HOSTNAME, NODE_LABEL, PEER_LABEL, TEST_LABEL, job,
                                             job_name, tolerations)
from forge.components.scheduling import NODE_TEST_CLASS, Scheduling
from forge.model.cluster import MIG_DISABLED, ClusterModel, NodeModel, fabric_nics

TEST = "nccl"
IMAGE = "pytorch-example"  # images in charts/versions.yaml: the pinned nvcr.io/nvidia/pytorch
SCRIPT = allreduce.SCRIPT  # the ConfigMap with the script (allreduce.py's, shared with the NVLink test)
PORT = 29500  # torchrun's rendezvous on rank 0
# Both pods must have run within it, else the Job fails: they wait for the GPUs of the node's DCGM
# diagnostics (an hour and more at level 4) and of the peer's (busy if the peer serves).
DEADLINE_SECONDS = 4 * 3600
def floor(node: NodeModel) -> hardware.NcclFloor | None:
    """The catalogue's floor for the node's GPU and its compute fabric's NIC (model and port speed)."""
    nics = fabric_nics(node.profile)
    if node.gpu is None or not nics:
        return None
    return hardware.catalogue().nccl_floor(node.gpu.key, nics[0].model, nics[0].port_gbps)


def peer(cluster: ClusterModel, node: NodeModel) -> NodeModel | None:
    same = [n for n in cluster.fabric_nodes if n.profile_name == node.profile_name and n.gpu is not None
            and n.mig_layout in (None, MIG_DISABLED)]  # whole GPUs, like the node's
    for group in ([n for n in same if n.rack == node.rack], same):
        if len(group) > 1:
            return group[(group.index(node) + 1) % len(group)]
    return None


def two_node_floor(node: NodeModel) -> hardware.TwoNodeFloor | None:
    """The catalogue's two-node figure for the node's GPU and fabric (model, port speed, NICs per node)."""
    nics = fabric_nics(node.profile)
    if node.gpu is None or not nics:
        return None
    return hardware.catalogue().two_node_floor(node.gpu.key, nics[0].model, nics[0].port_gbps, sum(n.count for n in nics))


def floors_env(node: NodeModel, rail: hardware.NcclFloor) -> list[dict[str, str]]:
    """The per-rail floor, and the two-node one where the catalogue has a published figure."""
    env = allreduce.floor_env("RAIL", rail.busbw_gbytes, rail.shape)
    pair = two_node_floor(node)
    return env + (allreduce.floor_env("PAIR", pair.busbw_gbytes, pair.shape) if pair else [])


def service(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    """Headless: gives the Job's pods their DNS names, rank 0's before it is ready."""
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": labels}}


def nccl_job(cluster: ClusterModel, node: NodeModel, other: NodeModel, namespace: str,
             network_namespace: str) -> list[dict[str, Any]]:
    name = job_name(TEST, node)
    labels = {TEST_LABEL: TEST, NODE_LABEL: node.name}
    resource, found = cluster.rdma_resource("compute"), floor(node)
    if resource is None or found is None:  # pairs() never offers such a node
        raise ValueError(f"{node.name}: no compute fabric resource or NCCL floor to test against")
    limits = {GPU_RESOURCE: node.gpu_count, resource.resource: 1, "cpu": "16", "memory": "64Gi"}
    run = (f"exec torchrun --nnodes=2 --nproc-per-node={node.gpu_count} --node-rank=$JOB_COMPLETION_INDEX "
           f"--master-addr={name}-0.{name} --master-port={PORT} {allreduce.PATH}")
    container = {
        "name": "nccl",
        "image": versions.image(IMAGE).ref,
        "command": ["/bin/bash", "-c", run],
        "env": [*nccl_env(cluster), *floors_env(node, found)],
        "resources": {"limits": limits, "requests": dict(limits)},
        # RDMA pins memory: IPC_LOCK, every other capability dropped (as the forge-rdma task template)
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "script", "mountPath": "/workspace"}],
    }
    nodes = [node.name, other.name]
    pod = {
        **({"priorityClassName": NODE_TEST_CLASS} if Scheduling.name in cluster.component_settings else {}),
        "subdomain": name,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": nodes}]}]}},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": HOSTNAME}]},
        },
        "tolerations": tolerations(cluster, [node, other]),
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},  # counts against memory
                    {"name": "script", "configMap": {"name": allreduce.SCRIPT}}],
    }
    networks = ",".join(f"{network_namespace}/{rail.name}" for rail in cluster.rails)
    spec = {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "activeDeadlineSeconds": DEADLINE_SECONDS}
    test = job(name, namespace, {**labels, PEER_LABEL: other.name}, spec, pod,
               annotations={MULTUS_NETWORKS_ANNOTATION: networks} if networks else None)
    test["spec"]["template"]["metadata"]["labels"] = labels
    return [service(name, namespace, labels), test]


def pairs(cluster: ClusterModel, nodes: list[NodeModel]) -> list[tuple[NodeModel, NodeModel]]:
    """(node, peer) for every tested fabric node that has a peer and a floor (the inventory check
    refuses a fabric profile without one: forge.components.node_tests.check)."""
    out = []
    for node in nodes:
        other = peer(cluster, node) if node in cluster.fabric_nodes else None
        if other is not None and floor(node) is not None and cluster.rdma_resource("compute") is not None:
            out.append((node, other))
    return out

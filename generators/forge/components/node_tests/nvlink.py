"""In-node NVLink all-reduce: one Job per tested node whose GPU model and GPU count have a measured
figure in the catalogue (hardware.yaml nvlink_floors: Azure's node health checks on 8-GPU H200,
H100 and A100 nodes). One pod with every GPU of the node runs allreduce.py (one rank per GPU)
at the floor's shape; below the floor the Job fails. A model without a published figure gets no
in-node test (none is derived: NVLink bandwidth depends on the baseboard, not on a datasheet sum).
"""
from __future__ import annotations

from typing import Any

from forge.facts import hardware, versions
from forge.components.node_tests import allreduce
from forge.components.node_tests.base import GPU_RESOURCE, HOSTNAME, NODE_LABEL, TEST_LABEL, job, job_name, tolerations
from forge.components.node_tests.nccl import IMAGE
from forge.model.cluster import ClusterModel, NodeModel

TEST = "nvlink"
DEADLINE_SECONDS = 4 * 3600  # it waits for the GPUs of the node's DCGM diagnostics (an hour and more at level 4)


def floor(node: NodeModel) -> hardware.NvlinkFloor | None:
    return hardware.catalogue().nvlink_floor(node.gpu.key, node.gpu_count) if node.gpu is not None else None


def nvlink_job(cluster: ClusterModel, node: NodeModel, namespace: str) -> dict[str, Any]:
    found = floor(node)
    if found is None:  # test_files never offers such a node
        raise ValueError(f"{node.name}: no in-node NVLink floor for {node.gpu_count} x {node.gpu}")
    limits = {GPU_RESOURCE: node.gpu_count, "cpu": "16", "memory": "64Gi"}
    container = {
        "name": "nvlink",
        "image": versions.image(IMAGE).ref,
        "command": ["/bin/bash", "-c", f"exec torchrun --standalone --nproc-per-node={node.gpu_count} {allreduce.PATH}"],
        "env": allreduce.floor_env("NODE", found.busbw_gbytes, found.shape),
        "resources": {"limits": limits, "requests": dict(limits)},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "script", "mountPath": "/workspace"}],
    }
    pod = {
        "nodeSelector": {HOSTNAME: node.name},
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "tolerations": tolerations(cluster, [node]),
        "containers": [container],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},  # counts against memory
                    {"name": "script", "configMap": {"name": allreduce.SCRIPT}}],
    }
    return job(job_name(TEST, node), namespace, {TEST_LABEL: TEST, NODE_LABEL: node.name},
               {"activeDeadlineSeconds": DEADLINE_SECONDS}, pod)

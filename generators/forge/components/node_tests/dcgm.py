"""DCGM diagnostics: one Job per tested GPU node (`dcgmi diag -r <level>`, the level from the
inventory: components.gpu-operator.node_tests.dcgm_level). The GPU Operator itself never runs
`dcgmi diag` (gpu-operator#670).

The image is the DCGM the pinned GPU Operator's values name (charts/versions.yaml `dcgm`). The
Job starts its own host engine (`nv-hostengine`, which forks into the background), runs the
diagnostics on every GPU of the node and exits with their result. Nodes whose GPUs are split by
MIG get no Job: the diagnostics need whole GPUs (re-layout the node to all-disabled first).
"""
from __future__ import annotations

from typing import Any

from forge.facts import versions
from forge.components.node_tests.base import GPU_RESOURCE, HOSTNAME, NODE_LABEL, TEST_LABEL, job, job_name, tolerations
from forge.components.scheduling import SYSTEM_NODE_CRITICAL
from forge.model.cluster import ClusterModel, NodeModel

TEST = "dcgm"
DCGM_IMAGE = "dcgm"  # images in charts/versions.yaml


def dcgm_job(cluster: ClusterModel, node: NodeModel, namespace: str, level: int) -> dict[str, Any]:
    labels = {TEST_LABEL: TEST, NODE_LABEL: node.name}
    script = (f"nv-hostengine && dcgmi diag -r {level}; rc=$?; nv-hostengine --term || true; exit $rc")
    gpus = {GPU_RESOURCE: node.gpu_count}
    return job(job_name(TEST, node), namespace, labels, {}, {
        "priorityClassName": SYSTEM_NODE_CRITICAL,
        "nodeSelector": {HOSTNAME: node.name},
        "tolerations": tolerations(cluster, [node]),
        "containers": [{
            "name": "dcgm-diag",
            "image": versions.image(DCGM_IMAGE).ref,
            "command": ["/bin/bash", "-c", script],
            "resources": {"limits": dict(gpus), "requests": dict(gpus)},
        }],
    })

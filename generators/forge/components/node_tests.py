"""Node tests: after a driver or firmware change, and after a repair, a GPU node is tested before it
serves again. forge writes one DCGM diagnostics Job per GPU node (`dcgmi diag -r <level>`, the
level from the inventory: components.gpu-operator.node_tests.dcgm_level) to
`overlays/<cluster>/gpu-operator/node-tests/dcgm-<node>.yaml`, never synced: the operator applies
it when the node comes back (docs/day-two.md). The GPU Operator itself never runs `dcgmi diag`
(gpu-operator#670). A failed Job alerts (forge.observability.lifecycle: NodeTestFailed).

The image is the DCGM the pinned GPU Operator's values name (charts/versions.yaml `dcgm`). The
Job starts its own host engine (`nv-hostengine`, which forks into the background), runs the
diagnostics on every GPU of the node and exits with their result. Nodes whose GPUs are split by
MIG get no Job: the diagnostics need whole GPUs (re-layout the node to all-disabled first).
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from forge import versions
from forge.components.scheduling import SYSTEM_NODE_CRITICAL
from forge.inventory.schema import Strict
from forge.model import LABEL_DOMAIN, MIG_DISABLED, ClusterModel, NodeModel

TESTS_DIR = "node-tests"
JOB_PREFIX = "forge-node-test-dcgm-"  # + the node's name: what the alert reads the node from
TEST_LABEL = f"{LABEL_DOMAIN}/node-test"
NODE_LABEL = f"{LABEL_DOMAIN}/node"
DCGM_IMAGE = "dcgm"  # images in charts/versions.yaml
GPU_RESOURCE = "nvidia.com/gpu"


class NodeTests(Strict):
    # dcgmi diag run level: 1 quick (seconds), 2 medium (about 2 minutes), 3 long (about 30 minutes),
    # 4 extended (an hour and more). After a repair or a driver change, 3 catches what a job would hit.
    dcgm_level: Annotated[int, Field(ge=1, le=4)] = 3


def testable(node: NodeModel) -> bool:
    return node.gpu is not None and node.mig_layout in (None, MIG_DISABLED)


def dcgm_job(cluster: ClusterModel, node: NodeModel, namespace: str, level: int) -> dict[str, Any]:
    labels = {TEST_LABEL: "dcgm", NODE_LABEL: node.name}
    script = (f"nv-hostengine && dcgmi diag -r {level}; rc=$?; nv-hostengine --term || true; exit $rc")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{JOB_PREFIX}{node.name}", "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 0,  # a failed diagnostic is the answer, not a reason to retry
            "ttlSecondsAfterFinished": 7 * 86400,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "priorityClassName": SYSTEM_NODE_CRITICAL,
                    "nodeSelector": {"kubernetes.io/hostname": node.name},
                    "tolerations": cluster.tolerations_for([node]),
                    "containers": [{
                        "name": "dcgm-diag",
                        "image": versions.image(DCGM_IMAGE).ref,
                        "command": ["/bin/bash", "-c", script],
                        "resources": {"limits": {GPU_RESOURCE: node.gpu_count}, "requests": {GPU_RESOURCE: node.gpu_count}},
                    }],
                },
            },
        },
    }


def test_files(cluster: ClusterModel, namespace: str, settings: NodeTests) -> dict[str, Any]:
    return {f"{TESTS_DIR}/dcgm-{n.name}.yaml": dcgm_job(cluster, n, namespace, settings.dcgm_level)
            for n in cluster.gpu_nodes if testable(n)}

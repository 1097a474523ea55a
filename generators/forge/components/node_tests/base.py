"""What every node test shares: the inventory knob, the labels the Jobs carry and the alert reads,
and which nodes are tested (forge.model.cluster.NodeModel.tested_before_service)."""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from forge.model.day_two import JOB_PREFIX, TESTS
from forge.inventory.schema import Strict
from forge.model.cluster import LABEL_DOMAIN, MIG_DISABLED, UNTESTED_TOLERATION, ClusterModel, NodeModel

TESTS_DIR = "node-tests"
# JOB_PREFIX (+ "<test>-<node>": the Jobs' names) and TESTS (in the order they run) are shared
# with the alerts: forge.model.day_two.
TEST_LABEL = f"{LABEL_DOMAIN}/node-test"
NODE_LABEL = f"{LABEL_DOMAIN}/node"
PEER_LABEL = f"{LABEL_DOMAIN}/peer"
GPU_RESOURCE = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"


class NodeTests(Strict):
    # dcgmi diag run level: 1 quick (seconds), 2 medium (about 2 minutes), 3 long (about 30 minutes),
    # 4 extended (an hour and more). After a repair or a driver change, 3 catches what a job would hit.
    dcgm_level: Annotated[int, Field(ge=1, le=4)] = 3


def job_name(test: str, node: NodeModel) -> str:
    return f"{JOB_PREFIX}{test}-{node.name}"


def whole_gpu(node: NodeModel) -> bool:
    """DCGM diagnostics need whole GPUs (a cloud pool's nodes included: their Jobs stand for the pool's)."""
    return node.gpu is not None and node.mig_layout in (None, MIG_DISABLED)


def tested(cluster: ClusterModel) -> list[NodeModel]:
    """The nodes that carry the untested taint until their release Job removes it."""
    return [n for n in cluster.gpu_nodes if n.tested_before_service]


def tolerations(cluster: ClusterModel, nodes: list[NodeModel]) -> list[dict[str, str]]:
    """The nodes' own taints and the untested taint: a test Job runs where workloads may not."""
    return [*cluster.tolerations_for(nodes), dict(UNTESTED_TOLERATION)]


def job(name: str, namespace: str, labels: dict[str, str], spec: dict[str, Any], pod: dict[str, Any],
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A test Job: one try (a failed test is the answer, not a reason to retry), kept a week."""
    template: dict[str, Any] = {"metadata": {"labels": labels, **({"annotations": annotations} if annotations else {})},
                                "spec": {"restartPolicy": "Never", **pod}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 7 * 86400, **spec, "template": template},
    }

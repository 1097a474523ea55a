"""The facts of day two that the components and the alerts both read (docs/day-two.md): the GPU
Operator's upgrade settings (`components.gpu-operator.upgrade`), the upgrade controllers' node
labels and states (NVIDIA/k8s-operator-libs pkg/upgrade, GPU Operator v26.7.0), and the names of
the node tests. One stage below both (the model's), so forge.observability never imports a
component and the components never define what the alerts read.
"""
from __future__ import annotations

from typing import Annotated

from pydantic import Field

from forge.inventory.schema import Strict
from forge.model.cluster import ClusterModel

GPU_OPERATOR = "gpu-operator"  # the component whose settings hold the knob


# The label forge puts on every workload: Flyte's k8s plugin adds it to every pod and job it creates
# (its default-labels, forge.components.flyte), plain-pod tasks and RayJobs included. The upgrade
# wait selects on it, so no rank of a gang is evicted before its job finishes (the old selector,
# training.kubeflow.org/job-name, skipped plain pods and RayJobs, which were evicted at once).
WORKLOAD_LABEL = "forge.exa.ai/workload"
WORKLOAD_FLYTE = "flyte"


class WaitForCompletion(Strict):
    # Label selector of the pods a driver upgrade waits for on a cordoned node.
    pod_selector: Annotated[str, Field(min_length=1)] = WORKLOAD_LABEL
    # How long to wait before draining anyway (0: wait forever). A day: jobs checkpoint well within it.
    timeout_seconds: Annotated[int, Field(ge=0)] = 86400


class Maintenance(Strict):
    """Maintenance mode, for a driver rollout a rack at a time (docs/day-two.md): set it, let the
    racks named here upgrade, move on to the next racks, remove the block to resume."""
    # Every ClusterQueue gets Kueue's stopPolicy HoldAndDrain: nothing new is admitted and admitted
    # workloads are evicted (they requeue and restart from their checkpoints after the block goes).
    hold_queues: bool = True
    # Only the GPU nodes of these racks upgrade; every other GPU node carries the upgrade
    # controllers' skip labels (nvidia.com/gpu-driver-upgrade.skip, nvidia.com/ofed-driver-upgrade.skip)
    # through its NodeFeatureRule. Empty: every rack at once (within the pace and the budget).
    racks: list[Annotated[str, Field(min_length=1)]] = []


class UpgradeSettings(Strict):
    # GPU nodes out for a driver upgrade (GPU or NIC) at once: the pace.
    max_parallel: Annotated[int, Field(ge=1)] = 1
    # The budget: how many nodes may be unavailable (cordoned, NotReady, upgrading) before no new
    # upgrade starts, as a percentage (rounded up) of the driver's nodes (GPU Operator) or of the
    # cluster's nodes (Maintenance Operator). Never an absolute number: one broken node would freeze
    # every upgrade.
    max_unavailable: Annotated[str, Field(pattern=r"^([1-9][0-9]?|100)%$")] = "25%"
    # How long the drain after the wait may take before the node's upgrade is marked failed.
    drain_timeout_seconds: Annotated[int, Field(ge=0)] = 1800
    wait_for_completion: WaitForCompletion = WaitForCompletion()
    maintenance: Maintenance | None = None  # None: the fleet serves; upgrades wait for workloads


def gpu_upgrade_settings(cluster: ClusterModel) -> UpgradeSettings:
    """The knob: the GPU Operator's upgrade settings, or the defaults when it has no block."""
    settings = cluster.component_settings.get(GPU_OPERATOR)
    return getattr(settings, "upgrade", None) or UpgradeSettings()


def held_upgrade_seconds(upgrade: UpgradeSettings) -> int:
    """How long a node may sit in an upgrade state before it is stuck: the wait for training pods
    (a day when it waits forever), the drain, and two hours for the reload and validation."""
    wait = upgrade.wait_for_completion.timeout_seconds or 86400
    return wait + upgrade.drain_timeout_seconds + 7200


SKIP_LABEL = "nvidia.com/{driver}-driver-upgrade.skip"  # k8s-operator-libs: the controller leaves the node in upgrade-required
UPGRADE_DRIVERS = ("gpu", "ofed")  # the GPU Operator's and the Network Operator's driver names
HOLD_AND_DRAIN = "HoldAndDrain"


# The upgrade controllers' node labels (k8s-operator-libs: `nvidia.com/<driver>-driver-upgrade-state`,
# kube-state-metrics exports it on kube_node_labels) and the states it takes, in the order a node
# goes through them. The library moves a node from upgrade-required on only without the skip label.
UPGRADE_STATE_LABEL = "nvidia.com/{driver}-driver-upgrade-state"
UPGRADE_STATES = ("upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
                  "drain-required", "pod-restart-required", "validation-required", "uncordon-required", "upgrade-done")
UPGRADE_DONE, UPGRADE_FAILED = "upgrade-done", "upgrade-failed"

# The node tests (forge.components.node_tests): the Jobs' names are JOB_PREFIX + "<test>-<node>",
# which the alert reads the test and the node from; every test a node passes, in the order it runs.
JOB_PREFIX = "forge-node-test-"
TESTS = ("dcgm", "nvlink", "nccl")

# The node gate (forge.pod_scripts.node_gate, forge.components.node_gate): an operator's request to release a
# node against its failed test, the gate's record of it, and its note of the node's test round.
RELEASE_REQUEST_ANNOTATION = "forge.exa.ai/release-reason"
RELEASED_ANNOTATION = "forge.exa.ai/released"
TEST_ROUND_ANNOTATION = "forge.exa.ai/test-round"
TESTED_BOOT_ANNOTATION = "forge.exa.ai/tested-boot"  # the kubelet's bootID the gate last saw: a new one is tested again

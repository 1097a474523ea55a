"""Driver upgrades that never kill a training job, and never take more GPU nodes out than the
inventory allows (`components.gpu-operator.upgrade`).

Two controllers reload drivers on GPU nodes: the GPU Operator's upgrade controller (GPU driver)
and the Network Operator's (DOCA/OFED driver, on the GPU nodes' ConnectX NICs). Each walks a node
through cordon -> wait for the selected training pods to finish (up to a timeout) -> drain (with a
timeout) -> driver reload -> validation -> uncordon, and they are serialised through one knob,
`max_parallel` (default 1):

* GPU Operator: `maxParallelUpgrades` = the knob (pace: one node at a time by default), and
  `maxUnavailable` = `max_unavailable`, a percentage (default 25 %, the chart's own). Its upgrade
  controller (NVIDIA/k8s-operator-libs, pkg/upgrade/common_manager.go: GetUpgradesAvailable,
  GetCurrentUnavailableNodes) subtracts every cordoned or NotReady node of the driver's nodes from
  `maxUnavailable` before starting one. With an absolute 1, one H200 waiting for repair froze every
  GPU driver upgrade; a percentage (rounded up) leaves room for a broken node or two.
* Network Operator: upgrades in requestor mode, so each DOCA/OFED upgrade is a NodeMaintenance
  request granted by the NVIDIA Maintenance Operator (its subchart); the MaintenanceOperatorConfig
  sets `maxParallelOperations` = the knob and `maxUnavailable` = the same percentage. The
  maintenance operator counts every unavailable node of the cluster (a control-plane node being
  patched too), so an absolute 1 froze every NIC driver upgrade as well.
A node held in an upgrade state longer than the wait and drain timeouts allow, or failed, alerts
(forge.observability.lifecycle: the upgrade-state node labels through kube-state-metrics).
Limit (the race window): the two controllers read node state independently; when both find a free
slot in the same reconcile window (seconds), both start, and 2 x the knob nodes can be out until
one finishes. The knob is the steady-state bound, not a lock.

The policy is one function, `upgrade_policy`, in the shape of the GPU Operator's DriverUpgradePolicy
(ClusterPolicy `spec.driver.upgradePolicy` and NVIDIADriver `spec.upgradePolicy` alike), so every
driver spec forge writes uses the same rules.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from forge.inventory.schema import Strict
from forge.model import ClusterModel

GPU_OPERATOR = "gpu-operator"  # the component whose settings hold the knob
MAINTENANCE_CONFIG_NAME = "default"  # the one MaintenanceOperatorConfig the maintenance operator reads
# The GPU Operator's upgrade controller holds a node in `validation-required` until these pods (its
# operator-validator DaemonSet: driver, toolkit, CUDA and plugin checks) run Ready on the new driver.
VALIDATOR_SELECTOR = "app=nvidia-operator-validator"


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


def upgrade_policy(upgrade: UpgradeSettings) -> dict[str, Any]:
    """A DriverUpgradePolicySpec (ClusterPolicy.spec.driver.upgradePolicy, NVIDIADriver.spec.upgradePolicy)."""
    wait = upgrade.wait_for_completion
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": upgrade.max_parallel,
        "maxUnavailable": upgrade.max_unavailable,  # a percentage: a broken node does not freeze the rollout
        "waitForCompletion": {"podSelector": wait.pod_selector, "timeoutSeconds": wait.timeout_seconds},
        # Pods using GPUs that the wait did not cover are evicted, never force-deleted; training
        # pods keep /dev/shm and scratch space in emptyDir.
        "podDeletion": {"force": False, "timeoutSeconds": upgrade.drain_timeout_seconds, "deleteEmptyDir": True},
        "drain": {"enable": True, "force": False, "podSelector": "", "timeoutSeconds": upgrade.drain_timeout_seconds,
                  "deleteEmptyDir": True},
    }


def rendered_upgrade_policy(upgrade: UpgradeSettings) -> dict[str, Any]:
    """The ClusterPolicy's upgradePolicy as the GPU Operator chart (v26.7.0) renders it from
    `chart_upgrade_policy`: its template writes drain.podSelector only when it is not empty (an
    absent selector means the same as "" to the operator: every pod). waitForCompletion's
    selector is never empty (WaitForCompletion.pod_selector)."""
    policy = upgrade_policy(upgrade)
    policy["drain"] = {k: v for k, v in policy["drain"].items() if not (k == "podSelector" and v == "")}
    return policy


def chart_upgrade_policy(upgrade: UpgradeSettings) -> dict[str, Any]:
    """The same policy as the GPU Operator chart's `driver.upgradePolicy` values (the chart calls
    podDeletion `gpuPodDeletion`)."""
    policy = upgrade_policy(upgrade)
    policy["gpuPodDeletion"] = policy.pop("podDeletion")
    return policy


def maintenance_operator_config(upgrade: UpgradeSettings, namespace: str) -> dict[str, Any]:
    """The Maintenance Operator's limits: the pace and the budget, for NodeMaintenance requests
    (NIC driver upgrades)."""
    return {
        "apiVersion": "maintenance.nvidia.com/v1alpha1",
        "kind": "MaintenanceOperatorConfig",
        "metadata": {"name": MAINTENANCE_CONFIG_NAME, "namespace": namespace},
        "spec": {"maxParallelOperations": upgrade.max_parallel, "maxUnavailable": upgrade.max_unavailable},
    }


def held_upgrade_seconds(upgrade: UpgradeSettings) -> int:
    """How long a node may sit in an upgrade state before it is stuck: the wait for training pods
    (a day when it waits forever), the drain, and two hours for the reload and validation."""
    wait = upgrade.wait_for_completion.timeout_seconds or 86400
    return wait + upgrade.drain_timeout_seconds + 7200


SKIP_LABEL = "nvidia.com/{driver}-driver-upgrade.skip"  # k8s-operator-libs: the controller leaves the node alone
UPGRADE_DRIVERS = ("gpu", "ofed")  # the GPU Operator's and the Network Operator's driver names
HOLD_AND_DRAIN = "HoldAndDrain"


def skip_labels(cluster: ClusterModel, rack: str, gpu: bool) -> dict[str, str]:
    """The skip labels of a node outside the maintenance racks (none without maintenance racks)."""
    maintenance = gpu_upgrade_settings(cluster).maintenance
    if not gpu or maintenance is None or not maintenance.racks or rack in maintenance.racks:
        return {}
    return {SKIP_LABEL.format(driver=d): "true" for d in UPGRADE_DRIVERS}


def queue_stop_policy(cluster: ClusterModel) -> dict[str, str]:
    """ClusterQueue spec fields of maintenance mode: stopPolicy HoldAndDrain while queues are held."""
    maintenance = gpu_upgrade_settings(cluster).maintenance
    return {"stopPolicy": HOLD_AND_DRAIN} if maintenance is not None and maintenance.hold_queues else {}

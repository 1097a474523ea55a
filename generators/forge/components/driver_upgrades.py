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

from typing import Any

# The settings, the labels and the upgrade states are shared with the alerts (forge.observability.
# lifecycle) and the rollout gate (forge.components.node_gate): they live one stage below, in
# forge.model.day_two, and are re-exported here for the components.
from forge.model.day_two import (GPU_OPERATOR, HOLD_AND_DRAIN, SKIP_LABEL, UPGRADE_DRIVERS, WORKLOAD_FLYTE, WORKLOAD_LABEL,
                           Maintenance, UpgradeSettings, WaitForCompletion, gpu_upgrade_settings, held_upgrade_seconds)
from forge.model.cluster import ClusterModel

__all__ = ["GPU_OPERATOR", "HOLD_AND_DRAIN", "SKIP_LABEL", "UPGRADE_DRIVERS", "WORKLOAD_FLYTE", "WORKLOAD_LABEL",
           "Maintenance", "UpgradeSettings", "WaitForCompletion", "gpu_upgrade_settings", "held_upgrade_seconds",
           "chart_upgrade_policy", "maintenance_operator_config", "queue_stop_policy", "rendered_upgrade_policy",
           "skip_labels", "upgrade_policy"]

MAINTENANCE_CONFIG_NAME = "default"  # the one MaintenanceOperatorConfig the maintenance operator reads
# The GPU Operator's upgrade controller holds a node in `validation-required` until these pods (its
# operator-validator DaemonSet: driver, toolkit, CUDA and plugin checks) run Ready on the new driver.
VALIDATOR_SELECTOR = "app=nvidia-operator-validator"


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

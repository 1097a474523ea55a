"""Issue 31: one bad GPU node must not hold every later wave. The root Application waits for each
wave's Applications to be Healthy, so the GPU Operator's health check maps a ClusterPolicy that is
`notReady` only on its per-node operands to Healthy (with a message forge promote reads), and keeps
Progressing/Degraded for the operator's own trouble. The objects are shaped as GPU Operator
v26.7.0 writes them (controllers/clusterpolicy_controller.go, internal/conditions)."""
from __future__ import annotations

import pytest

from forge.argocd.config import PER_NODE_MARK
from tests.argocd.test_bootstrap import health

CP = "resource.customizations.health.nvidia.com_ClusterPolicy"
DRIVER = "resource.customizations.health.nvidia.com_NVIDIADriver"


def cluster_policy(reason: str, message: str) -> dict:
    return {"status": {"state": "notReady", "conditions": [
        {"type": "Ready", "status": "False", "reason": "Error", "message": ""},
        {"type": "Error", "status": "True", "reason": reason, "message": message}]}}


@pytest.mark.parametrize("message", [
    # one H200 waiting for repair: its driver pod unavailable, the validator and plugin behind it
    "ClusterPolicy is not ready; states not ready: [state-driver state-operator-validation state-device-plugin]",
    # an OnDelete driver rollout, node by node
    "ClusterPolicy is not ready; states not ready: [state-driver]",
    # the per-pool NVIDIADriver rollout
    "ClusterPolicy is not ready; NVIDIADriver upgrade has not completed; one or more NVIDIADriver-owned Nodes are marked pending, in-progress, or failed",
])
def test_a_cluster_policy_not_ready_only_on_nodes_is_healthy_and_says_so(message):
    status, said = health(CP, cluster_policy("OperandNotReady", message))
    assert status == "Healthy"
    assert said.startswith(PER_NODE_MARK) and message in said


@pytest.mark.parametrize("reason, message", [
    ("OperandNotReady", "ClusterPolicy is not ready; states not ready: [pre-requisites]"),
    ("OperandNotReady", "ClusterPolicy is not ready; states not ready: [state-driver state-operator-metrics]"),
    ("ReconcileFailed", "Failed to reconcile state-driver: daemonsets.apps is forbidden"),
])
def test_the_operators_own_trouble_still_holds_the_wave(reason, message):
    status, said = health(CP, cluster_policy(reason, message))
    assert status == "Progressing" and message in said and not said.startswith(PER_NODE_MARK)


def test_an_nvidiadriver_waiting_for_its_pods_is_healthy_its_controllers_trouble_is_not():
    waiting = {"status": {"state": "notReady", "conditions": [
        {"type": "Error", "status": "True", "reason": "DriverNotReady", "message": "Waiting for driver pod to be ready"}]}}
    assert health(DRIVER, waiting)[0] == "Healthy"
    failed = {"status": {"state": "notReady", "conditions": [
        {"type": "Error", "status": "True", "reason": "ConflictingNodeSelector", "message": "overlaps nvidia-h200"}]}}
    assert health(DRIVER, failed)[0] == "Progressing"


def test_a_nic_cluster_policy_not_ready_still_holds():
    key = "resource.customizations.health.mellanox.com_NicClusterPolicy"
    assert health(key, cluster_policy("OperandNotReady", "states not ready: [state-driver]"))[0] == "Progressing"

"""The node gate (forge.pod_scripts.node_gate): the GPU driver rollout, and the DOCA driver's where the Network
Operator runs one, advances one node at a time, and only once the previous node passed its tests; a node entering a driver change, a repair or first
joining is held out of service by the untested taint until its tests pass. Synced with the GPU
Operator's Application, on clusters whose GPU nodes are tested before they serve:

* ConfigMap `forge-node-gate`: the script, and `config.json`: the GPU nodes in rollout order
  (rack by rack, as the inventory lists them), each tested node's test objects in the order they
  run (forge.components.node_tests.node_test_objects: the same objects as the node-test files),
  the taint, the pace (`max_parallel`), the maintenance racks, the drivers it gates (`gpu`, `ofed`);
* ConfigMap `forge-node-test-nccl`: the all-reduce script the NVLink and NCCL Jobs mount;
* a Deployment of one replica on the system nodes (system-cluster-critical), and least privilege:
  a ClusterRole that may only get and patch the cluster's GPU nodes, by name (the skip label, the
  taint, its annotations), and a Role that may create, get and delete Jobs and Services and create
  Events in this namespace, nothing else. RBAC cannot narrow `create` by name, so the Jobs it may
  create are bounded by the namespace (its Pod Security level) and by its ConfigMap, synced from Git.

The gate writes `nvidia.com/gpu-driver-upgrade.skip` (and `nvidia.com/ofed-driver-upgrade.skip`)
itself on the GPU nodes (every node but the next); NFD's maintenance-mode skip labels (forge.components.driver_upgrades.skip_labels) say the
same on the racks outside maintenance, and the gate opens only nodes inside them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forge.facts import versions

from forge.pod_scripts import node_gate
from forge.components.node_tests import NodeTests, node_test_objects
from forge.components.node_tests import allreduce
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.day_two import UPGRADE_DRIVERS, gpu_upgrade_settings
from forge.model.cluster import UNTESTED_TAINT_KEY, ClusterModel

NAME = "forge-node-gate"
IMAGE = "prerequisites-check"  # images in charts/versions.yaml: the pinned Python image
MOUNT = "/etc/forge/gate"
INTERVAL_SECONDS = 30
ALIVE = "/run/gate/alive"  # touched after every pass; the probes read its age (forge.pod_scripts.node_gate.probe)
# A node NotReady this long was powered off or lost, not a kubelet restart: tested again when back.
REPAIR_SECONDS = 600
RBAC = "rbac.authorization.k8s.io"


def enabled(cluster: ClusterModel) -> bool:
    return not cluster.cloud and any(n.tested_before_service for n in cluster.gpu_nodes)


def gated_drivers(cluster: ClusterModel) -> list[str]:
    """The upgrade controllers whose rollouts the gate holds: the GPU Operator's, and the Network
    Operator's DOCA driver where it runs one (k8s-operator-libs under the driver name `ofed`)."""
    return [d for d in UPGRADE_DRIVERS if d == "gpu" or cluster.ofed_driver]


def config(cluster: ClusterModel, namespace: str, settings: NodeTests, network_namespace: str) -> dict[str, Any]:
    upgrade = gpu_upgrade_settings(cluster)
    return {
        "namespace": namespace, "taint": UNTESTED_TAINT_KEY, "max_parallel": upgrade.max_parallel,
        "drivers": gated_drivers(cluster),
        "repair_seconds": REPAIR_SECONDS,
        "racks": list(upgrade.maintenance.racks) if upgrade.maintenance else [],
        "rack_of": {n.name: n.rack for n in cluster.gpu_nodes},
        "nodes": [n.name for n in cluster.gpu_nodes],
        "tests": node_test_objects(cluster, namespace, settings, network_namespace),
    }


def _rbac(cluster: ClusterModel, namespace: str) -> list[dict[str, Any]]:
    subject = [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": namespace}},
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": NAME, "namespace": namespace}, "rules": [
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get", "delete"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["create", "get", "delete"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": NAME, "namespace": namespace},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": NAME}, "subjects": subject},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": NAME}, "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"],
             "resourceNames": [n.name for n in cluster.gpu_nodes]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": NAME}, "subjects": subject},
    ]


def _probe(period: int) -> dict[str, Any]:
    command = ["python3", f"{MOUNT}/node_gate.py", f"{MOUNT}/config.json", f"--interval={INTERVAL_SECONDS}",
               f"--alive={ALIVE}", "--probe"]
    return {"exec": {"command": command}, "periodSeconds": period, "timeoutSeconds": 5, "failureThreshold": 1}


def _deployment(cluster: ClusterModel, namespace: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": NAME}
    container = {
        "name": "gate", "image": versions.image(IMAGE).ref,
        "command": ["python3", f"{MOUNT}/node_gate.py", f"{MOUNT}/config.json", f"--interval={INTERVAL_SECONDS}",
                    f"--alive={ALIVE}"],
        # Ready once a pass reached the API server (Argo CD's health waits for it); restarted when
        # a pass hangs for three intervals.
        "readinessProbe": _probe(period=10),
        "livenessProbe": {**_probe(period=INTERVAL_SECONDS), "initialDelaySeconds": 3 * INTERVAL_SECONDS},
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "gate", "mountPath": MOUNT, "readOnly": True},
                         {"name": "run", "mountPath": "/run/gate"}],
    }
    pod = {
        "serviceAccountName": NAME, "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,
        "containers": [container], "volumes": [{"name": "gate", "configMap": {"name": NAME}},
                    {"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}],
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "strategy": {"type": "Recreate"},  # never two gates at once
                     "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}}


def manifests(cluster: ClusterModel, namespace: str, settings: NodeTests, network_namespace: str) -> list[dict[str, Any]]:
    if not enabled(cluster):
        return []
    data = {node_gate.SCRIPT: Path(node_gate.__file__).read_text(encoding="utf-8"),
            "config.json": json.dumps(config(cluster, namespace, settings, network_namespace), indent=1, sort_keys=True) + "\n"}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": NAME, "namespace": namespace}, "data": data},
            allreduce.script(namespace), *_rbac(cluster, namespace), _deployment(cluster, namespace)]

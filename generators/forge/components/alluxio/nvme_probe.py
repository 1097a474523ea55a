"""The NVMe label from what is really mounted, not from the inventory.

The workers' tiers are hostPath volumes, and chart 0.6.54 writes them `type: DirectoryOrCreate`
(templates/_helpers.tpl, alluxio.worker.tieredstoreVolumes): after a reimage or a failed drive,
/mnt/nvme0 is an empty directory on the OS disk, and a worker there caches terabytes onto it. So:

- A probe DaemonSet per NVMe profile (on the nodes of that profile, by the inventory's profile
  label) checks every NVMe mount path of the profile with `mountpoint` each PROBE_SECONDS and
  writes the result as an NFD local feature file (`forge-nvme-mounted=true|false`, `+no-label`:
  a feature, not a label of its own) into nfd-worker's features.d folder on the host.
- One NodeFeatureRule labels `forge.exa.ai/nvme=true` where that feature is true. The workers and
  the S3 proxies select that label, so none is scheduled, or stays, on a node whose drives are
  not all mounted: when a mount goes, the feature turns false, nfd-master takes the label off and
  the DaemonSet controller removes the worker before it writes to the root disk.

The chart has no init-container value for the worker (0.6.54's worker.extraContainers are
sidecars, which cannot hold the worker back), so the check runs beside it, not inside its pod; a
worker pod created all the same on a node whose drives are not mounted is held in Init by
tier_check.py's admission-time init container.
`mountpoint` compares the path's device with its parent's: the probe sees each mount's parent
folder of the host (read-only, HostToContainer propagation), so a mount made on the host after
the probe started shows up too.
"""
from __future__ import annotations

import posixpath
from typing import Any

from forge.facts import versions
from forge.components.base import custom_resource
from forge.components.scheduling import SYSTEM_NODE_CRITICAL
from forge.model.cluster import NVME_LABEL, ClusterModel, NodeModel

FEATURE = "forge-nvme-mounted"  # the local feature's name (nfd: feature local.feature, this attribute)
FEATURES_DIR = "/etc/kubernetes/node-feature-discovery/features.d"  # nfd-worker's host folder (chart default)
FEATURE_FILE = "forge-nvme"
PROBE_SECONDS = 30
RULE_NAME = "forge-nvme-mounted"
HOST = "/host"


def node_features(node: NodeModel) -> dict[str, dict[str, str]]:
    """What nfd-worker reports on a healthy node of an NVMe profile: every drive mounted."""
    return {"local.feature": {FEATURE: "true"}} if node.nvme else {}


def label_rule() -> dict[str, Any]:
    return custom_resource({
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": RULE_NAME},
        "spec": {"rules": [{
            "name": RULE_NAME,
            "labels": {NVME_LABEL: "true"},
            "matchFeatures": [{"feature": "local.feature", "matchExpressions": {FEATURE: {"op": "IsTrue"}}}],
        }]},
    })


def probe_script(mounts: list[str]) -> str:
    """Every mount path a mount point (under HOST), else false; the file replaced atomically."""
    checks = " && ".join(f"mountpoint -q {HOST}{m}" for m in mounts)
    out = f"{HOST}{FEATURES_DIR}/{FEATURE_FILE}"
    tmp = f"{HOST}{FEATURES_DIR}/.{FEATURE_FILE}.tmp"  # nfd-worker skips dot files: never read half-written
    return "\n".join([
        "set -u",
        "while true; do",
        f"  if {checks}; then state=true; else state=false; fi",
        f"  printf '# +no-label\\n{FEATURE}=%s\\n' \"$state\" > {tmp} && mv {tmp} {out}",
        f"  sleep {PROBE_SECONDS}",
        "done",
    ]) + "\n"


def probes(cluster: ClusterModel, namespace: str, image_name: str) -> list[dict[str, Any]]:
    """One probe DaemonSet per NVMe profile, in the order of its first node."""
    profiles: dict[str, list[NodeModel]] = {}
    for node in cluster.nvme_nodes:
        profiles.setdefault(node.profile_name, []).append(node)
    return [probe(cluster, namespace, image_name, name, nodes) for name, nodes in profiles.items()]


def probe(cluster: ClusterModel, namespace: str, image_name: str, profile: str, nodes: list[NodeModel]) -> dict[str, Any]:
    mounts = [d.mount for d in nodes[0].nvme]
    parents = sorted({posixpath.dirname(m.rstrip("/")) or "/" for m in mounts})
    name = f"alluxio-nvme-probe-{profile}"[:63].rstrip("-")
    labels = {"app": "alluxio-nvme-probe", "forge.exa.ai/profile": profile}
    volumes = [{"name": "features", "hostPath": {"path": FEATURES_DIR, "type": "DirectoryOrCreate"}}]
    volume_mounts = [{"name": "features", "mountPath": f"{HOST}{FEATURES_DIR}"}]
    for i, parent in enumerate(parents):
        volumes.append({"name": f"parent-{i}", "hostPath": {"path": parent, "type": "Directory"}})
        volume_mounts.append({"name": f"parent-{i}", "mountPath": f"{HOST}{parent}", "readOnly": True,
                              "mountPropagation": "HostToContainer"})
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # On the profile's nodes by the inventory's label: never by the label it decides.
                    "nodeSelector": {"forge.exa.ai/profile": profile},
                    "tolerations": cluster.daemon_tolerations_for(nodes),
                    "priorityClassName": SYSTEM_NODE_CRITICAL,
                    "automountServiceAccountToken": False,
                    "terminationGracePeriodSeconds": 5,
                    # Root: it writes into nfd-worker's root-owned host folder.
                    "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "probe",
                        "image": versions.image(image_name).ref,  # util-linux's mountpoint; already on these nodes
                        "command": ["/bin/bash", "-c", probe_script(mounts)],
                        # Live while the loop still rewrites the feature file (a hung mountpoint
                        # would leave it stale); ready once it wrote it at least once.
                        "livenessProbe": {"exec": {"command": ["/bin/bash", "-c", (
                            f"test $(( $(date +%s) - $(stat -c %Y {HOST}{FEATURES_DIR}/{FEATURE_FILE}) )) -lt {4 * PROBE_SECONDS}")]},
                                          "initialDelaySeconds": 2 * PROBE_SECONDS, "periodSeconds": PROBE_SECONDS},
                        "readinessProbe": {"exec": {"command": ["test", "-s", f"{HOST}{FEATURES_DIR}/{FEATURE_FILE}"]},
                                           "periodSeconds": PROBE_SECONDS},
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}},
                        "volumeMounts": volume_mounts,
                    }],
                    "volumes": volumes,
                },
            },
        },
    }

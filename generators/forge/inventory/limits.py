"""Documented limits and silent overrides refused with file:line (issue 26).

- nodes per cluster: Kubernetes' own scale limit, 5,000 nodes (kubernetes.io "Considerations for
  large clusters"); render and validation past it would run for tens of minutes;
- labels per node: each node's labels go into a NodeFeatureRule (and the Node); Argo CD applies
  an object with its last-applied copy in an annotation, which Kubernetes caps at 256 KiB for all
  of an object's annotations, so labels are bounded well below that (at most 100 per node);
- name lengths, from the longest name forge builds from them (limits in forge.fleet.scope):
  Application `<cluster>-<component>` is Argo CD's `app.kubernetes.io/instance` label value, at
  most 63 characters; AppProject `<project>-bootstrap`, at most 63;
- a hand label `nvidia.com/mig.config` that disagrees with the node's mig_layout (the quotas count
  the layout's slices, the GPU operator would apply the label's);
- (forge.inventory.strings.mount_path) an NVMe mount not in normal form (`/mnt//nvme0/`, `/mnt/../etc`), or under a system folder: it
  becomes a hostPath into the cache workers, which run as root.
"""
from __future__ import annotations

from typing import Any, Iterator

from forge.errors import Problem
from forge.inventory.located import LoadedInventory, line_for

MAX_NODES = 5000
MAX_LABELS_PER_NODE = 100
MAX_OBJECT_BYTES = 256 * 1024  # Kubernetes' limit on an object's annotations (last-applied copy)
MAX_SSA_OBJECT_BYTES = 1024 * 1024  # server-side apply keeps no copy; etcd takes requests up to 1.5 MiB
MAX_NAME = 63  # a label value, a DNS label
MIG_CONFIG_LABEL = "nvidia.com/mig.config"  # forge.model.cluster.MIG_CONFIG_LABEL


def raw_limits(file: str, data: dict[str, Any], lines: dict) -> list[Problem]:
    """Before the shape is validated: a 50,000-node list is refused without building 50,000 nodes."""
    nodes = data.get("nodes")
    if isinstance(nodes, list) and len(nodes) > MAX_NODES:
        return [Problem(file, line_for(lines, ("nodes",)), "nodes",
                        f"{len(nodes):,} nodes: Kubernetes supports at most {MAX_NODES:,} nodes per cluster; "
                        "split the fleet into clusters")]
    return []


def node_rules(loaded: LoadedInventory) -> Iterator[Problem]:
    inv = loaded.inventory
    for i, node in enumerate(inv.nodes):
        if len(node.labels) > MAX_LABELS_PER_NODE:
            yield loaded.problem(("nodes", i, "labels"), f"{len(node.labels)} labels: at most {MAX_LABELS_PER_NODE} per node "
                                 f"(they go into one NodeFeatureRule, which Argo CD must apply under {MAX_OBJECT_BYTES // 1024} KiB)")
        if MIG_CONFIG_LABEL in node.labels:
            profile = inv.profiles.get(node.profile)
            layout = node.mig_layout or (profile.mig_layout if profile else None)
            given = node.labels[MIG_CONFIG_LABEL]
            if given != layout:
                yield loaded.problem(("nodes", i, "labels", MIG_CONFIG_LABEL),
                                     f"'{given}' disagrees with the node's MIG layout ({layout or 'none'}): forge sets this "
                                     "label from mig_layout, and quotas count the layout's slices; set mig_layout instead "
                                     "and remove the label")


def name_lengths(loaded: LoadedInventory, components: list[str]) -> Iterator[Problem]:
    """The longest names forge builds from the cluster's and project's names fit in 63 characters."""
    cluster = loaded.inventory.cluster
    longest = max(["root", *components], key=len)
    app = f"{cluster.name}-{longest}"
    if len(app) > MAX_NAME:
        yield loaded.problem(("cluster", "name"),
                             f"'{cluster.name}' makes the Argo CD Application '{app}' ({len(app)} characters): Argo CD labels "
                             f"its objects with the Application's name, at most {MAX_NAME}; a cluster name may be at most "
                             f"{MAX_NAME - 1 - len(longest)} characters here")
    project = f"{cluster.argocd.project}-bootstrap"
    if len(project) > MAX_NAME:
        yield loaded.problem(("cluster", "argocd", "project"),
                             f"makes the AppProject '{project}' ({len(project)} characters): at most {MAX_NAME}; "
                             f"a project name may be at most {MAX_NAME - len('-bootstrap')} characters")

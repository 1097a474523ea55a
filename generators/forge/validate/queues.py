"""Checks across a cluster's rendered Kueue objects (they hold only together):

- every Namespace that runs Flyte executions (label forge.exa.ai/flyte-project) has the LocalQueue
  Flyte's tasks name, feeding a ClusterQueue that exists and whose namespaceSelector admits it;
- every WorkloadPriorityClass has a PriorityClass of the same name and value (Kueue's priority of
  a job and the scheduler's priority of its pods agree);
- every ResourceFlavor names an existing Topology, and every node of the flavor carries each
  level's label (the rack labels node-feature-discovery sets from the inventory).
Keyed on kinds and labels only: nothing runs when the cluster renders no ClusterQueue.
"""
from __future__ import annotations

from typing import Any, Iterable

from forge.model.cluster import ClusterModel
from forge.model.queues import FLYTE_PROJECT_LABEL, LOCAL_QUEUE
from forge.validate.failure import Failure
from forge.validate.objects import object_id

NODE_SET_LABELS = ("kubernetes.io/hostname",)  # set by the kubelet, not by the inventory


def _by_kind(objects: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for component, objs in objects.items():
        for obj in objs:
            out.setdefault(str(obj.get("kind")), []).append((component, obj))
    return out


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def queue_failures(cluster: ClusterModel, objects: dict[str, list[dict[str, Any]]]) -> list[Failure]:
    kinds = _by_kind(objects)
    if not kinds.get("ClusterQueue"):
        return []
    out = list(_local_queues(cluster.name, kinds))
    out += _priority_classes(cluster.name, kinds)
    out += _topologies(cluster, kinds)
    return out


def _local_queues(cluster: str, kinds) -> Iterable[Failure]:
    queues = {_name(o): o for _, o in kinds.get("ClusterQueue", [])}
    local = {((o.get("metadata") or {}).get("namespace"), _name(o)): (c, o) for c, o in kinds.get("LocalQueue", [])}
    for component, ns in kinds.get("Namespace", []):
        labels = (ns.get("metadata") or {}).get("labels") or {}
        if FLYTE_PROJECT_LABEL not in labels:
            continue
        found = local.get((_name(ns), LOCAL_QUEUE))
        if found is None:
            yield Failure(cluster, component, object_id(ns), "", f"runs Flyte executions but has no LocalQueue '{LOCAL_QUEUE}'")
            continue
        lq_component, lq = found
        target = (lq.get("spec") or {}).get("clusterQueue")
        cq = queues.get(target)
        if cq is None:
            yield Failure(cluster, lq_component, object_id(lq), "spec.clusterQueue", f"no ClusterQueue '{target}'")
            continue
        wanted = ((cq.get("spec") or {}).get("namespaceSelector") or {}).get("matchLabels") or {}
        if any(labels.get(k) != v for k, v in wanted.items()):
            yield Failure(cluster, lq_component, object_id(lq), "spec.clusterQueue",
                          f"ClusterQueue '{target}' does not admit namespace {_name(ns)} (its namespaceSelector wants {wanted})")


def _priority_classes(cluster: str, kinds) -> Iterable[Failure]:
    classes = {_name(o): o.get("value") for _, o in kinds.get("PriorityClass", [])}
    for component, wpc in kinds.get("WorkloadPriorityClass", []):
        name = _name(wpc)
        if name not in classes:
            yield Failure(cluster, component, object_id(wpc), "", f"no PriorityClass '{name}' to match it")
        elif classes[name] != wpc.get("value"):
            yield Failure(cluster, component, object_id(wpc), "value", f"{wpc.get('value')} differs from PriorityClass '{name}' ({classes[name]})")


def _topologies(cluster: ClusterModel, kinds) -> Iterable[Failure]:
    levels = {_name(o): [lv.get("nodeLabel") for lv in (o.get("spec") or {}).get("levels") or []]
              for _, o in kinds.get("Topology", [])}
    labelled = [(n, n.labels) for n in cluster.nodes]  # a node's labels are derived: once, not per flavor and key
    for component, flavor in kinds.get("ResourceFlavor", []):
        spec = flavor.get("spec") or {}
        name = spec.get("topologyName")
        if name is None:
            continue
        if name not in levels:
            yield Failure(cluster.name, component, object_id(flavor), "spec.topologyName", f"no Topology '{name}'")
            continue
        selector = spec.get("nodeLabels") or {}
        nodes = [(n, labels) for n, labels in labelled if all(labels.get(k) == v for k, v in selector.items())]
        if not nodes:
            yield Failure(cluster.name, component, object_id(flavor), "spec.nodeLabels", "selects no node of the inventory")
        for node, labels in nodes:
            missing = [lv for lv in levels[name] if lv not in NODE_SET_LABELS and lv not in labels]
            if missing:
                yield Failure(cluster.name, component, object_id(flavor), "spec.topologyName",
                              f"node {node.name} lacks the Topology's level label(s) {', '.join(missing)}")

"""Risk flags: what a reviewer must see before the field-level detail.

Every rule keys on data, never on a component's code: object kinds and field paths (a DaemonSet's
pod template, a NicClusterPolicy's ofedDriver), Helm values paths of a chart known by its name in
the Argo CD Application that installs it, and label keys. So a component added later is covered
as soon as it renders such objects or installs such a chart. Node counts come from the
inventory (the working tree's, else the base's). Lowered quotas and capacity: forge.diff.amounts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from forge.diff.amounts import capacity_flags, quantity, quota_flags
from forge.diff.driver_risks import driver_pair_flags
from forge.diff.flag import Flag, names
from forge.diff.objects import MISSING, VALUES_KIND, ObjectChange, keys_of
from forge.diff.queue_risks import queue_flags
from forge.diff.revisions import Side
from forge.facts.hardware import PCI_VENDOR_MELLANOX, PCI_VENDOR_NVIDIA
from forge.model.cluster import LABEL_DOMAIN, MIG_CONFIG_LABEL, ClusterModel, NodeModel

BOOTSTRAP = "argocd"
PRUNE_FALSE = "Prune=false"
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"


# ---- node scopes: which nodes run a DaemonSet ---------------------------------------------------

def _has_nic(node: NodeModel, test: Callable) -> bool:
    return any(test(model) for _, model in node.nics())


SCOPES: dict[str, tuple[str, str, Callable[[NodeModel], bool]]] = {  # singular, plural, test
    "gpu": ("GPU node", "GPU nodes", lambda n: n.gpu is not None),
    "mig": ("MIG-capable GPU node", "MIG-capable GPU nodes", lambda n: n.mig_layout is not None),
    # The DOCA/OFED driver container and the RDMA device plugins run where NVIDIA/Mellanox NICs are.
    "mellanox": ("node with NVIDIA/Mellanox NICs", "nodes with NVIDIA/Mellanox NICs",
                 lambda n: _has_nic(n, lambda m: m.vendor_id == PCI_VENDOR_MELLANOX)),
    "all": ("node", "nodes", lambda n: True),
}

# Helm values of a chart (known by its chart name) whose change rolls a DaemonSet on GPU or NIC
# nodes: top-level key -> (what restarts, scope, consequence). Keys not listed (operator, dcgm,
# node-feature-discovery rules) restart nothing that GPU or network traffic depends on.
@dataclass(frozen=True)
class Restart:
    what: str  # the DaemonSet(s) that roll, as a noun phrase
    scope: str  # key of SCOPES: which inventory nodes run them
    consequence: str
    level: str = "high"


_DRIVER = Restart("the NVIDIA driver DaemonSet", "gpu", "the kernel driver is unloaded and reloaded: GPU pods on each node are evicted first")
_OFED = Restart("the DOCA/OFED driver DaemonSet", "mellanox", "the NIC driver is reloaded: RDMA traffic on each node stops until it is back")
_RDMA_PLUGIN = Restart("the RDMA shared device plugin DaemonSet", "mellanox", "rdma/* resources are re-registered on each node")
_SRIOV_PLUGIN = Restart("the SR-IOV device plugin DaemonSet", "mellanox", "SR-IOV resources are re-registered on each node")
_GPU_COMMON = Restart("every GPU Operator DaemonSet (common settings)", "gpu", "every operand pod on each node is recreated, the driver included")
_NIC_COMMON = Restart("every Network Operator DaemonSet (placement or tolerations)", "mellanox",
                      "every operand pod on each node is recreated, the DOCA/OFED driver included")

VALUES_RESTARTS: dict[str, dict[str, Restart]] = {
    "gpu-operator": {
        "driver": _DRIVER,
        "toolkit": Restart("the container toolkit DaemonSet", "gpu", "containerd is reconfigured and restarted on each node"),
        "devicePlugin": Restart("the device plugin DaemonSet", "gpu", "nvidia.com/gpu is re-registered on each node"),
        "mig": Restart("the device plugin and GPU feature discovery (MIG strategy)", "gpu", "GPU resources are re-advertised on each node"),
        "migManager": Restart("the MIG manager DaemonSet", "mig", "mig-parted re-applies the node's layout"),
        "daemonsets": _GPU_COMMON,
    },
    "network-operator": {"ofedDriver": _OFED, "rdmaSharedDevicePlugin": _RDMA_PLUGIN, "sriovDevicePlugin": _SRIOV_PLUGIN},
}

# The same for custom resources whose operator turns spec sections into DaemonSets: (group, kind)
# -> spec key -> Restart; "*" = any change of the spec.
OBJECT_RESTARTS: dict[tuple[str, str], dict[str, Restart]] = {
    ("mellanox.com", "NicClusterPolicy"): {
        "ofedDriver": _OFED, "rdmaSharedDevicePlugin": _RDMA_PLUGIN, "sriovDevicePlugin": _SRIOV_PLUGIN,
        "nodeAffinity": _NIC_COMMON, "tolerations": _NIC_COMMON,
        "secondaryNetwork": Restart("the Multus and CNI plugin DaemonSets", "mellanox",
                                    "running pods keep their interfaces; pods starting meanwhile wait for the plugins", "medium"),
    },
    ("nvidia.com", "ClusterPolicy"): {
        key: VALUES_RESTARTS["gpu-operator"][key] for key in ("driver", "toolkit", "devicePlugin", "migManager", "daemonsets")
    },
    ("nvidia.com", "NVIDIADriver"): {"*": _DRIVER},
}

# Settings read by the operators' upgrade controllers, not by the DaemonSets: changing them rolls
# nothing by itself.
NO_RESTART = {("ofedDriver", "upgradePolicy"), ("driver", "upgradePolicy")}

# Node labels we can resolve to a scope when a DaemonSet selects by them.
_SCOPE_BY_LABEL = {
    f"feature.node.kubernetes.io/pci-{PCI_VENDOR_NVIDIA}.present": "gpu",
    "nvidia.com/gpu.present": "gpu",
    f"feature.node.kubernetes.io/pci-{PCI_VENDOR_MELLANOX}.present": "mellanox",
    "network.nvidia.com/operator.mofed.wait": "mellanox",
}


def _nodes(cluster: ClusterModel | None, scope: str) -> list[str] | None:
    if cluster is None:
        return None
    return [n.name for n in cluster.nodes if SCOPES[scope][2](n)]


def _count(cluster: ClusterModel | None, scope: str) -> str:
    nodes = _nodes(cluster, scope)
    if nodes is None:
        return f"every {SCOPES[scope][0]} (node count unknown: the inventory did not load)"
    return f"{len(nodes)} {SCOPES[scope][0 if len(nodes) == 1 else 1]}" + (f" ({names(nodes)})" if nodes else "")


def _selector_nodes(cluster: ClusterModel | None, selector: dict[str, str]) -> str:
    """How many inventory nodes a DaemonSet's nodeSelector picks, when we can tell."""
    if cluster is None:
        return "an unknown number of nodes"
    scopes = {_SCOPE_BY_LABEL[k] for k in selector if k in _SCOPE_BY_LABEL}
    rest = {k: v for k, v in selector.items() if k not in _SCOPE_BY_LABEL}
    unknown = [k for k in rest if not (k.startswith(f"{LABEL_DOMAIN}/") or k == MIG_CONFIG_LABEL
                                      or any(k in n.labels for n in cluster.nodes))]
    if unknown:
        return f"the nodes labelled {', '.join(unknown)} (not an inventory label: count unknown)"
    picked = [n.name for n in cluster.nodes
              if all(SCOPES[s][2](n) for s in scopes) and all(n.labels.get(k) == str(v) for k, v in rest.items())]
    return f"{len(picked)} node{'s' if len(picked) != 1 else ''}" + (f" ({names(picked)})" if picked else "")


# ---- the rules ----------------------------------------------------------------------------------

def _sync_options(obj: dict[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get("argocd.argoproj.io/sync-options", ""))


def prune_flags(changes: list[ObjectChange]) -> Iterable[Flag]:
    added = {(c.cluster, c.ident): c.component for c in changes if c.action == "added"}
    groups: dict[tuple[str, str, str], list[str]] = {}
    for c in changes:
        if c.action != "removed" or c.ident.kind == VALUES_KIND:
            continue
        if (c.cluster, c.ident) in added:
            yield Flag("medium", c.cluster, c.component, "prune",
                       f"{c.ident} moves to Application of {added[(c.cluster, c.ident)]}: if the old Application "
                       "syncs first, Argo CD deletes it before the new one re-creates it")
        elif PRUNE_FALSE in _sync_options(c.old or {}):
            yield Flag("medium", c.cluster, c.component, "prune",
                       f"{c.ident} is no longer in git but has {PRUNE_FALSE}: Argo CD leaves it running; delete it by hand if that is the intent")
        elif c.ident.group == "argoproj.io" and c.ident.kind == "Application":
            keeps = RESOURCES_FINALIZER not in ((c.old or {}).get("metadata") or {}).get("finalizers", [])
            yield Flag("high", c.cluster, c.component, "prune",
                       f"Argo CD deletes {c.ident}" + (": it has no resources finalizer, so what it deployed stays, unmanaged"
                                                         if keeps else " and everything it deployed"))
        elif c.ident.group == "apiextensions.k8s.io":
            continue  # crd_flags says more
        else:
            groups.setdefault((c.cluster, c.component, "high"), []).append(str(c.ident))
    for (cluster, component, level), objs in groups.items():
        yield Flag(level, cluster, component, "prune", f"Argo CD prunes {len(objs)} object{'s' if len(objs) != 1 else ''}: {names(objs)}")


def crd_flags(changes: list[ObjectChange]) -> Iterable[Flag]:
    for c in changes:
        if c.ident.group != "apiextensions.k8s.io" or c.ident.kind != "CustomResourceDefinition":
            continue
        if c.action == "removed":
            yield Flag("high", c.cluster, c.component, "crd", f"CRD {c.ident.name} is removed: deleting it deletes every custom resource of that kind")
        elif c.action == "added":
            yield Flag("low", c.cluster, c.component, "crd", f"new CRD {c.ident.name}")
        else:
            versions = [f.where for f in c.fields if keys_of(f.path)[:2] == ("spec", "versions")]
            what = "its schema or served versions" if versions else "its definition"
            yield Flag("high", c.cluster, c.component, "crd",
                       f"CRD {c.ident.name} changes {what} ({len(c.fields)} field{'s' if len(c.fields) != 1 else ''}): every custom resource of that kind is affected")


def restart_flags(changes: list[ObjectChange], charts: dict[tuple[str, str], str], clusters: dict[str, ClusterModel]) -> Iterable[Flag]:
    for c in changes:
        cluster = clusters.get(c.cluster)
        if c.action == "added":
            yield from _new_operands(c, charts, cluster)
            continue
        if c.action != "changed":
            continue
        if c.ident.kind == VALUES_KIND:
            rules = VALUES_RESTARTS.get(charts.get((c.cluster, c.component), ""), {})
            yield from _rule_flags(c, rules, (), cluster, f"Helm values of chart {charts.get((c.cluster, c.component))}")
        elif (c.ident.group, c.ident.kind) in OBJECT_RESTARTS:
            yield from _rule_flags(c, OBJECT_RESTARTS[(c.ident.group, c.ident.kind)], ("spec",), cluster, str(c.ident))
        elif c.ident.group == "apps" and c.ident.kind == "DaemonSet":
            template = [f.where for f in c.fields if keys_of(f.path)[:2] == ("spec", "template")]
            if template:
                spec = (((c.new or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
                yield Flag("high", c.cluster, c.component, "restart",
                           f"{c.ident}: its pod template changes ({names(template, 3)}), so its pods restart on "
                           f"{_selector_nodes(cluster, spec.get('nodeSelector') or {})}")


def _rule_flags(c: ObjectChange, rules: dict[str, Restart], prefix: tuple[str, ...],
                cluster: ClusterModel | None, source: str) -> Iterable[Flag]:
    hits: dict[str, list[str]] = {}
    for f in c.fields:
        keys = keys_of(f.path)
        if keys[:len(prefix)] != prefix or keys[len(prefix):len(prefix) + 2] in NO_RESTART:
            continue
        key = "*" if "*" in rules else (keys[len(prefix)] if len(keys) > len(prefix) else "")
        if key in rules:
            hits.setdefault(key, []).append(f.where)
    for key, paths in hits.items():
        rule = rules[key]
        yield Flag(rule.level, c.cluster, c.component, "restart",
                   f"{source} change {names(paths, 3)}: restarts {rule.what} on {_count(cluster, rule.scope)}; {rule.consequence}")


def _new_operands(c: ObjectChange, charts: dict[tuple[str, str], str], cluster: ClusterModel | None) -> Iterable[Flag]:
    """A new operator policy (or a chart installed on a cluster for the first time) starts its
    node DaemonSets: the drivers among them reload on every node they land on."""
    if c.ident.kind == VALUES_KIND:
        rules, present, source = VALUES_RESTARTS.get(charts.get((c.cluster, c.component), ""), {}), c.new or {}, \
            f"new chart {charts.get((c.cluster, c.component))} on {c.cluster}"
    else:
        rules, present, source = OBJECT_RESTARTS.get((c.ident.group, c.ident.kind), {}), (c.new or {}).get("spec") or {}, f"new {c.ident}"
    for key, rule in rules.items():
        if (key == "*" or key in present) and rule.what in (_DRIVER.what, _OFED.what):
            yield Flag(rule.level, c.cluster, c.component, "restart",
                       f"{source}: starts {rule.what} on {_count(cluster, rule.scope)}; {rule.consequence}")


def mig_flags(changes: list[ObjectChange]) -> Iterable[Flag]:
    """A node whose MIG layout label changes is re-partitioned by mig-manager."""
    moves: dict[tuple[str, str], list[str]] = {}
    for c in changes:
        if c.action != "changed":
            continue
        for f in c.fields:
            if keys_of(f.path)[-1:] == (MIG_CONFIG_LABEL,):
                node = _node_of(c.new or {}) or c.ident.name
                moves.setdefault((c.cluster, c.component), []).append(f"{node} ({_short(f.old)} -> {_short(f.new)})")
    for (cluster, component), nodes in moves.items():
        yield Flag("high", cluster, component, "mig",
                   f"MIG layout changes on {len(nodes)} node{'s' if len(nodes) != 1 else ''}: {names(nodes)}; "
                   "mig-manager evicts the GPU pods there and re-partitions the GPUs")


def _short(value: Any) -> str:
    return "none" if value is MISSING else str(value)


def _node_of(obj: dict[str, Any]) -> str | None:
    """The node a per-node NodeFeatureRule matches by name (system.name nodename In [x])."""
    for rule in ((obj.get("spec") or {}).get("rules") or []):
        for feature in rule.get("matchFeatures") or []:
            values = (((feature.get("matchExpressions") or {}).get("nodename") or {}).get("value")) or []
            if feature.get("feature") == "system.name" and len(values) == 1:
                return str(values[0])
    return None


def chart_flags(changes: list[ObjectChange], base: Side, head: Side, clusters: dict[str, ClusterModel]) -> Iterable[Flag]:
    seen: set[str] = set()
    for c in changes:
        if c.action != "changed" or c.ident.group != "argoproj.io" or c.ident.kind != "Application":
            continue
        component = _app_component(c.new or {}) or c.component
        old_sources = _sources(c.old or {})
        for source in _sources(c.new or {}):
            chart = source.get("chart")
            before = next((s for s in old_sources if chart and s.get("chart") == chart), None)
            if before and before.get("targetRevision") != source.get("targetRevision"):
                seen.add(str(chart))
                operands = ""
                rules = VALUES_RESTARTS.get(str(chart), {})
                if rules:
                    scope = next(iter(rules.values())).scope
                    operands = f"; its DaemonSets may roll on {_count(clusters.get(c.cluster), scope)}"
                yield Flag("medium", c.cluster, component, "chart",
                           f"chart {chart} {before.get('targetRevision')} -> {source.get('targetRevision')} "
                           f"(Application {c.ident.name}): new templates and CRDs are applied on sync{operands}; "
                           "read the chart's release notes")
            elif before and before.get("repoURL") != source.get("repoURL"):
                yield Flag("medium", c.cluster, component, "chart",
                           f"chart {chart} now comes from {source.get('repoURL')} (was {before.get('repoURL')})")
            elif not chart and "path" in source:
                old_git = next((s for s in old_sources if s.get("path") == source.get("path")), None)
                if old_git and old_git.get("targetRevision") != source.get("targetRevision"):
                    yield Flag("medium", c.cluster, component, "git",
                               f"Application {c.ident.name} follows git revision {source.get('targetRevision')} (was {old_git.get('targetRevision')})")
    for key, pin in sorted(head.chart_versions.items()):
        old = base.chart_versions.get(key)
        if old and old.get("version") != pin.get("version") and pin.get("chart") not in seen:
            yield Flag("low", "*", key, "chart",
                       f"charts/versions.yaml: {key} {old.get('version')} -> {pin.get('version')} (no cluster's Application uses it)")


def _app_component(app: dict[str, Any]) -> str | None:
    """The component an Application installs: the overlay folder its git source points at."""
    for source in _sources(app):
        match = re.match(r"^overlays/[^/]+/([^/]+)/?$", str(source.get("path", "")))
        if match:
            return match.group(1)
    return None


def _sources(app: dict[str, Any]) -> list[dict[str, Any]]:
    spec = app.get("spec") or {}
    return list(spec.get("sources") or ([spec["source"]] if spec.get("source") else []))


def chart_of_values(sides: Iterable[Side]) -> dict[tuple[str, str], str]:
    """(cluster, component) -> the chart its values file feeds, read from the Applications."""
    charts: dict[tuple[str, str], str] = {}
    pattern = re.compile(r"^\$values/overlays/([^/]+)/([^/]+)/values\.yaml$")
    for side in sides:
        for (cluster, component), objs in side.objects.items():
            if component != BOOTSTRAP:
                continue
            for ident, obj in objs.items():
                if ident.kind != "Application":
                    continue
                for source in _sources(obj):
                    for value_file in ((source.get("helm") or {}).get("valueFiles") or []):
                        match = pattern.match(str(value_file))
                        if match and source.get("chart"):
                            charts.setdefault((match.group(1), match.group(2)), str(source["chart"]))
    return charts


def all_flags(changes: list[ObjectChange], base: Side, head: Side) -> list[Flag]:
    clusters = {**base.clusters, **head.clusters}
    charts = chart_of_values([head, base])
    flags = [
        *driver_pair_flags(changes, charts), *prune_flags(changes), *crd_flags(changes), *restart_flags(changes, charts, clusters),
        *mig_flags(changes), *quota_flags(changes), *queue_flags(changes), *chart_flags(changes, base, head, clusters),
        *capacity_flags(base, head),
    ]
    return sorted(set(flags), key=lambda f: f.sort_key)


__all__ = ["Flag", "all_flags", "quantity"]

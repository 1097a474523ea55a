"""The inventory's nodes as Node objects, labelled and tainted as the cluster's own agents would
leave them, with the allocatable the device plugins would advertise.

- Labels and taints come from forge's rendered NodeFeatureRules, evaluated here the way
  nfd-master evaluates them against what nfd-worker reports of each node: `system.name`'s
  `nodename`, and what forge's own agents make it report on a healthy node
  (`Component.node_features`, e.g. the local feature file of Alluxio's NVMe probe). A rule on any
  other feature is refused by name rather than guessed. So the box sees what forge's rules set.
- GPU nodes also get what GPU Feature Discovery and the GPU Operator set (`nvidia.com/gpu.*`,
  `nvidia.com/mig.strategy`, `nvidia.com/mig.config.state=success`: the layout applied).
- Control-plane nodes get the role label and the NoSchedule taint kubeadm sets.
- On a cloud cluster only the system pool's nodes (the managed node group, up to its max_count)
  are made, with the labels the inventory asks it to carry: the nodes of Karpenter's pools are
  made by the real Karpenter in the box (forge.twin.karpenter) when pods wait for them, from the
  rendered NodePools, as on EKS.
- Allocatable is forge.model.capacity's per-node figure (threads, GiB, whole GPUs, each MIG profile,
  each RDMA resource): the same numbers the queues were sized from. Pods: the kubelet's 110.
"""
from __future__ import annotations

from typing import Any, Iterable

from forge.model.capacity import MEMORY, node_resources
from forge.components import Component
from forge.errors import ForgeError
from forge.model.cluster import ClusterModel, NodeModel
from forge.twin.controlplane import KWOK_ANNOTATION

CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
NFD_DEFAULT_LABEL_NS = "feature.node.kubernetes.io"  # what nfd-master prefixes an unprefixed label with
NFD_OWN_NAMESPACES = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")
MAX_PODS = 110  # the kubelet's default


Features = dict[str, dict[str, str]]  # feature -> attribute -> value, as nfd-worker reports them


def _expression_matches(value: str | None, expr: dict[str, Any]) -> bool:
    """nfd's match operators on one attribute (None: the node does not report it)."""
    op, want = expr.get("op"), [str(v) for v in expr.get("value") or []]
    checks = {"In": lambda: value in want, "NotIn": lambda: value is not None and value not in want,
              "Exists": lambda: value is not None, "DoesNotExist": lambda: value is None,
              "IsTrue": lambda: value == "true", "IsFalse": lambda: value == "false"}
    if op not in checks:
        raise ValueError(op)
    return checks[op]()


def rule_applies(rule: dict[str, Any], features: Features, where: str, known: frozenset[str] = frozenset()) -> bool:
    """Whether a NodeFeatureRule rule matches a node reporting `features` (all its matchFeatures,
    or any of matchAny). A feature no node of the box can report (neither system.name nor one a
    component declares: `known`) is refused by name; one this node does not report matches nothing."""
    def term_matches(term: dict[str, Any]) -> bool:
        feature = str(term.get("feature"))
        if feature not in features and feature not in known:
            raise ForgeError(f"{where}: rule {rule.get('name')!r} matches on feature {feature}, which no node of the box "
                             "reports: the box knows system.name and what components declare (Component.node_features)")
        for attribute, expr in (term.get("matchExpressions") or {}).items():
            try:
                if not _expression_matches(features.get(feature, {}).get(attribute), expr):
                    return False
            except ValueError as bad:
                raise ForgeError(f"{where}: rule {rule.get('name')!r}: operator {bad} is not one the box evaluates "
                                 "(In, NotIn, Exists, DoesNotExist, IsTrue, IsFalse)") from None
        return True

    if rule.get("matchAny"):
        return any(all(term_matches(t) for t in a.get("matchFeatures") or []) for a in rule["matchAny"])
    return all(term_matches(t) for t in rule.get("matchFeatures") or [])


def nfd_refuses(key: str) -> str | None:
    """Why nfd-master 0.19 drops a label or taint key (pkg/apis/nfd/validate), or None: it
    publishes no key in kubernetes.io or a subdomain of it, but for its own feature./profile.
    namespaces."""
    ns = key.rpartition("/")[0]
    if ns == "kubernetes.io" or ns.endswith(".kubernetes.io"):
        if ns not in NFD_OWN_NAMESPACES and not ns.endswith(tuple("." + n for n in NFD_OWN_NAMESPACES)):
            return f"nfd-master publishes no key in namespace {ns}"
    return None


def nfd_results(rules: Iterable[tuple[dict[str, Any], str]], node: str, features: Features | None = None,
                known: frozenset[str] = frozenset()) -> tuple[dict[str, str], list[dict[str, str]], list[str]]:
    """(labels, taints, findings) every NodeFeatureRule (object, where it was written) gives
    `node`, which reports `features` besides its name; findings say what nfd-master would drop."""
    features = {"system.name": {"nodename": node}, **(features or {})}
    labels: dict[str, str] = {}
    taints: list[dict[str, str]] = []
    findings: list[str] = []
    for obj, where in rules:
        for rule in (obj.get("spec") or {}).get("rules") or []:
            if not rule_applies(rule, features, where, known):
                continue
            for key, value in (rule.get("labels") or {}).items():
                key = key if "/" in key else f"{NFD_DEFAULT_LABEL_NS}/{key}"
                why = nfd_refuses(key)
                if why:
                    findings.append(f"{where}: rule {rule.get('name')!r}: label {key} on {node}: {why}")
                else:
                    labels[key] = str(value)
            for taint in rule.get("taints") or []:
                why = nfd_refuses(str(taint.get("key", ""))) if "/" in str(taint.get("key", "")) else "an unprefixed taint key"
                if why:
                    findings.append(f"{where}: rule {rule.get('name')!r}: taint {taint.get('key')} on {node}: {why}")
                elif taint not in taints:
                    taints.append(taint)
    return labels, taints, findings


def _gpu_labels(cluster: ClusterModel, node: NodeModel) -> dict[str, str]:
    if not node.gpu:
        return {}
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(node.gpu_count),
              "nvidia.com/gpu.product": node.gpu.product, "nvidia.com/gpu.memory": str(node.gpu.memory_gib * 1024)}
    if node.mig_layout:
        labels |= {"nvidia.com/mig.strategy": cluster.mig_strategy, "nvidia.com/mig.config.state": "success"}
    return labels


def allocatable(cluster: ClusterModel, node: NodeModel) -> dict[str, str]:
    out = {r: (f"{n}Gi" if r == MEMORY else str(n)) for r, n in node_resources(cluster, node).items()}
    out["pods"] = str(MAX_PODS)
    return out


def node_features(cluster: ClusterModel, node: NodeModel, components: Iterable[Component]) -> Features:
    """What the node's nfd-worker would report besides its name, from forge's own agents."""
    out: Features = {}
    for component in components:
        for feature, attributes in component.node_features(cluster, node).items():
            out.setdefault(feature, {}).update(attributes)
    return out


def system_pool_results(node: NodeModel) -> tuple[dict[str, str], list[dict[str, str]]]:
    """The labels and taints of a system pool's node, as the managed node group sets them."""
    assert node.pool is not None and not node.pool.karpenter
    made = {"node.kubernetes.io/instance-type": node.pool.instance.key, "karpenter.sh/capacity-type": node.pool.capacity_type}
    return {**node.labels, **made}, [dict(t.model_dump(exclude_defaults=True)) for t in node.taints]


def node_object(cluster: ClusterModel, node: NodeModel, rules: list[tuple[dict[str, Any], str]], version: str,
                findings: list[str], components: Iterable[Component] = (), known: frozenset[str] = frozenset(),
                ) -> dict[str, Any]:
    if node.pool is not None:
        labels, taints = system_pool_results(node)
    else:
        labels, taints, found = nfd_results(rules, node.name, node_features(cluster, node, components), known)
        findings += found
    labels = {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              **_gpu_labels(cluster, node), **labels}
    if "control-plane" in node.roles:
        labels[CONTROL_PLANE_LABEL] = ""
        taints.append({"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"})
    resources = allocatable(cluster, node)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": resources, "allocatable": resources,
            "nodeInfo": {"kubeletVersion": version, "kubeProxyVersion": version, "operatingSystem": "linux",
                         "architecture": "amd64", "containerRuntimeVersion": "kwok", "osImage": "forge twin (kwok)",
                         "kernelVersion": "", "machineID": "", "systemUUID": "", "bootID": ""},
        },
    }


def box_nodes(cluster: ClusterModel) -> list[NodeModel]:
    """The nodes the box makes: every inventory node, but none of a Karpenter pool (Karpenter's)."""
    return [n for n in cluster.nodes if n.pool is None or not n.pool.karpenter]


def node_objects(cluster: ClusterModel, rules: list[tuple[dict[str, Any], str]], version: str,
                 components: Iterable[Component] = ()) -> tuple[list[dict[str, Any]], list[str]]:
    """The object of every node the box makes (box_nodes), and what nfd-master would refuse of
    forge's rules."""
    findings: list[str] = []
    components = list(components)
    known = frozenset(f for n in cluster.nodes for f in node_features(cluster, n, components))
    return [node_object(cluster, n, rules, version, findings, components, known) for n in box_nodes(cluster)], findings

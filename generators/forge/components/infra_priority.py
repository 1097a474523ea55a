"""Infrastructure priority for pods no chart value reaches: a MutatingAdmissionPolicy.

Some infrastructure charts cannot name a PriorityClass (a component's `priority_exception`: the
Alluxio chart 0.6.54 for any pod; the network operator's chart for its Deployments, and the
DaemonSets its operator creates at run time, `nv-ipam-node` and `cni-plugins`, which are in no
chart at all). Their pods would get the global default, a workload class, and a pre-empting
workload could evict them. Argo CD renders these charts itself, so no kustomize patch reaches
them; an admission policy reaches every pod, whoever creates it.

The policy (admissionregistration.k8s.io/v1beta1 on Kubernetes 1.34: the cluster must enable
the MutatingAdmissionPolicy feature gate and that API version, which the pre-sync check
verifies) mutates pods created in those components' namespaces that name no class or the
global default: pods of a DaemonSet become `system-node-critical`, all others
`system-cluster-critical`. The Priority admission plugin runs before admission policies and has
already filled `spec.priority` from the default class, so the policy sets `priority` (and
`preemptionPolicy`) to the class's own values as well: a later re-run of the Priority plugin
(admission reinvocation) finds them consistent.
"""
from __future__ import annotations

from typing import Any, Sequence

from forge.components.admission import mutating_binding, mutating_policy

POLICY = "forge-infrastructure-priority"
KINDS = (("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
         ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"))
NODE_CLASS, NODE_VALUE = "system-node-critical", 2_000_001_000
CLUSTER_CLASS, CLUSTER_VALUE = "system-cluster-critical", 2_000_000_000
NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every Namespace


def match_condition(global_default: str | None) -> str:
    """Pods that name no class (or the global default, which the Priority plugin filled in)."""
    none = "!has(object.spec.priorityClassName) || object.spec.priorityClassName == ''"
    return f"{none} || object.spec.priorityClassName == '{global_default}'" if global_default else none


def policy(global_default: str | None) -> dict[str, Any]:
    node_agent = ("has(object.metadata.ownerReferences) && "
                  "object.metadata.ownerReferences.exists(r, r.kind == 'DaemonSet')")
    apply = ("Object{spec: Object.spec{"
             f"priorityClassName: variables.nodeAgent ? '{NODE_CLASS}' : '{CLUSTER_CLASS}', "
             f"priority: variables.nodeAgent ? {NODE_VALUE} : {CLUSTER_VALUE}, "
             "preemptionPolicy: 'PreemptLowerPriority'}}")
    return mutating_policy(POLICY, [{"name": "no-infrastructure-class", "expression": match_condition(global_default)}],
                           [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}}],
                           variables=[{"name": "nodeAgent", "expression": node_agent}])


def binding(namespaces: Sequence[str]) -> dict[str, Any]:
    return mutating_binding(POLICY, {"matchExpressions": [{"key": NAMESPACE_LABEL, "operator": "In", "values": sorted(namespaces)}]})


def objects(namespaces: Sequence[str], global_default: str | None) -> list[dict[str, Any]]:
    """The policy and its binding for `namespaces` (none: nothing to mutate, no objects)."""
    return [policy(global_default), binding(namespaces)] if namespaces else []

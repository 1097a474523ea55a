"""One Alluxio master per node, without the host network.

Chart 0.6.54 has no affinity value, and the masters ran on the host network so that two of them
could not share a node (the second cannot bind the same host ports). On the host network they
were outside every NetworkPolicy, with the node's own network namespace. Instead they run on
the pod network, and a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1beta1, as
forge.components.infra_priority) gives each master pod, when it is created, a required pod
anti-affinity on the node's hostname against the other masters: the same one-per-node (and, by
the inventory check, one-per-rack) placement, with the masters fenced like every other pod.
"""
from __future__ import annotations

from typing import Any

from forge.components.admission import mutating_binding, mutating_policy

POLICY = "forge-alluxio-master-spread"
KINDS = (("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
         ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"))
HOSTNAME = "kubernetes.io/hostname"


def _labels_literal(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in sorted(labels.items())) + "}"


def policy(master_labels: dict[str, str]) -> dict[str, Any]:
    term = "Object.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    # A JSON patch, not an apply configuration: the API server refuses apply configurations that
    # set atomic lists and structs (the anti-affinity terms, the label selector). The chart sets
    # no affinity, so `add` creates it (and would replace one).
    value = ("Object.spec.affinity{podAntiAffinity: Object.spec.affinity.podAntiAffinity{"
             f"requiredDuringSchedulingIgnoredDuringExecution: [{term}{{"
             f"labelSelector: {term}.labelSelector{{matchLabels: {_labels_literal(master_labels)}}}, "
             f"topologyKey: '{HOSTNAME}'}}]}}}}")
    patch = f"[JSONPatch{{op: 'add', path: '/spec/affinity', value: {value}}}]"
    selects = " && ".join(f"object.metadata.labels['{k}'] == '{v}'" for k, v in sorted(master_labels.items()))
    has_labels = " && ".join(f"'{k}' in object.metadata.labels" for k in sorted(master_labels))
    return mutating_policy(POLICY, [{"name": "alluxio-master", "expression": f"has(object.metadata.labels) && {has_labels} && {selects}"}],
                           [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}])


def binding(namespace: str) -> dict[str, Any]:
    return mutating_binding(POLICY, {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}]})


def objects(namespace: str, master_labels: dict[str, str]) -> list[dict[str, Any]]:
    return [policy(master_labels), binding(namespace)]

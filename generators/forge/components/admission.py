"""The shape of forge's admission policies, in one place: ValidatingAdmissionPolicy (GA,
admissionregistration.k8s.io/v1 on 1.34) and MutatingAdmissionPolicy (beta, v1beta1 with its
feature gate on 1.34), each with its binding. Every policy fails closed: an expression the server
cannot evaluate refuses the request rather than letting it through unchecked. What each policy
checks or sets lives with the component that needs it (flyte.fence, flyte.rdma_policy,
infra_priority, alluxio.placement)."""
from __future__ import annotations

from typing import Any

VALIDATING_API = "admissionregistration.k8s.io/v1"
MUTATING_API = "admissionregistration.k8s.io/v1beta1"
# Pods as they are created: what every pod-level policy of forge's matches.
POD_CREATE = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}


def validating_policy(name: str, rules: list[dict[str, Any]], variables: list[dict[str, Any]],
                      validations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": VALIDATING_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "variables": variables,
            "validations": validations,
        },
    }


def deny_binding(name: str, namespace_selector: dict[str, Any]) -> dict[str, Any]:
    """A ValidatingAdmissionPolicyBinding that refuses what `name` refuses, in the namespaces selected."""
    return {
        "apiVersion": VALIDATING_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": namespace_selector},
        },
    }


def serves_mutating(cluster: Any) -> bool:
    """Whether the cluster's API server serves MutatingAdmissionPolicy (cluster.api_server on
    premises; never on EKS). Without it forge writes none: a component that has another way does
    without (docs/security.md), and forge validate refuses any that is left."""
    return cluster.served.serves(MUTATING_API, "MutatingAdmissionPolicy")


def mutating_policy(name: str, match_conditions: list[dict[str, Any]], mutations: list[dict[str, Any]],
                    variables: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A MutatingAdmissionPolicy on pods as they are created, applied once (no reinvocation)."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "matchConstraints": {"resourceRules": [POD_CREATE]},
        "matchConditions": match_conditions,
    }
    if variables is not None:
        spec["variables"] = variables
    spec["mutations"] = mutations
    return {"apiVersion": MUTATING_API, "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}


def mutating_binding(name: str, namespace_selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": MUTATING_API,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "matchResources": {"namespaceSelector": namespace_selector}},
    }

"""The workload label on every pod of a project namespace, whoever creates it.

Driver upgrades wait on a cordoned node for the pods their selector picks
(`components.gpu-operator.upgrade.wait_for_completion.pod_selector`, default
driver_upgrades.WORKLOAD_LABEL) before draining it. Flyte puts the label on everything it creates
(its k8s plugin's default-labels), but a PyTorchJob, RayJob or plain Pod applied with kubectl in a
project namespace would not carry it: its ranks would be drained at once, after
`drain_timeout_seconds`, and a gang job lost on the first cordon. So a MutatingAdmissionPolicy
(admissionregistration.k8s.io/v1beta1, as forge.components.infra_priority) labels every pod created
in a project namespace (namespaces labelled forge.exa.ai/flyte-project) that does not carry the
label yet, with WORKLOAD_EXTERNAL; Flyte's own pods keep theirs (`flyte`). An apply configuration
is enough here: labels are a map, which a server-side apply merges key by key.
"""
from __future__ import annotations

from typing import Any

from forge.components.admission import mutating_binding, mutating_policy, serves_mutating
from forge.components.driver_upgrades import WORKLOAD_LABEL
from forge.model.queues import FLYTE_PROJECT_LABEL  # on every project namespace

POLICY = "forge-workload-label"
KINDS = (("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
         ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"))
WORKLOAD_EXTERNAL = "external"  # started outside Flyte (kubectl, a notebook, an operator's own job)


def policy() -> dict[str, Any]:
    unlabelled = f"!has(object.metadata.labels) || !('{WORKLOAD_LABEL}' in object.metadata.labels)"
    apply = f"Object{{metadata: Object.metadata{{labels: {{'{WORKLOAD_LABEL}': '{WORKLOAD_EXTERNAL}'}}}}}}"
    return mutating_policy(POLICY, [{"name": "no-workload-label", "expression": unlabelled}],
                           [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}}])


def binding() -> dict[str, Any]:
    return mutating_binding(POLICY, {"matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]})


def objects(cluster: Any) -> list[dict[str, Any]]:
    """The policy and its binding where the API server serves them. Without (EKS), pods started
    outside Flyte carry no label and a driver upgrade drains them after its timeout (docs/security.md)."""
    return [policy(), binding()] if serves_mutating(cluster) else []

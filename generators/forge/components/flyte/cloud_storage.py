"""On a cloud cluster, every task pod reaches S3 at the cluster's own storage endpoint.

A task sent to the cloud through MultiKueue (docs/burst.md) is created on the worker from the pod
spec the manager's Flyte wrote, and that spec names the manager's storage endpoint
(FLYTE_AWS_ENDPOINT, Flyte's k8s plugin default-env-vars): Alluxio's S3 proxy on premises, which
the cloud cluster neither runs nor reaches. The task would fail its first read, unless its author
overrode the variable, and the seed asks for "same code, just a different execution queue". So a
MutatingAdmissionPolicy on the cloud cluster sets the variable, where a container already has it
as a plain value, to this cluster's endpoint (S3 in the buckets' region) as the pod is created.
Pods the cloud cluster's own Flyte creates already carry that value and are left as they are.

Containers and their env are map lists keyed by name, so an apply configuration merges the one
variable into the one container; nothing else of the pod changes.
"""
from __future__ import annotations

from typing import Any

from forge.components.admission import mutating_binding, mutating_policy
from forge.queues import FLYTE_PROJECT_LABEL  # on every project namespace

POLICY = "forge-storage-endpoint"
VARIABLE = "FLYTE_AWS_ENDPOINT"


def policy(endpoint: str) -> dict[str, Any]:
    other = f"e.name == '{VARIABLE}' && has(e.value) && e.value != '{endpoint}'"
    needs = f"has(c.env) && c.env.exists(e, {other})"
    apply = (f"Object{{spec: Object.spec{{containers: object.spec.containers.filter(c, {needs}).map(c, "
             f"Object.spec.containers{{name: c.name, env: [Object.spec.containers.env{{name: '{VARIABLE}', value: '{endpoint}'}}]}})}}}}")
    return mutating_policy(POLICY, [{"name": "names-another-endpoint", "expression": f"object.spec.containers.exists(c, {needs})"}],
                           [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": apply}}])


def objects(endpoint: str) -> list[dict[str, Any]]:
    return [policy(endpoint), mutating_binding(POLICY, {"matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]})]

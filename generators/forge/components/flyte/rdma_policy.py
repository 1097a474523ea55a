"""Multi-node PyTorch tasks without the fabric are refused, on clusters with a compute fabric.

A PyTorch task that forgets `pod_template_name="forge-rdma"` gets no RDMA NIC and no rail
interface: NCCL falls back to TCP over the pod network without an error, and a multi-node run
is many times slower than it should be. Making the RDMA template the default for every task
would give CPU and single-node tasks rail addresses they do not need (each node has
`addresses_per_node` per rail), and propeller picks the template before it knows the plugin.
So a ValidatingAdmissionPolicy refuses, in the project namespaces of fabric clusters, a
PyTorchJob with more than one pod (a Master and Workers, or more than one Worker) whose replica
templates do not all request the fabric's RDMA resource; the message names the fix. A job that
really wants TCP may say so with the label `forge.exa.ai/fabric: none`. On a MultiKueue manager,
a job on the cloud queue (label `kueue.x-k8s.io/queue-name: cloud`) runs on the burst cluster,
whose fabric is EFA, never these rails: it is let through (its pods could not be admitted by a
cloud queue with the RDMA resource anyway).
"""
from __future__ import annotations

from typing import Any

from forge.components.admission import deny_binding, validating_policy

POLICY = "forge-multinode-pytorch-rdma"
OPT_OUT_LABEL = "forge.exa.ai/fabric"
FLYTE_PROJECT_LABEL = "forge.exa.ai/flyte-project"  # forge.queues.FLYTE_PROJECT_LABEL


def _requests(resource: str) -> str:
    """CEL: container `c` requests or limits `resource`."""
    return (f"(has(c.resources) && ((has(c.resources.limits) && '{resource}' in c.resources.limits) || "
            f"(has(c.resources.requests) && '{resource}' in c.resources.requests)))")


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # forge.queues.QUEUE_NAME_LABEL


def _label_is(key: str, value: str) -> str:
    return f"has(object.metadata.labels) && '{key}' in object.metadata.labels && object.metadata.labels['{key}'] == '{value}'"


def policy(resource: str, template: str, cloud_queue: str | None = None) -> dict[str, Any]:
    """`cloud_queue`: the LocalQueue of a burst cluster (forge.components.multikueue), on a manager."""
    specs = "variables.specs"
    multi_node = (f"'Worker' in {specs} && ('Master' in {specs} || "
                  f"(has({specs}['Worker'].replicas) && {specs}['Worker'].replicas > 1))")
    every_replica = (f"{specs}.all(k, has({specs}[k].template) && has({specs}[k].template.spec) && "
                     f"{specs}[k].template.spec.containers.exists(c, {_requests(resource)}))")
    opted_out = _label_is(OPT_OUT_LABEL, "none")
    if cloud_queue:
        opted_out = f"({opted_out}) || ({_label_is(QUEUE_LABEL, cloud_queue)})"
    rules = [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pytorchjobs"]}]
    variables = [
        {"name": "specs", "expression": "has(object.spec.pytorchReplicaSpecs) ? object.spec.pytorchReplicaSpecs : {}"},
        {"name": "multiNode", "expression": multi_node},
        {"name": "optedOut", "expression": opted_out},
        {"name": "fabric", "expression": every_replica},
    ]
    return validating_policy(POLICY, rules, variables, [{
        "expression": "!variables.multiNode || variables.optedOut || variables.fabric",
        "reason": "Invalid",
        "message": (f"a multi-node PyTorch task must run over the compute fabric: give the task "
                    f"pod_template_name=\"{template}\" (its pods then request {resource}), or label the job "
                    f"{OPT_OUT_LABEL}=none to run NCCL over TCP on purpose"),
    }])


def binding() -> dict[str, Any]:
    return deny_binding(POLICY, {"matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]})


def objects(resource: str, template: str, cloud_queue: str | None = None) -> list[dict[str, Any]]:
    return [policy(resource, template, cloud_queue), binding()]

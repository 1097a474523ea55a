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
whose fabric is EFA, never these rails: it must request the EFA interfaces instead
(`pod_template_name="forge-efa"`, forge.components.flyte.efa), or NCCL runs over TCP between the
cloud nodes, silently. A cloud cluster with EFA pools refuses the same for its own jobs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge.components.admission import deny_binding, validating_policy

POLICY = "forge-multinode-pytorch-rdma"
OPT_OUT_LABEL = "forge.exa.ai/fabric"
FLYTE_PROJECT_LABEL = "forge.exa.ai/flyte-project"  # forge.model.queues.FLYTE_PROJECT_LABEL


def _requests(resource: str) -> str:
    """CEL: container `c` requests or limits `resource`."""
    return (f"(has(c.resources) && ((has(c.resources.limits) && '{resource}' in c.resources.limits) || "
            f"(has(c.resources.requests) && '{resource}' in c.resources.requests)))")


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # forge.model.queues.QUEUE_NAME_LABEL


def _label_is(key: str, value: str) -> str:
    return f"has(object.metadata.labels) && '{key}' in object.metadata.labels && object.metadata.labels['{key}'] == '{value}'"


@dataclass(frozen=True)
class Fabric:
    """What a multi-node PyTorch job must request on every replica, and the PodTemplate that does."""

    resource: str  # rdma/<name> on premises, vpc.amazonaws.com/efa in the cloud
    template: str  # forge-rdma, forge-efa
    where: str = "over the compute fabric"  # for the message


def _every_replica(resource: str) -> str:
    specs = "variables.specs"
    return (f"{specs}.all(k, has({specs}[k].template) && has({specs}[k].template.spec) && "
            f"{specs}[k].template.spec.containers.exists(c, {_requests(resource)}))")


def _message(fabric: Fabric) -> str:
    return (f"a multi-node PyTorch task must run {fabric.where}: give the task "
            f"pod_template_name=\"{fabric.template}\" (its pods then request {fabric.resource}), or label the job "
            f"{OPT_OUT_LABEL}=none to run NCCL over TCP on purpose")


def policy(local: Fabric, cloud_queue: str | None = None, cloud: Fabric | None = None) -> dict[str, Any]:
    """`local`: this cluster's fabric. `cloud_queue`, `cloud`: on a MultiKueue manager, the LocalQueue
    of the burst cluster (forge.components.multikueue) and the burst cluster's fabric (EFA), which a
    job on that queue must request instead of the local one."""
    specs = "variables.specs"
    multi_node = (f"'Worker' in {specs} && ('Master' in {specs} || "
                  f"(has({specs}['Worker'].replicas) && {specs}['Worker'].replicas > 1))")
    rules = [{"apiGroups": ["kubeflow.org"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pytorchjobs"]}]
    variables = [
        {"name": "specs", "expression": "has(object.spec.pytorchReplicaSpecs) ? object.spec.pytorchReplicaSpecs : {}"},
        {"name": "multiNode", "expression": multi_node},
        {"name": "optedOut", "expression": _label_is(OPT_OUT_LABEL, "none")},
        {"name": "fabric", "expression": _every_replica(local.resource)},
    ]
    if not cloud_queue:
        checks = [("!variables.multiNode || variables.optedOut || variables.fabric", local)]
    else:
        variables.append({"name": "cloud", "expression": _label_is(QUEUE_LABEL, cloud_queue)})
        checks = [("!variables.multiNode || variables.optedOut || variables.cloud || variables.fabric", local)]
        if cloud is not None:  # a job on the cloud queue runs on the burst cluster's EFA, never these rails
            variables.append({"name": "cloudFabric", "expression": _every_replica(cloud.resource)})
            checks.append(("!variables.multiNode || variables.optedOut || !variables.cloud || variables.cloudFabric", cloud))
    return validating_policy(POLICY, rules, variables, [
        {"expression": expression, "reason": "Invalid", "message": _message(fabric)} for expression, fabric in checks])


def binding() -> dict[str, Any]:
    return deny_binding(POLICY, {"matchExpressions": [{"key": FLYTE_PROJECT_LABEL, "operator": "Exists"}]})


def objects(local: Fabric, cloud_queue: str | None = None, cloud: Fabric | None = None) -> list[dict[str, Any]]:
    return [policy(local, cloud_queue, cloud), binding()]

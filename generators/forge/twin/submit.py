"""Jobs submitted the way Flyte's propeller builds them, from forge's own Flyte configuration.

Propeller (flytek8s, the PyTorch plugin) starts a task's pod from the PodTemplate the task names,
else `default-pod-template-name`, read from the execution namespace; applies the template's
`default` container to the task container; adds `default-labels` and `default-annotations` to the
pod and to the job object, `default-tolerations`, `default-env-vars` and `default-env-from-secrets`;
and sets the task's resources as requests and limits. The PyTorch plugin wraps that pod in a
kubeflow.org/v1 PyTorchJob: elastic (torchrun), every replica a Worker. The box reads the
PodTemplates from the API server (what forge applied) and propeller's settings from forge's
values (or the hydrated ConfigMap), so a setting forge gets wrong shows up as what Kueue does.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from forge.errors import ForgeError
from forge.model.queues import QUEUE_NAME_LABEL
from forge.twin.kube import Kube
from forge.twin.scenario import Job

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
SUBMITTED_LABEL = "forge.exa.ai/twin-scenario"  # on everything a scenario submits: how it is cleaned up
TASK_CONTAINER = "task"
PYTORCH_CONTAINER = "pytorch"


@dataclass(frozen=True)
class Propeller:
    """The k8s plugin settings of propeller that shape a task's pod."""

    pod_template: str | None
    labels: dict[str, str]
    annotations: dict[str, str]
    tolerations: list[dict[str, Any]]
    env: dict[str, str]
    env_from_secrets: list[str]

    @classmethod
    def from_values(cls, values_file: Path) -> "Propeller":
        try:
            values = yaml.safe_load(values_file.read_text(encoding="utf-8")) or {}
        except OSError:
            raise ForgeError(f"{values_file}: cannot be read: is Flyte enabled and generated for this cluster?") from None
        k8s = (((values.get("configuration") or {}).get("inline") or {}).get("plugins") or {}).get("k8s") or {}
        return cls(k8s.get("default-pod-template-name"), dict(k8s.get("default-labels") or {}),
                   dict(k8s.get("default-annotations") or {}), list(k8s.get("default-tolerations") or []),
                   dict(k8s.get("default-env-vars") or {}), list(k8s.get("default-env-from-secrets") or []))


def namespace_of(job: Job) -> str:
    return f"{job.project}-{job.domain}"


def _template_spec(kube: Kube, namespace: str, name: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the PodTemplate's pod metadata, its pod spec), or empty ones when the task names none."""
    if not name:
        return {}, {"containers": [{"name": "default"}]}
    found = kube.get("v1", "PodTemplate", name, namespace)
    if found is None:
        raise ForgeError(f"twin: PodTemplate {namespace}/{name} does not exist in the box: propeller would run the "
                         "task without it; is the Flyte Application applied (`forge twin apply`)?")
    template = found.get("template") or {}
    return copy.deepcopy(template.get("metadata") or {}), copy.deepcopy(template.get("spec") or {})


def pod_template(kube: Kube, propeller: Propeller, job: Job, labels: dict[str, str]) -> dict[str, Any]:
    meta, spec = _template_spec(kube, namespace_of(job), job.pod_template or propeller.pod_template)
    containers = spec.get("containers") or []
    base = next((c for c in containers if c.get("name") == "default"), containers[0] if containers else {})
    task = copy.deepcopy(base)
    # The PyTorch plugin names its container as the training-operator requires.
    task["name"] = PYTORCH_CONTAINER if job.kind == "PyTorchJob" else TASK_CONTAINER
    # The template's container is the base, the task's resources win (propeller merges them so):
    # an RDMA template's rdma/* request stays, its CPU and memory defaults give way.
    have = task.get("resources") or {}
    task["resources"] = {k: {**(have.get(k) or {}), **job.resources} for k in ("requests", "limits")}
    env = [e for e in task.get("env") or [] if e.get("name") not in propeller.env]
    task["env"] = env + [{"name": k, "value": v} for k, v in propeller.env.items()]
    task["envFrom"] = list(task.get("envFrom") or []) + [{"secretRef": {"name": s}} for s in propeller.env_from_secrets]
    spec["containers"] = [task]
    spec["tolerations"] = list(spec.get("tolerations") or []) + [t for t in propeller.tolerations if t not in (spec.get("tolerations") or [])]
    spec.setdefault("restartPolicy", "Never")
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    meta["annotations"] = {**(meta.get("annotations") or {}), **propeller.annotations, **job.annotations}
    return {"metadata": meta, "spec": spec}


def job_labels(propeller: Propeller, job: Job, scenario: str) -> dict[str, str]:
    labels = {**propeller.labels, SUBMITTED_LABEL: scenario}
    if job.queue:
        labels[QUEUE_NAME_LABEL] = job.queue
    if job.priority:
        labels[PRIORITY_LABEL] = job.priority
    return labels


def build(kube: Kube, propeller: Propeller, job: Job, name: str, replicas: int, scenario: str) -> dict[str, Any]:
    """The object propeller would create for one copy of `job`."""
    labels = job_labels(propeller, job, scenario)
    template = pod_template(kube, propeller, job, labels)
    meta = {"name": name, "namespace": namespace_of(job), "labels": labels,
            "annotations": {**propeller.annotations, **job.annotations}}
    if job.kind == "Pod":
        if replicas != 1:
            raise ForgeError(f"twin: job {job.name}: a plain Pod task has one replica (use a PyTorchJob for more)")
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, **{k: v for k, v in template["metadata"].items()
                                                                         if k in ("labels", "annotations")}},
                "spec": template["spec"]}
    if job.kind == "PyTorchJob":
        return _pytorch_job(meta, template, job, replicas)
    queue = labels.get(QUEUE_NAME_LABEL)
    spec: dict[str, Any] = {"queueName": queue, "podSets": [{"name": "main", "count": replicas, "template": template}]}
    if job.priority:
        spec |= {"priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": job.priority}}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": meta, "spec": spec}


def _pytorch_job(meta: dict[str, Any], template: dict[str, Any], job: Job, replicas: int) -> dict[str, Any]:
    """The PyTorch plugin's PyTorchJob (kfoperators/pytorch/pytorch.go, BuildResource): elastic,
    every replica a Worker with an ElasticPolicy; else a Master of 1 replica and the rest Workers
    (a Worker spec only when there are any), each replica spec restartPolicy Never
    (kfoperators/common/common_operator.go, ToReplicaSpec) unless the task sets one."""
    if job.elastic:
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": {
            "elasticPolicy": {"rdzvBackend": "c10d", "minReplicas": replicas, "maxReplicas": replicas,
                              "nProcPerNode": int(job.resources.get("nvidia.com/gpu", "1"))},
            "pytorchReplicaSpecs": {"Worker": {"replicas": replicas, "restartPolicy": "OnFailure", "template": template}},
            "runPolicy": {"cleanPodPolicy": "None"}}}
    specs = {"Master": {"replicas": 1, "restartPolicy": "Never", "template": template}}
    if replicas > 1:
        specs["Worker"] = {"replicas": replicas - 1, "restartPolicy": "Never", "template": copy.deepcopy(template)}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta,
            "spec": {"pytorchReplicaSpecs": specs, "runPolicy": {}}}

"""A compiled task template (flyteidl's JSON, from forge.workflows.serialize) read the way
flytepropeller 1.16.8 and its plugins read it. Each field cites the source that reads it
(github.com/flyteorg/flyte at tag v1.16.8):

- kind and replicas: `type` picks the plugin (flyte-binary's `default-for-task-types`, forge's
  TASK_TYPES). `pytorch` (flyteplugins/go/tasks/plugins/k8s/kfoperators/pytorch/pytorch.go,
  BuildResource, task_type_version 1): a kubeflow.org/v1 PyTorchJob, Master with 1 replica and
  Worker with `custom.workerReplicas.replicas` (dropped when 0); with `custom.elasticConfig` the
  Master is removed and the Workers carry an ElasticPolicy (min/max replicas, nProcPerNode,
  rdzvBackend). `ray` (flyteplugins/go/tasks/plugins/k8s/ray/ray.go): a ray.io/v1 RayJob of a
  head and `custom.rayCluster.workerGroupSpec[]`. Anything else (python-task, a map task's
  sub-task run by ArrayNode): one Pod (flyteplugins/go/tasks/plugins/k8s/pod/plugin.go).
- the pod: `container` or, when the task has a pod template, `k8sPod.podSpec` with its primary
  container named by `config.primary_container_name` (flytek8s/pod_helper.go, BuildRawPod); the
  base PodTemplate is `metadata.podTemplateName`, else propeller's `default-pod-template-name`
  (pod_helper.go, getBasePodTemplate; a name that does not exist fails the task: "PodTemplate '%s'
  does not exist"); the Kubeflow plugins rename the primary container `pytorch`/`mpi`
  (kfoperators/common/common_operator.go, ToReplicaSpec -> OverridePrimaryContainerName).
- resources: `container.resources` entries CPU, MEMORY, GPU -> cpu, memory, nvidia.com/gpu
  (flytek8s/utils.go, ToK8sResourceList); in a pod spec, flytekit's `gpu` key becomes the GPU
  resource (container_helper.go, SanitizeGPUResourceRequirements); a limit left unset takes the
  request and a request the limit (container_helper.go, ApplyResourceOverrides ->
  adjustResourceRequirement).
- labels of the object propeller creates (the Pod, the PyTorchJob, the RayJob): propeller's
  `default-labels`, then the task's `metadata.metadata.labels` (flytekit's @task(labels=...)),
  then the execution's labels, each winning over the ones before
  (flytepropeller/pkg/controller/nodes/task/k8s/plugin_manager.go, addObjectMetadata). Kueue reads
  its queue and priority labels there.
- the image: the primary container's `image`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"  # propeller's gpu-resource-name default (flytek8s/config/config.go)
_ENTRY_NAMES = {"CPU": "cpu", "MEMORY": "memory", "GPU": GPU_RESOURCE, "EPHEMERAL_STORAGE": "ephemeral-storage"}
PYTORCH, RAY, POD = "PyTorchJob", "RayJob", "Pod"


@dataclass(frozen=True)
class ReplicaGroup:
    name: str  # Master, Worker; head, <worker group>; main (a Pod)
    replicas: int
    resources: dict[str, str]  # one replica's requests (limits equal them unless set apart)


@dataclass(frozen=True)
class CompiledTask:
    name: str  # flytekit's: module.function
    task_type: str
    kind: str  # what propeller creates: Pod, PyTorchJob, RayJob
    groups: tuple[ReplicaGroup, ...]
    pod_template: str | None  # metadata.podTemplateName; None: propeller's default
    labels: dict[str, str] = field(default_factory=dict)
    image: str = ""
    elastic: dict[str, Any] | None = None  # PyTorchJob's ElasticPolicy, when the task is elastic
    priority_class: str | None = None  # the task pod spec's own priorityClassName, if any
    primary: dict[str, Any] = field(default_factory=dict)  # the primary container as compiled

    @property
    def replicas(self) -> int:
        return sum(g.replicas for g in self.groups)

    @property
    def multi_node(self) -> bool:
        return self.kind == PYTORCH and self.replicas > 1


def _resources_of_container(container: dict[str, Any]) -> dict[str, str]:
    res = container.get("resources") or {}
    if isinstance(res.get("requests"), list) or isinstance(res.get("limits"), list):  # flyteidl entries
        requests = {_ENTRY_NAMES[e["name"]]: e["value"] for e in res.get("requests") or [] if e.get("name") in _ENTRY_NAMES}
        limits = {_ENTRY_NAMES[e["name"]]: e["value"] for e in res.get("limits") or [] if e.get("name") in _ENTRY_NAMES}
    else:  # a pod spec's container
        rename = lambda d: {GPU_RESOURCE if k == "gpu" else k: str(v) for k, v in (d or {}).items()}  # noqa: E731
        requests, limits = rename(res.get("requests")), rename(res.get("limits"))
    return {**limits, **requests}  # a request left unset takes the limit


def _primary(template: dict[str, Any]) -> dict[str, Any]:
    if "container" in template:
        return template["container"]
    pod = template.get("k8sPod") or {}
    name = (template.get("config") or {}).get("primary_container_name")
    containers = (pod.get("podSpec") or {}).get("containers") or []
    return next((c for c in containers if c.get("name") == name), containers[0] if containers else {})


def _group_resources(group: dict[str, Any], default: dict[str, str]) -> dict[str, str]:
    containers = ((group.get("k8sPod") or {}).get("podSpec") or {}).get("containers") or []
    return _resources_of_container(containers[0]) if containers else default


def _groups(template: dict[str, Any], kind: str, resources: dict[str, str]) -> tuple[ReplicaGroup, ...]:
    custom = template.get("custom") or {}
    if kind == PYTORCH:
        workers = int((custom.get("workerReplicas") or {}).get("replicas", custom.get("workers", 0)) or 0)
        if custom.get("elasticConfig"):
            return (ReplicaGroup("Worker", workers, resources),)
        return (ReplicaGroup("Master", 1, resources),) + ((ReplicaGroup("Worker", workers, resources),) if workers else ())
    if kind == RAY:
        # Head and worker groups carry their own pod spec when given (flytekitplugins-ray's
        # requests=), else the task's (ray.go, buildHeadPodTemplate / buildWorkerPodTemplate).
        cluster = custom.get("rayCluster") or {}
        head = cluster.get("headGroupSpec") or {}
        out = [ReplicaGroup("head", 1, _group_resources(head, resources))]
        for g in cluster.get("workerGroupSpec") or []:
            out.append(ReplicaGroup(g.get("groupName", "worker"), int(g.get("replicas", 1)), _group_resources(g, resources)))
        return tuple(out)
    return (ReplicaGroup("main", 1, resources),)


def read_task(name: str, template: dict[str, Any]) -> CompiledTask:
    task_type = template.get("type", "")
    kind = {"pytorch": PYTORCH, "ray": RAY}.get(task_type, POD)
    primary = _primary(template)
    resources = _resources_of_container(primary)
    metadata = template.get("metadata") or {}
    elastic = (template.get("custom") or {}).get("elasticConfig") if kind == PYTORCH else None
    spec = (template.get("k8sPod") or {}).get("podSpec") or {}
    return CompiledTask(
        name=name, task_type=task_type, kind=kind, groups=_groups(template, kind, resources),
        pod_template=metadata.get("podTemplateName") or None,
        labels=dict(((metadata.get("metadata") or {}).get("labels")) or {}),
        image=primary.get("image", ""), elastic=elastic, priority_class=spec.get("priorityClassName"), primary=primary)

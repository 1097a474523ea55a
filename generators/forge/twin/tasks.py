"""Scenario jobs that name a task of workflows/: the task compiled by the real flytekit
(forge.workflows.compile) and read as propeller 1.16.8 reads it (forge.workflows.tasks, which cites
the plugin source of each field), turned into the job the box submits (forge.twin.submit):

- kind: PyTorchJob for the PyTorch plugin (kfoperators/pytorch/pytorch.go), Pod for a plain or a
  map task's container (k8s/pod/plugin.go); a RayJob as a Kueue Workload (KubeRay is not in the box);
- replicas: Master + Workers, or the elastic Workers (pytorch.go, BuildResource);
- resources: the primary container's (flytek8s/utils.go, ToK8sResourceList; container_helper.go);
- pod_template: metadata.podTemplateName (pod_helper.go, getBasePodTemplate);
- queue and priority: the task's labels over propeller's default-labels
  (flytepropeller pkg/controller/nodes/task/k8s/plugin_manager.go, addObjectMetadata).
"""
from __future__ import annotations

from pathlib import Path

from forge.errors import ForgeError
from forge.model.queues import QUEUE_NAME_LABEL
from forge.twin.scenario import Job, Scenario
from forge.workflows.compile import compile_workflows
from forge.workflows.judge import PRIORITY_LABEL
from forge.workflows.tasks import PYTORCH, RAY, CompiledTask


def job_from_task(job: Job, task: CompiledTask) -> Job:
    resources = dict(task.groups[0].resources)
    update = {"kind": "Workload" if task.kind == RAY else task.kind, "resources": resources,
              "pod_template": task.pod_template, "queue": task.labels.get(QUEUE_NAME_LABEL),
              "priority": task.labels.get(PRIORITY_LABEL)}
    if task.kind == PYTORCH:
        update |= {"replicas": task.replicas, "elastic": task.elastic is not None}
    elif task.kind == RAY:
        update |= {"replicas": task.replicas}
    return job.model_copy(update=update)


def resolve(root: Path, scenarios: list[Scenario]) -> list[Scenario]:
    """`scenarios` with every job that names a task replaced by the job its compiled spec gives."""
    named = sorted({j.task for s in scenarios for st in s.steps for j in st.submit if j.task})
    if not named:
        return scenarios
    compiled = compile_workflows(root, sorted({n.split(".", 1)[0] for n in named}))
    missing = [n for n in named if n not in compiled.tasks]
    if missing:
        raise ForgeError(f"scenarios: no task {', '.join(missing)} in workflows/ (have: {', '.join(sorted(compiled.tasks))})")
    return [s.model_copy(update={"steps": [st.model_copy(update={"submit": [
        job_from_task(j, compiled.tasks[j.task]) if j.task else j for j in st.submit]}) for st in s.steps]}) for s in scenarios]

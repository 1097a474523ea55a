"""Each compiled task against the cluster it targets: what propeller and Kueue would do with it
there, found before a run. One problem per line, naming the task, the field and the cluster.

- pod_template_name: the PodTemplate (the task's, else propeller's default) exists in the
  project-domain namespace (propeller fails the task otherwise: pod_helper.go, getBasePodTemplate);
- labels.kueue.x-k8s.io/queue-name: the LocalQueue exists there (forge's default label names
  `default`); labels.kueue.x-k8s.io/priority-class: a WorkloadPriorityClass; a pod spec's
  priorityClassName: a PriorityClass;
- resources: one replica fits a node of a flavor its ClusterQueue covers, and all replicas fit that
  flavor's reach (nominal quota plus what the cohort lends, up to the borrowing limit: the most
  Kueue admits with the cohort idle). The cloud queue of a MultiKueue manager is judged against the
  burst cluster's flavors and nodes;
- multi-node training (a PyTorchJob of more than one replica) asks for the fabric: the compute
  RDMA resource on a cluster with one (forge-rdma carries it), EFA on the cloud;
- container_image: an image pinned in charts/versions.yaml (a tag, never `latest`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from forge.facts import versions
from forge.model.capacity import MEMORY, node_resources
from forge.components.flyte import POD_TEMPLATE
from forge.diff.amounts import quantity
from forge.fleet import ClusterPlan
from forge.model.cluster import EFA_RESOURCE, ClusterModel
from forge.model.queues import CLOUD_QUEUE, LOCAL_QUEUE, QUEUE_NAME_LABEL, cohort_reach
from forge.workflows.targets import Target
from forge.workflows.tasks import CompiledTask

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class Platform:
    """What one cluster offers a task, from forge's own objects for it."""

    plan: ClusterPlan
    objects: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, plan: ClusterPlan) -> "Platform":
        objs = [o for c in plan.components for o in c.manifests(plan.cluster)]
        return cls(plan, tuple(objs))

    def names(self, kind: str, namespace: str | None = None) -> set[str]:
        return {o["metadata"]["name"] for o in self.objects if o.get("kind") == kind
                and (namespace is None or o["metadata"].get("namespace") == namespace)}

    def pod_template(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.objects if o.get("kind") == "PodTemplate" and o["metadata"]["name"] == name
                     and o["metadata"].get("namespace") == namespace), None)


def _amount(resource: str, value: str) -> float:
    """A quantity in forge's capacity units (memory in GiB, the rest counts)."""
    q = quantity(value)
    if q is None:
        return math.inf
    return float(q) / 2**30 if resource == MEMORY else float(q)


def merged_resources(platform: Platform, namespace: str, task: CompiledTask, resources: dict[str, str]) -> dict[str, str]:
    """One replica's requests as propeller builds them: the base PodTemplate's `default` container,
    the task's resources over it (pod_helper.go, MergeBasePodSpecOntoTemplate)."""
    template = platform.pod_template(namespace, task.pod_template or POD_TEMPLATE) or {}
    containers = ((template.get("template") or {}).get("spec") or {}).get("containers") or []
    base = next((c for c in containers if c.get("name") == "default"), {})
    have = (base.get("resources") or {})
    return {**{k: str(v) for k, v in {**(have.get("limits") or {}), **(have.get("requests") or {})}.items()}, **resources}


def _queue_facts(plan: ClusterPlan, queue: str):
    """(capacity, quotas, cluster whose nodes run it) for a LocalQueue's ClusterQueue."""
    facts = plan.cluster.component_facts.get("kueue")
    if facts is None:
        return None
    if queue == CLOUD_QUEUE and facts.cloud is not None:
        return facts.cloud.capacity, list(facts.cloud.quotas), plan.cluster.linked.get(facts.cloud.burst)
    return facts.capacity, list(facts.quotas), plan.cluster


def _fits(task: CompiledTask, platform: Platform, target: Target, queue: str) -> str | None:
    """None when some flavor holds the task; else why none does."""
    found = _queue_facts(platform.plan, queue)
    if found is None:
        return None  # no Kueue: the ResourceQuota alone bounds it (not judged here)
    cap, quotas, runs_on = found
    if runs_on is None or not any(q.project == target.project for q in quotas):
        return f"no queue of project {target.project} to judge against"
    why = []
    for pool in cap.pools:
        shortfall = _pool_shortfall(task, platform, target, pool, quotas, runs_on)
        if shortfall is None:
            return None
        why.append(f"{pool.flavor}: {shortfall}")
    return "; ".join(why) or "the queue has no flavor"


def _pool_shortfall(task, platform, target, pool, quotas, runs_on: ClusterModel) -> str | None:
    for group in task.groups:
        need = {r: _amount(r, v) for r, v in merged_resources(platform, target.namespace, task, group.resources).items()
                if _amount(r, v) > 0}
        if any(r not in pool.resources for r in need):
            return f"has no {', '.join(sorted(r for r in need if r not in pool.resources))}"
        if not any(all(node_resources(runs_on, n).get(r, 0) >= a for r, a in need.items()) for n in pool.nodes):
            return f"no node holds one {group.name} replica ({_shown(need)})"
    total: dict[str, float] = {}
    for group in task.groups:
        for r, v in merged_resources(platform, target.namespace, task, group.resources).items():
            total[r] = total.get(r, 0) + group.replicas * _amount(r, v)
    for r, a in total.items():
        reach = cohort_reach(quotas, pool.flavor, r, target.project) if r in pool.resources else 0
        if a > reach:
            return f"{r} {a:g} asked, the queue reaches {reach}"
    return None


def _shown(need: dict[str, float]) -> str:
    return ", ".join(f"{r} {a:g}{'Gi' if r == MEMORY else ''}" for r, a in sorted(need.items()))


def _fabric(task: CompiledTask, platform: Platform, target: Target, queue: str) -> str | None:
    """Multi-node training over the fabric: RDMA on premises, EFA on the cloud."""
    if not task.multi_node:
        return None
    found = _queue_facts(platform.plan, queue)
    runs_on = found[2] if found else platform.plan.cluster
    if runs_on is None:
        return None
    asked = {r for g in task.groups for r in merged_resources(platform, target.namespace, task, g.resources)}
    if runs_on.cloud is not None or runs_on is not platform.plan.cluster:
        if any(n.pool and n.pool.efa_interfaces for n in runs_on.nodes) and EFA_RESOURCE not in asked:
            return f"multi-node training on {runs_on.name} asks for no {EFA_RESOURCE} (its nodes' EFA interfaces)"
        return None
    rdma = runs_on.rdma_resource("compute")
    if rdma is not None and rdma.resource not in asked:
        return (f"multi-node training asks for no {rdma.resource}: name the PodTemplate forge-rdma "
                "(@task(pod_template_name=\"forge-rdma\")), which carries the compute fabric")
    return None


def pinned_images() -> set[str]:
    return {i.ref for i in versions.versions().images.values()}


def judge(task: CompiledTask, target: Target, platform: Platform, images: set[str]) -> Iterable[tuple[str, str]]:
    """(field, problem) for each way `task` would fail or misbehave on the target cluster."""
    ns = target.namespace
    if ns not in platform.names("Namespace"):
        yield "project", f"no namespace {ns} (project {target.project}, domain {target.domain} are not in components.flyte)"
        return
    template = task.pod_template or POD_TEMPLATE
    if platform.pod_template(ns, template) is None:
        have = ", ".join(sorted(platform.names("PodTemplate", ns))) or "none"
        yield "pod_template_name", f"PodTemplate {template!r} does not exist in {ns} (have: {have})"
    queue = task.labels.get(QUEUE_NAME_LABEL, LOCAL_QUEUE)
    queues = platform.names("LocalQueue", ns)
    if queues and queue not in queues:
        yield f"labels.{QUEUE_NAME_LABEL}", f"no LocalQueue {queue!r} in {ns} (have: {', '.join(sorted(queues))})"
    priority = task.labels.get(PRIORITY_LABEL)
    if priority is not None and priority not in platform.names("WorkloadPriorityClass"):
        yield f"labels.{PRIORITY_LABEL}", (f"no WorkloadPriorityClass {priority!r} (have: "
                                           f"{', '.join(sorted(platform.names('WorkloadPriorityClass'))) or 'none'})")
    if task.priority_class is not None and task.priority_class not in platform.names("PriorityClass"):
        yield "pod_template.priority_class_name", f"no PriorityClass {task.priority_class!r}"
    if queue in queues or not queues:
        short = _fits(task, platform, target, queue)
        if short is not None:
            yield "resources", f"{task.replicas} replica(s) fit no flavor of queue {queue!r}: {short}"
        fabric = _fabric(task, platform, target, queue)
        if fabric is not None:
            yield "resources", fabric
    if task.image not in images:
        yield "container_image", (f"{task.image or 'no image'} is not an image pinned in charts/versions.yaml "
                                  "(images: a repository and a version tag)")

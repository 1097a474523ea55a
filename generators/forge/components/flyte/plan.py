"""Flyte's settings and what it derives from them and the nodes, once (FlyteFacts): the capacity
its quotas divide (forge.model.capacity), each project-domain's quota, the largest task a node can take."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from forge.model.capacity import Capacity, capacity
from forge.components.flyte.access import FlyteIngress
from forge.components.flyte.auth import FlyteAuth
from forge.inventory.schema import Name, PositiveInt, Strict
from forge.inventory.strings import DbOptions, Hostname, HttpUrl
from forge.model.cluster import ClusterModel
from forge.model.queues import KueueSettings, kueue_settings, pre_emptible_projects, project_quotas, project_ranks


class DomainSpec(Strict):
    name: Name
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of each project's share


class ProjectSpec(Strict):
    name: Name
    description: str = ""
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of the cluster
    priority_class: Name  # one of components.scheduling.priority_classes


class Database(Strict):
    host: Hostname
    port: Annotated[int, Field(gt=0, le=65535)] = 5432
    dbname: Name
    username: Name
    password_secret: Name  # in namespace flyte, key `password`, made by External Secrets
    options: DbOptions = "sslmode=require"


class TaskDefaults(Strict):
    """What a task container gets when it asks for nothing (LimitRange and Flyte defaults)."""

    cpu: PositiveInt = 1
    memory_gib: PositiveInt = 4


class FlyteSettings(Strict):
    domains: Annotated[list[DomainSpec], Field(min_length=1)]
    projects: Annotated[list[ProjectSpec], Field(min_length=1)]
    default_priority_class: Name
    database: Database
    grafana_url: HttpUrl  # as browsers reach it
    loki_datasource_uid: Name = "loki"
    task_defaults: TaskDefaults = TaskDefaults()
    ingress: FlyteIngress | None = None  # routes for laptops (forge.components.flyte.access)
    auth: FlyteAuth | None = None  # OIDC login (forge.components.flyte.auth); required with an ingress
    # Where signed upload/download URLs point: an S3 endpoint laptops reach (default cluster.s3.endpoint).
    signed_url_endpoint: HttpUrl | None = None


# ---- quota arithmetic ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Quota:
    """A project-domain namespace's ResourceQuota: resource -> amount (forge.model.capacity's units)."""

    project: str
    domain: str
    hard: dict[str, int]

    @property
    def namespace(self) -> str:
        return namespace_for(self.project, self.domain)


def namespace_for(project: str, domain: str) -> str:
    return f"{project}-{domain}"  # Flyte's default namespace_mapping: {{ project }}-{{ domain }}


def quotas(cap: Capacity, settings: FlyteSettings, kueue: KueueSettings | None = None, ranks: dict[str, int] | None = None) -> list[Quota]:
    """Per resource of the capacity (whole GPUs, each MIG resource, CPUs, GiB, RDMA):

    - without Kueue: floor(capacity x project% x domain% / 10000). With project shares and domain
      shares each adding up to at most 100 % (the inventory check), all namespaces together get
      at most the capacity;
    - with Kueue (forge.model.queues): a hard ceiling, the project's reach (nominal + borrowing limit
      over every flavor), the same for each of its domains. Kueue never admits more into one of
      the project's namespaces, so the ceiling never refuses a pod Kueue admitted (a half-started
      job); it still bounds pods that bypass Kueue.
    """
    shares = [(p.name, p.share_percent) for p in settings.projects]
    batch = pre_emptible_projects(kueue, shares, ranks or {}) if kueue else frozenset()
    reach = {q.project: q for q in project_quotas(cap, shares, kueue, batch)} if kueue else {}
    out = []
    for p in settings.projects:
        for d in settings.domains:
            share = p.share_percent * d.share_percent
            hard = ({r: reach[p.name].reach(r) for r in cap.resources} if kueue
                    else {r: cap.total(r) * share // 10_000 for r in cap.resources})
            out.append(Quota(p.name, d.name, hard))
    return out


@dataclass(frozen=True)
class TaskLimits:
    """Flyte's task limits: no task pod can be larger than the largest workload node (most GPUs,
    then CPUs, then memory)."""

    cpus: int
    memory_gib: int
    gpus: int


@dataclass(frozen=True)
class FlyteFacts:
    capacity: Capacity
    quotas: tuple[Quota, ...]
    limits: TaskLimits
    namespaces: tuple[str, ...]  # one per project-domain, projects first


def derive_facts(cluster: ClusterModel, settings: FlyteSettings) -> FlyteFacts:
    cap = capacity(cluster)  # forge.model.capacity: per GPU pool and extended resource
    largest = max(cluster.workload_nodes, key=lambda n: (n.gpu_count, n.profile.cpu_threads, n.profile.memory_gib))
    ranks = project_ranks(settings, cluster.component_settings.get("scheduling"))
    return FlyteFacts(cap, tuple(quotas(cap, settings, kueue_settings(cluster), ranks)),
                      TaskLimits(largest.profile.cpu_threads, largest.profile.memory_gib, largest.gpu_count),
                      tuple(namespace_for(p.name, d.name) for p in settings.projects for d in settings.domains))

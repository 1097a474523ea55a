"""Flyte's settings and what it derives from them and the nodes, once (FlyteFacts): the capacity
its quotas divide, each project-domain's quota, the largest task a node can take."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from forge.components.flyte.access import FlyteIngress
from forge.inventory.schema import Name, PositiveInt, Strict
from forge.model import ClusterModel


class DomainSpec(Strict):
    name: Name
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of each project's share


class ProjectSpec(Strict):
    name: Name
    description: str = ""
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of the cluster
    priority_class: Name  # one of components.scheduling.priority_classes


class Database(Strict):
    host: Annotated[str, Field(min_length=1)]
    port: PositiveInt = 5432
    dbname: Name
    username: Name
    password_secret: Name  # in namespace flyte, key `password`, made by External Secrets
    options: str = "sslmode=require"


class TaskDefaults(Strict):
    """What a task container gets when it asks for nothing (LimitRange and Flyte defaults)."""

    cpu: PositiveInt = 1
    memory_gib: PositiveInt = 4


class FlyteSettings(Strict):
    domains: Annotated[list[DomainSpec], Field(min_length=1)]
    projects: Annotated[list[ProjectSpec], Field(min_length=1)]
    default_priority_class: Name
    database: Database
    grafana_url: Annotated[str, Field(pattern=r"^https?://[^\s/]+(/\S*)?$")]  # as browsers reach it
    loki_datasource_uid: Name = "loki"
    task_defaults: TaskDefaults = TaskDefaults()
    ingress: FlyteIngress | None = None  # routes for laptops (forge.components.flyte.access)
    # Where signed upload/download URLs point: an S3 endpoint laptops reach (default cluster.s3.endpoint).
    signed_url_endpoint: Annotated[str, Field(pattern=r"^https?://[^\s/]+(/\S*)?$")] | None = None


# ---- quota arithmetic ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Capacity:
    """What Flyte's quotas divide: the workload nodes (all but the control plane), whole devices.
    GPUs are physical GPUs; a MIG slice counts as one GPU in the quota (conservative)."""

    gpus: int
    cpus: int
    memory_gib: int


@dataclass(frozen=True)
class Quota:
    project: str
    domain: str
    gpus: int
    cpus: int
    memory_gib: int

    @property
    def namespace(self) -> str:
        return namespace_for(self.project, self.domain)


def namespace_for(project: str, domain: str) -> str:
    return f"{project}-{domain}"  # Flyte's default namespace_mapping: {{ project }}-{{ domain }}


def capacity(cluster: ClusterModel) -> Capacity:
    nodes = cluster.workload_nodes
    return Capacity(gpus=sum(n.gpu_count for n in nodes), cpus=sum(n.profile.cpu_threads for n in nodes),
                    memory_gib=sum(n.profile.memory_gib for n in nodes))


def quotas(cap: Capacity, settings: FlyteSettings) -> list[Quota]:
    """quota(project, domain) = floor(capacity x project% x domain% / 10000) for GPUs, CPUs, GiB.

    Integer arithmetic, rounded down: with project shares and domain shares each adding up to at
    most 100 % (the inventory check), the quotas of all namespaces add up to at most the capacity.
    """
    out = []
    for p in settings.projects:
        for d in settings.domains:
            share = p.share_percent * d.share_percent
            out.append(Quota(p.name, d.name, cap.gpus * share // 10_000, cap.cpus * share // 10_000,
                             cap.memory_gib * share // 10_000))
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
    cap = capacity(cluster)
    largest = max(cluster.workload_nodes, key=lambda n: (n.gpu_count, n.profile.cpu_threads, n.profile.memory_gib))
    return FlyteFacts(cap, tuple(quotas(cap, settings)),
                      TaskLimits(largest.profile.cpu_threads, largest.profile.memory_gib, largest.gpu_count),
                      tuple(namespace_for(p.name, d.name) for p in settings.projects for d in settings.domains))

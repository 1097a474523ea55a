"""Queue arithmetic: each Flyte project's Kueue quota per flavor (GPU pool) and resource, from the
inventory's project shares and the capacity of forge.model.capacity. Pure: Kueue's ClusterQueues, Flyte's
ResourceQuota ceilings and `forge queues` all read it.

For project p, flavor f and resource r (capacity C = C[f][r]):
- nominal   N = C x share / 100 in whole units by largest remainder (`largest_remainder`: the
  floors, then one more unit to each of the largest fractions until the shares' part of C is
  handed out), share = the project's `share_percent` in components.flyte,
  or its override for that flavor, named by the flavor or by its MIG layout
  (components.kueue.projects.<p>.flavor_shares.<flavor or layout>);
- borrowing B = floor((C - N) x borrowing% / 100): of what the other projects hold, how much p
  may use while they leave it idle (100: all of it);
- lending   L = floor(N x lending% / 100): how much of its own quota p lends while idle (it takes
  it back by pre-emption when its own work arrives: reclaimWithinCohort).
- a pre-emptible project (`pre_emptible`: its PriorityClass ranks below a whole-pool project's)
  holds no nominal quota on a whole-GPU pool: its nominal quota there goes to the first whole-pool
  project that is not pre-emptible itself, so all it runs there is borrowed, and borrowed quota is what Kueue
  takes back. Kueue never pre-empts a queue's work within its nominal quota for another queue
  (0.19.2: reclaimWithinCohort, borrowWithinCohort and fair sharing alike consider only queues
  above their nominal), so 24/7 embeddings inside their own quota kept the 16-node pre-train
  pending for good.
With every flavor's shares adding up to at most 100 % (checked), sum over projects of N <= C.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Collection, Iterable, Mapping

from pydantic import Field

from forge.model.capacity import GPU, Capacity, Pool
from forge.inventory.schema import Name, PositiveInt, Strict

Percent = Annotated[int, Field(ge=0, le=100)]
API = "kueue.x-k8s.io/v1beta2"  # Kueue 0.19's stored version of its custom resources
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
FLYTE_PROJECT_LABEL = "forge.exa.ai/flyte-project"  # on every Flyte project-domain Namespace
LOCAL_QUEUE = "default"  # the LocalQueue of every project-domain namespace (Flyte's default label)
# The LocalQueue of the cloud: on an on-premises cluster with a burst cluster (components.kueue.burst)
# it feeds the project's cloud ClusterQueue, which MultiKueue dispatches to the burst cluster; on a
# cloud cluster it is the project's own queue (MultiKueue creates the job there under this name).
CLOUD_QUEUE = "cloud"


class ProjectQueue(Strict):
    """Per-project overrides of the cluster-wide defaults below."""

    borrowing_limit_percent: Percent | None = None
    lending_limit_percent: Percent | None = None
    # Share of one flavor (GPU pool) instead of the project's share_percent: e.g. most MIG slices
    # for the interactive project. Keyed by the flavor, or by a MIG layout (every pool cut that
    # way: stays valid when the GPU model changes). Every flavor's shares must add up to <= 100.
    flavor_shares: dict[Name, Percent] = {}


class FlavorSettings(Strict):
    """Per-flavor (GPU pool) settings: components.kueue.flavors.<flavor>."""

    # Topology-aware placement (the ResourceFlavor's topologyName, Topology `racks`). Unset: on for a
    # pool of nodes that exist, off for a pool Karpenter makes (forge.components.kueue_flavors: Kueue's
    # TAS counts only Ready nodes, Karpenter makes nodes only for pending pods; true there is refused).
    topology: bool | None = None


class BurstLink(Strict):
    """The cloud cluster this (on-premises) cluster's `cloud` queues dispatch to (MultiKueue):
    a cluster of the fleet with cluster.cloud, the same Flyte projects and domains, and Kueue."""

    cluster: Name


class KueueSettings(Strict):
    cohort: Name = "forge"  # every project's ClusterQueue borrows and lends within it
    borrowing_limit_percent: Percent = 100
    lending_limit_percent: Percent = 100
    # Admitted jobs whose pods are not all running after this long are evicted and requeued, so a
    # half-started multi-node job gives its GPUs back (waitForPodsReady). Unset: 20 on premises, 60
    # on a cloud cluster (forge.components.kueue_cloud); a MultiKueue manager's is at least its
    # burst cluster's.
    pods_ready_timeout_minutes: PositiveInt | None = None
    # WorkloadPriorityClasses to create, by PriorityClass name (default: every class of
    # components.scheduling). Kubernetes' system classes are never mapped.
    priority_classes: list[Name] | None = None
    projects: dict[Name, ProjectQueue] = {}
    flavors: dict[Name, FlavorSettings] = {}
    # Projects whose queue must be able to hold each whole-GPU pool in full, so that a job on every
    # node of it (the seed's 16-node pre-train) can be admitted at all. Default: the project with
    # the largest share (the first of equals); [] when the pools are partitioned on purpose.
    whole_pool_projects: list[Name] | None = None
    # This cluster is the MultiKueue manager of a burst cluster (docs/burst.md): each project-domain
    # namespace gets LocalQueue `cloud`, feeding the project's ClusterQueue <project>-cloud, whose
    # quotas are the burst cluster's own queue of that project (its pools at their max_count).
    burst: BurstLink | None = None


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing: int
    lending: int

    @property
    def reach(self) -> int:
        """The most the project can hold of this flavor's resource: its quota plus what it borrows."""
        return self.nominal + self.borrowing


@dataclass(frozen=True)
class ProjectQuotas:
    project: str
    share_percent: int
    flavors: dict[str, dict[str, Quota]]  # flavor -> resource -> quota, in capacity order

    def reach(self, resource: str) -> int:
        return sum(q[resource].reach for q in self.flavors.values() if resource in q)


def share_key(pool: Pool, shares: dict[str, int]) -> str | None:
    """Which key of a flavor_shares block applies to `pool`: its flavor, else its MIG layout."""
    return next((k for k in (pool.flavor, pool.mig_layout) if k is not None and k in shares), None)


def share_of(project: str, share: int, pool: Pool, settings: KueueSettings) -> int:
    override = settings.projects.get(project)
    key = share_key(pool, override.flavor_shares) if override else None
    return override.flavor_shares[key] if override and key else share


def largest_remainder(amount: int, percents: list[int]) -> list[int]:
    """Whole shares of `amount` in proportion to `percents` (the Hamilton method): each gets the
    floor of its exact share, then the units rounding lost go one each to the largest remainders
    (ties: the earlier one). Shares adding up to 100 % hand out exactly `amount`; to less, the
    floor of that part of it. Flooring each share alone lost a unit per share (h200's four queues
    held 126 of 128 GPUs, so no queue could ever reach the whole pool)."""
    exact = [amount * p for p in percents]  # in hundredths of a unit
    floors = [e // 100 for e in exact]
    left = amount * sum(percents) // 100 - sum(floors)
    for i in sorted(range(len(percents)), key=lambda i: (-(exact[i] % 100), i))[:left]:
        floors[i] += 1
    return floors


def whole_gpu_pool(pool: Pool) -> bool:
    return pool.resources.get(GPU, 0) > 0 and GPU not in pool.slices


def hand_over(pool: Pool, nominals: list[int], projects: list[tuple[str, int]], settings: KueueSettings,
              pre_emptible: Collection[str]) -> list[int]:
    """On a whole-GPU pool, each pre-emptible project's nominal quota moves to the first whole-pool
    project that is not one (every other project keeps what its share gives it)."""
    names = [project for project, _ in projects]
    heir = next((names.index(w) for w in whole_pool_projects(settings, projects) if w in names and w not in pre_emptible), None)
    if heir is None or not whole_gpu_pool(pool):
        return nominals
    out = list(nominals)
    for i, name in enumerate(names):
        if name in pre_emptible:
            out[heir], out[i] = out[heir] + out[i], 0
    return out


def project_ranks(flyte: Any, scheduling: Any) -> dict[str, int]:
    """Each Flyte project's priority value (its PriorityClass in components.scheduling); a project
    whose class is unknown is left out (the inventory check reports it)."""
    values = {c.name: c.value for c in (scheduling.priority_classes if scheduling is not None else [])}
    return {p.name: values[p.priority_class] for p in (flyte.projects if flyte is not None else []) if p.priority_class in values}


def pre_emptible_projects(settings: KueueSettings, projects: list[tuple[str, int]], ranks: Mapping[str, int]) -> frozenset[str]:
    """Projects whose PriorityClass ranks below a whole-pool project's (batch preprocessing below
    default training): on whole-GPU pools their work is only ever borrowed (module doc)."""
    top = max((ranks[w] for w in whole_pool_projects(settings, projects) if w in ranks), default=None)
    return frozenset(p for p, _ in projects if top is not None and p in ranks and ranks[p] < top)


def project_quotas(cap: Capacity, projects: Iterable[tuple[str, int]], settings: KueueSettings,
                   pre_emptible: Collection[str] = ()) -> list[ProjectQuotas]:
    """Quotas of each (project, share_percent), in the order given."""
    projects = list(projects)
    limits = []
    for project, _ in projects:
        own = settings.projects.get(project) or ProjectQueue()
        limits.append((settings.borrowing_limit_percent if own.borrowing_limit_percent is None else own.borrowing_limit_percent,
                       settings.lending_limit_percent if own.lending_limit_percent is None else own.lending_limit_percent))
    flavors: list[dict[str, dict[str, Quota]]] = [{} for _ in projects]
    for pool in cap.pools:
        pcts = [share_of(project, share, pool, settings) for project, share in projects]
        for i in range(len(projects)):
            flavors[i][pool.flavor] = {}
        for resource, amount in pool.resources.items():
            for i, nominal in enumerate(hand_over(pool, largest_remainder(amount, pcts), projects, settings, pre_emptible)):
                borrow, lend = limits[i]
                flavors[i][pool.flavor][resource] = Quota(nominal, (amount - nominal) * borrow // 100, nominal * lend // 100)
    return [ProjectQuotas(project, share, flavors[i]) for i, (project, share) in enumerate(projects)]


def whole_pool_projects(settings: KueueSettings, projects: list[tuple[str, int]]) -> list[str]:
    if settings.whole_pool_projects is not None:
        return list(settings.whole_pool_projects)
    return [max(projects, key=lambda p: p[1])[0]] if projects else []


def cohort_reach(quotas: list[ProjectQuotas], flavor: str, resource: str, project: str) -> int:
    """The most of `resource` in `flavor` one project's queue can hold with the cohort otherwise
    idle: its nominal quota, plus what the others lend, up to its borrowing limit."""
    own = next(q for q in quotas if q.project == project).flavors[flavor][resource]
    lent = sum(q.flavors[flavor][resource].lending for q in quotas if q.project != project)
    return own.nominal + min(own.borrowing, lent)


def overcommitted(cap: Capacity, quotas: list[ProjectQuotas]) -> list[tuple[str, str, int, int]]:
    """(flavor, resource, sum of nominal quotas, capacity) wherever the quotas exceed the capacity."""
    out = []
    for pool in cap.pools:
        for resource, amount in pool.resources.items():
            total = sum(q.flavors[pool.flavor][resource].nominal for q in quotas)
            if total > amount:
                out.append((pool.flavor, resource, total, amount))
    return out


def local_queue(namespace: str, cluster_queue: str, name: str = LOCAL_QUEUE) -> dict:
    """The queue jobs in `namespace` name (label QUEUE_NAME_LABEL), feeding `cluster_queue`."""
    return {"apiVersion": API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue}}


def kueue_settings(cluster) -> KueueSettings | None:
    """The cluster's typed Kueue settings (the fleet stage validated them), or None when it runs
    no Kueue (component `kueue`)."""
    return cluster.component_settings.get("kueue")

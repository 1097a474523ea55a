"""Inventory rules of the kueue component, each reported at the inventory line at fault:

- Kueue's queues are Flyte's projects: components.flyte must exist, and every project named under
  components.kueue.projects must be one of its projects;
- every key of a flavor_shares block names a GPU pool (flavor) of the cluster or a MIG layout in use;
- nominal quotas never exceed capacity: per flavor and resource, the projects' nominal quotas add
  up to at most what the pool has (reported at the overrides that push a flavor over; without
  overrides Flyte's check keeps the project shares within 100 %);
- the queues of `whole_pool_projects` (default: the project with the largest share) can each hold
  every whole-GPU pool in full with the cohort idle: with floor() quotas or a queue that lends
  only half, a job on every node would wait for ever;
- every WorkloadPriorityClass has a PriorityClass: names under priority_classes must be classes
  of components.scheduling;
- the rack labels the Topology places by match the nodes: a node's extra label
  forge.exa.ai/rack must not contradict its `rack`.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from forge.model.capacity import Capacity, capacity, quantity
from forge.components.kueue_cloud import check_flavors
from forge.components.scheduling import priority_class_names
from forge.errors import Problem
from forge.model.cluster import LABEL_DOMAIN, derive
from forge.model.capacity import GPU
from forge.model.queues import (KueueSettings, ProjectQuotas, cohort_reach, pre_emptible_projects, project_quotas, project_ranks,
                          share_key, share_of, whole_pool_projects)

FLYTE = "flyte"  # the component whose projects Kueue's queues are
SCHEDULING = "scheduling"
RACK_LABEL = f"{LABEL_DOMAIN}/rack"


def check_kueue(loaded, settings: KueueSettings, given: Mapping[str, Any]) -> Iterator[Problem]:
    at = ("components", "kueue")
    yield from _racks(loaded)
    scheduling = given.get(SCHEDULING)
    if settings.priority_classes is not None and not (SCHEDULING in given and scheduling is None):
        classes = priority_class_names(scheduling)
        for i, name in enumerate(settings.priority_classes):
            if name not in classes:
                yield loaded.problem(at + ("priority_classes", i), f"no PriorityClass '{name}' in components.scheduling (expected one of: {', '.join(classes) or 'none'})")
    if FLYTE not in given:
        yield loaded.problem(at, "Kueue's ClusterQueues are Flyte's projects: add components.flyte")
        return
    flyte = given[FLYTE]
    if flyte is None:
        return  # Flyte's block has its own problems
    shares = {p.name: p.share_percent for p in flyte.projects}
    for project in settings.projects:
        if project not in shares:
            yield loaded.problem(at + ("projects", project), f"unknown Flyte project '{project}' (expected one of: {', '.join(shares)})")
    cap = _capacity(loaded)
    if cap is None:
        return  # the nodes or MIG layouts have their own problems, reported elsewhere
    yield from check_flavors(loaded, settings, cap)
    batch = pre_emptible_projects(settings, list(shares.items()), project_ranks(flyte, scheduling))
    yield from _quotas(loaded, settings, cap, shares, batch)


def _capacity(loaded) -> Capacity | None:
    try:
        return capacity(derive(loaded, {}))
    except (KeyError, TypeError, AttributeError):
        return None


def _quotas(loaded, settings: KueueSettings, cap: Capacity, shares: dict, batch: frozenset[str]) -> Iterator[Problem]:
    at = ("components", "kueue", "projects")
    flavors = [p.flavor for p in cap.pools]
    layouts = sorted({p.mig_layout for p in cap.pools if p.mig_layout})
    for project, spec in settings.projects.items():
        for key in spec.flavor_shares:
            if key not in flavors and key not in layouts:
                yield loaded.problem(at + (project, "flavor_shares", key), f"no GPU pool nor MIG layout in use '{key}' on this cluster "
                                     f"(pools: {', '.join(flavors)}; layouts: {', '.join(layouts) or 'none'}): drop or rename this share")
    valid = list(shares.items())
    quotas = project_quotas(cap, valid, settings, batch)
    for i, project in enumerate(settings.whole_pool_projects or []):
        if project not in shares:
            yield loaded.problem(("components", "kueue", "whole_pool_projects", i),
                                 f"unknown Flyte project '{project}' (expected one of: {', '.join(shares)})")
    wanted = [p for p in whole_pool_projects(settings, valid) if p in shares]
    yield from _whole_pools(loaded, settings, cap, quotas, wanted)
    for pool in cap.pools:
        over = [(r, sum(q.flavors[pool.flavor][r].nominal for q in quotas), n) for r, n in pool.resources.items()]
        over = [o for o in over if o[1] > o[2]]
        if not over:
            continue
        overrides = [(p, key) for p, spec in settings.projects.items() if (key := share_key(pool, spec.flavor_shares))]
        if not overrides:
            continue  # Flyte's own check reports its project shares adding up to over 100 %
        total = sum(share_of(p, s, pool, settings) for p, s in valid)
        detail = ", ".join(f"{r} {quantity(r, got)} > {quantity(r, n)}" for r, got, n in over)
        message = f"nominal quotas of flavor '{pool.flavor}' exceed its capacity ({detail}): its shares add up to {total}%"
        for project, key in overrides:
            yield loaded.problem(at + (project, "flavor_shares", key), message)


def _whole_pools(loaded, settings: KueueSettings, cap: Capacity, quotas: list[ProjectQuotas],
                 wanted: list[str]) -> Iterator[Problem]:
    """Each pool of whole GPUs must be reachable in full, every resource of it, by each wanted queue."""
    at = ("components", "kueue")
    for pool in cap.pools:
        if pool.resources.get(GPU, 0) == 0 or GPU in pool.slices:
            continue
        for project in wanted:
            gaps = {r: n - cohort_reach(quotas, pool.flavor, r, project) for r, n in pool.resources.items()
                    if r not in pool.slices and cohort_reach(quotas, pool.flavor, r, project) < n}
            if not gaps:
                continue
            detail = ", ".join(f"{quantity(r, n)} {r}" for r, n in gaps.items())
            message = (f"queue {project} cannot hold the whole pool '{pool.flavor}' ({len(pool.nodes)} node{'s' if len(pool.nodes) != 1 else ''}): with the "
                       f"others idle it falls {detail} short, so a job on every node is never admitted; let the other "
                       f"queues lend (lending_limit_percent 100) and {project} borrow (borrowing_limit_percent 100) "
                       "everything, or name other projects in components.kueue.whole_pool_projects ([] for none)")
            fields = [at + ("projects", p, key) for p, spec in settings.projects.items()
                      for key in ("lending_limit_percent", "borrowing_limit_percent")
                      if getattr(spec, key) is not None and getattr(spec, key) < 100
                      and (key == "lending_limit_percent") != (p == project)]
            for field in fields or [at]:
                yield loaded.problem(field, message)


def _racks(loaded) -> Iterator[Problem]:
    for i, node in enumerate(loaded.inventory.nodes):
        label = node.labels.get(RACK_LABEL)
        if label is not None and label != node.rack:
            yield loaded.problem(("nodes", i, "labels", RACK_LABEL),
                                 f"label {RACK_LABEL}={label} contradicts the node's rack '{node.rack}': Kueue's Topology places jobs by this label")

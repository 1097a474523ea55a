"""What Kueue does differently where Karpenter makes the nodes (a cloud cluster's pools).

- **No topology-aware placement on an autoscaled pool's flavor.** A ResourceFlavor with a
  `topologyName` makes every workload on it topology-aware (Kueue 0.19: isTASOnly/isTASImplied),
  and Kueue's TAS counts only nodes that exist and are Ready. Karpenter makes a node only for a
  pod that is pending, and Kueue keeps a job suspended (its pods gated) until it is admitted: with
  no node yet, nothing is admitted and nothing is made. Kueue documents TAS with an autoscaler
  only through a ProvisioningRequest admission check, which Karpenter does not implement
  (kubernetes-sigs/karpenter#5133). Placement there comes from Karpenter and the pool's cluster
  placement group (forge.components.karpenter). `components.kueue.flavors.<flavor>.topology`
  turns it off on premises too; `true` on an autoscaled flavor is refused at its line.
- **A longer waitForPodsReady on a cloud cluster.** Launching 100 p5e and pulling a training image
  onto each takes longer than a start on machines that are already there; an admitted job whose
  pods are not all ready by the timeout is evicted and requeued, and its fresh nodes go empty. A
  MultiKueue manager evicts by the status the worker reports, at its own timeout: so its timeout
  is at least its burst cluster's.
"""
from __future__ import annotations

from typing import Iterator

from forge.model.capacity import Capacity, Pool
from forge.errors import Problem
from forge.model.queues import KueueSettings

PODS_READY_MINUTES = 20  # on premises: the nodes are there; a start that takes longer is broken
PODS_READY_MINUTES_CLOUD = 60  # Karpenter launching up to 100 GPU instances, then the image pull on each


def autoscaled(pool: Pool) -> bool:
    """The pool's nodes are made by Karpenter (they may not exist when a job is admitted)."""
    return all(n.pool is not None and n.pool.karpenter for n in pool.nodes)


def uses_topology(pool: Pool, settings: KueueSettings) -> bool:
    chosen = settings.flavors.get(pool.flavor)
    if chosen is not None and chosen.topology is not None:
        return chosen.topology and not autoscaled(pool)
    return not autoscaled(pool)


def check_flavors(loaded, settings: KueueSettings, cap: Capacity) -> Iterator[Problem]:
    at = ("components", "kueue", "flavors")
    names = [p.flavor for p in cap.pools]
    for flavor, chosen in settings.flavors.items():
        pool = cap.pool(flavor)
        if pool is None:
            yield loaded.problem(at + (flavor,), f"no flavor '{flavor}' on this cluster (expected one of: {', '.join(names) or 'none'})")
        elif chosen.topology and autoscaled(pool):
            yield loaded.problem(at + (flavor, "topology"), (
                f"flavor '{flavor}' is a pool Karpenter makes: Kueue's topology-aware placement counts only nodes that "
                "exist and are Ready, and Karpenter makes nodes only for pods Kueue has admitted, so no job would ever be "
                "admitted; drop this (placement comes from the pool's placement_group)"))


def pods_ready_minutes(settings: KueueSettings, cloud: bool) -> int:
    """This cluster's own waitForPodsReady timeout: the inventory's, else the default for its kind."""
    if settings.pods_ready_timeout_minutes is not None:
        return settings.pods_ready_timeout_minutes
    return PODS_READY_MINUTES_CLOUD if cloud else PODS_READY_MINUTES


def manager_pods_ready_minutes(own: int, burst: KueueSettings | None) -> int:
    """A MultiKueue manager's timeout: at least its burst cluster's (a cloud cluster), or the
    manager evicts a cloud job the worker is still starting."""
    return max(own, pods_ready_minutes(burst, True)) if burst is not None else own

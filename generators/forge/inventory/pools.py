"""Rules of a cloud cluster's node pools (`cluster.cloud` with `node_pools` instead of `nodes`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from forge.errors import Problem
from forge.facts.hardware import GPU_MODELS, INSTANCE_TYPES, InstanceType
from forge.inventory.layouts import MIG_DISABLED
from forge.inventory.located import LoadedInventory
from forge.inventory.schema import GpuSpec, NodePool, Profile, Taint


@dataclass(frozen=True)
class PoolModel:
    """A cloud node pool: up to `max_count` nodes of one instance type, made on demand."""

    name: str
    role: str  # system (the managed node group), gpu or cpu (Karpenter NodePools)
    instance: InstanceType
    capacity_type: str  # spot or on-demand
    max_count: int
    efa_interfaces: int  # per node, 0 when the pool attaches none
    labels: tuple[tuple[str, str], ...]  # the inventory's extra labels (hashable: nodes share one pool)
    taints: tuple[Taint, ...]
    mig_layout: str | None
    weight: int | None = None  # the inventory's; None: by capacity type (forge.components.karpenter)
    placement_group: str | None = None

    @property
    def karpenter(self) -> bool:
        """Made by Karpenter (every pool but the system one, which exists before Karpenter runs)."""
        return self.role != "system"


def pool_model(pool: NodePool) -> PoolModel:
    instance = INSTANCE_TYPES[pool.instance_type]
    efa = instance.efa_interfaces if pool.efa is not False else 0
    layout = pool.mig_layout or (MIG_DISABLED if instance.gpu_model and GPU_MODELS[instance.gpu_model].mig_capable else None)
    return PoolModel(pool.name, pool.role, instance, pool.capacity_type, pool.max_count, efa,
                     tuple(pool.labels.items()), tuple(pool.taints), layout, pool.weight, pool.placement_group)


def instance_profile(instance: InstanceType) -> Profile:
    """The instance type as a profile: what every fact over nodes reads (GPUs, CPUs, memory).
    Built without validation: the catalogue was checked when it was read."""
    gpu = (GpuSpec.model_construct(model=instance.gpu_model, count=instance.gpu_count, nvlink=instance.nvlink)
           if instance.gpu_model else None)
    return Profile.model_construct(server=instance.key, cpu_threads=instance.cpu_threads, memory_gib=instance.memory_gib,
                                   gpu=gpu, nics=[], nvme=[], mig_layout=None)


def pool_rules(loaded: LoadedInventory) -> Iterator[Problem]:
    inv = loaded.inventory
    cloud = inv.cluster.cloud
    if cloud is None:
        if inv.node_pools:
            yield loaded.problem(("node_pools",), "node pools are for a cloud cluster: set cluster.cloud (provider, region, "
                                                  "account), or list the machines under nodes")
        elif not inv.nodes:
            yield loaded.problem(("nodes",), "no nodes: list at least one (or, for a cloud cluster, set cluster.cloud and node_pools)")
        return
    if inv.nodes:
        yield loaded.problem(("nodes",), "a cloud cluster (cluster.cloud) has node_pools, not nodes: move the machines to an "
                                         "on-premises inventory or describe them as node pools")
    if not inv.node_pools:
        yield loaded.problem(("cluster", "cloud"), "a cloud cluster needs node_pools (at least one with role system, for the controllers)")
        return
    yield from _each_pool(loaded)
    if not any(p.role == "system" for p in inv.node_pools):
        yield loaded.problem(("node_pools",), "no pool with role system: the controllers (Karpenter among them) need the "
                                              "managed node group to run on; add one (on-demand, a CPU instance type)")


def _each_pool(loaded: LoadedInventory) -> Iterator[Problem]:
    inv = loaded.inventory
    seen: dict[str, int] = {}
    for i, pool in enumerate(inv.node_pools):
        at = ("node_pools", i)
        if pool.name in seen:
            yield loaded.problem(at + ("name",), f"duplicate node pool name '{pool.name}' (also node_pools[{seen[pool.name]}])")
        seen.setdefault(pool.name, i)
        instance = INSTANCE_TYPES[pool.instance_type]
        if instance.provider != inv.cluster.cloud.provider:
            yield loaded.problem(at + ("instance_type",), f"{pool.instance_type} is an {instance.provider} instance type, "
                                                          f"not {inv.cluster.cloud.provider}")
        has_gpu = instance.gpu_model is not None
        if (pool.role == "gpu") != has_gpu:
            said = f"{pool.instance_type} has no GPUs: use role cpu or system, or a GPU instance type" if not has_gpu else \
                f"{pool.instance_type} has {instance.gpu_count} x {instance.gpu_model}: use role gpu"
            yield loaded.problem(at + ("role",), f"role {pool.role}: {said}")
        if pool.role == "system":
            yield from _system_pool(loaded, i, pool)
        if pool.efa and not instance.efa_interfaces:
            yield loaded.problem(at + ("efa",), f"{pool.instance_type} has no EFA interfaces: remove efa (or set it false)")
        if pool.mig_layout is not None:
            yield from _pool_mig(loaded, i, pool, instance)
        taints = [(t.key, t.effect) for t in pool.taints]
        for key, effect in sorted({t for t in taints if taints.count(t) > 1}):
            yield loaded.problem(at + ("taints",), f"taint {key}:{effect} given {taints.count((key, effect))} times")


def _system_pool(loaded: LoadedInventory, i: int, pool) -> Iterator[Problem]:
    """The system pool is the managed node group the cluster was created with: Karpenter never
    makes its nodes, so Karpenter's fields mean nothing there."""
    at = ("node_pools", i)
    if pool.capacity_type == "spot":
        yield loaded.problem(at + ("capacity_type",), "the system pool runs the controllers (Karpenter itself): "
                                                      "spot reclaims would take them away; use on-demand")
    elif pool.capacity_type == "reserved":
        yield loaded.problem(at + ("capacity_type",), "the system pool is the managed node group, not made by Karpenter, "
                                                      "which alone consumes capacity reservations: use on-demand")
    for field in ("weight", "placement_group"):
        if getattr(pool, field) is not None:
            yield loaded.problem(at + (field,), f"the system pool is the managed node group, which Karpenter never makes: "
                                                f"remove {field} (it is a Karpenter NodePool's)")


def _pool_mig(loaded: LoadedInventory, i: int, pool, instance) -> Iterator[Problem]:
    at = ("node_pools", i, "mig_layout")
    layouts = loaded.inventory.cluster.mig_layouts
    if pool.mig_layout not in layouts:
        known = ", ".join(sorted(layouts)) or "none defined"
        yield loaded.problem(at, f"unknown MIG layout '{pool.mig_layout}' (known: {known}): define it under cluster.mig_layouts")
    elif not (instance.gpu_model and GPU_MODELS[instance.gpu_model].mig_capable):
        yield loaded.problem(at, f"MIG layout set but {pool.instance_type} has {instance.gpu_model or 'no GPU'}, which cannot do MIG")

"""What a cluster offers workloads, per pool of alike GPU nodes and per extended resource: the one
place quotas are computed from (Flyte's ResourceQuotas, Kueue's ResourceFlavors and ClusterQueues,
`forge queues`).

A pool is the workload nodes (control plane excluded) with the same GPU model and MIG layout:
Kueue makes one ResourceFlavor of each, selecting its nodes by `forge.exa.ai/gpu-model` and
`nvidia.com/mig.config` (both set by node-feature-discovery from the inventory). Nodes without GPUs
form one pool per profile.

Units, per node, as the device plugins advertise them:
- `cpu`: hardware threads; `memory`: GiB;
- whole GPUs: `nvidia.com/gpu`; a GPU a MIG layout cuts is no longer a whole GPU;
- MIG slices: under the `mixed` strategy each profile is its own resource,
  `nvidia.com/mig-<profile>` (GPUs count x instances per GPU); under the `single` strategy the
  device plugin advertises the slices as `nvidia.com/gpu` (single is only chosen when every GPU
  node carries one profile on all its GPUs, so the cluster has no whole GPUs to confuse them with);
- RDMA: `rdma/<name>` of the shared device plugin, RDMA_HCA_MAX pods per node that has the role's
  NICs (a ceiling on pods, not bandwidth).

`gpu_equivalents` turns slices back into GPUs (a slice of g compute slices is g/7 of a GPU), so a
fleet's whole GPUs plus its slices never add up to more than its physical GPUs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

from forge.facts.hardware import MIG_SLICES_COMPUTE
from forge.model.cluster import EFA_RESOURCE, LABEL_DOMAIN, MIG_CONFIG_LABEL, MIG_DISABLED, RDMA_HCA_MAX, ClusterModel, NodeModel

GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
MIG_PREFIX = "nvidia.com/mig-"
GPU_MODEL_LABEL = f"{LABEL_DOMAIN}/gpu-model"
PROFILE_LABEL = f"{LABEL_DOMAIN}/profile"


def mig_resource(profile: str) -> str:
    return f"{MIG_PREFIX}{profile}"


def quantity(resource: str, amount: int) -> str:
    """A Kubernetes quantity for an amount in our units (memory is counted in GiB)."""
    return f"{amount}Gi" if resource == MEMORY else str(amount)


@dataclass(frozen=True)
class Pool:
    flavor: str  # the Kueue ResourceFlavor's name
    gpu_model: str | None
    mig_layout: str | None  # None: MIG off (or the GPU cannot do it)
    node_labels: dict[str, str]  # what selects exactly these nodes
    nodes: tuple[NodeModel, ...]
    resources: dict[str, int]  # resource -> amount, in the units above, ordered
    slices: dict[str, tuple[str, int]] = field(default_factory=dict)  # resource -> (MIG profile, compute slices) when it counts slices

    @property
    def racks(self) -> tuple[str, ...]:
        return tuple(sorted({n.rack for n in self.nodes}))

    def gpu_equivalents(self) -> Fraction:
        """Physical GPUs this pool's GPU resources stand for (whole GPUs + slices x g/7)."""
        total = Fraction(0)
        for resource, amount in self.resources.items():
            if resource in self.slices:
                total += Fraction(amount * self.slices[resource][1], MIG_SLICES_COMPUTE)
            elif resource == GPU:
                total += amount
        return total

    def unit(self, resource: str) -> str:
        """What one unit of `resource` is in this pool (for tables and the README)."""
        if resource in self.slices:
            return f"MIG {self.slices[resource][0]} slice"
        return {GPU: "whole GPU", CPU: "thread", MEMORY: "GiB", EFA_RESOURCE: "EFA interface"}.get(resource, "pod")


@dataclass(frozen=True)
class Capacity:
    pools: tuple[Pool, ...]

    @property
    def resources(self) -> tuple[str, ...]:
        """Every resource any pool offers, in a stable order: cpu, memory, GPUs, MIG, RDMA."""
        seen = {r: None for p in self.pools for r in p.resources}
        return tuple(sorted(seen, key=_resource_order))

    def total(self, resource: str) -> int:
        return sum(p.resources.get(resource, 0) for p in self.pools)

    def pool(self, flavor: str) -> Pool | None:
        return next((p for p in self.pools if p.flavor == flavor), None)

    @property
    def whole_gpus(self) -> int:
        """Whole GPUs: physical GPUs no MIG layout cuts."""
        return sum(p.resources.get(GPU, 0) for p in self.pools if GPU not in p.slices)


def _resource_order(resource: str) -> tuple[int, str]:
    rank = {CPU: 0, MEMORY: 1, GPU: 2}.get(resource)
    if rank is None:
        rank = 3 if resource.startswith(MIG_PREFIX) else 4
    return (rank, resource)


def node_gpus(node: NodeModel, layouts: dict, strategy: str) -> tuple[dict[str, int], dict[str, tuple[str, int]]]:
    """The GPU resources one node advertises: whole GPUs and MIG slices, by resource name."""
    if not node.gpu:
        return {}, {}
    groups = layouts.get(node.mig_layout or MIG_DISABLED) or []
    cut: dict[str, int] = {}  # MIG profile -> instances on this node
    cut_gpus = 0
    for group in groups:
        count = node.gpu_count if group.gpus == "all" else len(group.gpus)
        cut_gpus += count
        for profile, per_gpu in group.profiles.items():
            cut[profile] = cut.get(profile, 0) + count * per_gpu
    out: dict[str, int] = {}
    slices: dict[str, tuple[str, int]] = {}
    if node.gpu_count - cut_gpus:
        out[GPU] = node.gpu_count - cut_gpus
    for profile, amount in sorted(cut.items()):
        resource = GPU if strategy == "single" else mig_resource(profile)
        out[resource] = out.get(resource, 0) + amount
        mig = node.gpu.mig_profile(profile)
        slices[resource] = (profile, mig.compute_slices if mig else MIG_SLICES_COMPUTE)
    return out, slices


def _pool_key(node: NodeModel) -> tuple[str, str | None, str | None]:
    if not node.gpu:
        return (f"cpu-{node.profile_name}", None, None)
    layout = node.mig_layout if node.mig_layout and node.mig_layout != MIG_DISABLED else None
    flavor = node.gpu.key.lower() + (f"-{layout}" if layout else "")
    return (flavor, node.gpu.key, layout)


def _labels(node: NodeModel) -> dict[str, str]:
    if not node.gpu:
        return {PROFILE_LABEL: node.profile_name}
    labels = {GPU_MODEL_LABEL: node.gpu.key}
    if node.mig_layout:  # MIG-capable: all-disabled too, so whole-GPU flavors skip cut nodes
        labels[MIG_CONFIG_LABEL] = node.mig_layout
    return labels


def _add(into: dict[str, int], items: Iterable[tuple[str, int]]) -> None:
    for resource, amount in items:
        into[resource] = into.get(resource, 0) + amount


def node_resources(cluster: ClusterModel, node: NodeModel) -> dict[str, int]:
    """What one node advertises, in the units above: its threads, GiB, GPUs and slices, and each
    RDMA resource its NICs give it (the fleet in a box makes its Node's allocatable from this)."""
    out = {CPU: node.profile.cpu_threads, MEMORY: node.profile.memory_gib}
    out |= node_gpus(node, cluster.settings.mig_layouts, cluster.mig_strategy)[0]
    out |= {r.resource: RDMA_HCA_MAX for r in cluster.rdma_resources if node.name in r.nodes}
    if node.pool and node.pool.efa_interfaces:  # a cloud node's EFA interfaces (the EFA device plugin's)
        out[EFA_RESOURCE] = node.pool.efa_interfaces
    return out


def capacity(cluster: ClusterModel) -> Capacity:
    """The cluster's workload capacity, per pool and resource."""
    groups: dict[tuple, list[NodeModel]] = {}
    for node in cluster.workload_nodes:
        groups.setdefault(_pool_key(node), []).append(node)
    pools = []
    for (flavor, model, layout), nodes in sorted(groups.items()):
        resources: dict[str, int] = {CPU: 0, MEMORY: 0}
        slices: dict[str, tuple[str, int]] = {}
        for node in nodes:
            _add(resources, node_resources(cluster, node).items())
            slices.update(node_gpus(node, cluster.settings.mig_layouts, cluster.mig_strategy)[1])
        ordered = {r: resources[r] for r in sorted(resources, key=_resource_order)}
        pools.append(Pool(flavor, model, layout, _labels(nodes[0]), tuple(nodes), ordered, slices))
    return Capacity(tuple(pools))


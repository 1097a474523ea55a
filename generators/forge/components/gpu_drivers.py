"""GPU drivers per node pool, for clusters whose GPU generations need different driver branches.

The GPU Operator's ClusterPolicy installs one driver on every GPU node. When the cluster's GPU
architectures map to different branches in charts/versions.yaml (`gpu_drivers`: Ampere stays on
the R580 long-term branch, Hopper/Ada/Blackwell take the operator's default branch), the
ClusterPolicy hands the driver to the NVIDIADriver CRD (`driver.nvidiaDriverCRD.enabled`, the
chart's default CR off) and forge writes one NVIDIADriver per GPU profile ("pool"): that pool's
branch, selected by the profile label forge puts on its nodes, with GPUDirect RDMA on only where
the pool's compute NICs can do it. NVIDIADrivers must not overlap; profiles never do.

A cluster whose GPUs all take one branch (every shipped fleet) stays on the ClusterPolicy driver.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from forge.facts.hardware import DRIVER_BY_ARCHITECTURE
from forge.model.cluster import LABEL_DOMAIN, ClusterModel, NodeModel

# The chart's own driver image (driver.repository / driver.image of the pinned gpu-operator): the
# operator appends the version and the node's OS to it.
DRIVER_REPOSITORY = "nvcr.io/nvidia"
DRIVER_IMAGE = "driver"
PROFILE_LABEL = f"{LABEL_DOMAIN}/profile"


@dataclass(frozen=True)
class DriverPool:
    """The GPU nodes of one profile and the driver they get."""

    profile: str
    architecture: str
    version: str
    rdma: bool  # nvidia-peermem: the pool's compute-role NICs do GPUDirect RDMA, its GPUs not over DMA-BUF
    nodes: tuple[str, ...]
    dma_buf: bool = False  # GPUDirect RDMA over DMA-BUF (open kernel modules), no nvidia-peermem

    @property
    def name(self) -> str:
        return f"forge-{self.profile}"


def needs_pools(cluster: ClusterModel) -> bool:
    """Whether the cluster's GPU architectures need more than one driver branch."""
    return len({DRIVER_BY_ARCHITECTURE[m.architecture] for m in cluster.gpu_models}) > 1


def _gpudirect(node: NodeModel) -> bool:
    return any(model.gpudirect_rdma for _, model in node.nics("compute"))


# GPUDirect RDMA without nvidia-peermem: the open kernel modules export GPU memory as DMA-BUF,
# which NCCL 2.19+ uses by default. nvidia-peermem links the GPU driver to the NIC driver's
# ib_core, so a GPU and a DOCA driver reload on one node can wedge; without it they are independent.
OPEN_KERNEL_MODULES = "open"  # the chart's driver.kernelModuleType / NVIDIADriver spec.kernelModuleType


def needs_peermem(nodes: Iterable[NodeModel]) -> bool:
    """nvidia-peermem only where a GPU node's compute NICs do GPUDirect RDMA and its GPU cannot use
    DMA-BUF (the hardware catalogue's dma_buf)."""
    return any(_gpudirect(n) and not n.gpu.dma_buf for n in nodes if n.gpu is not None)


def dma_buf(nodes: Iterable[NodeModel]) -> bool:
    """GPUDirect RDMA over DMA-BUF: some node does GPUDirect RDMA and none needs nvidia-peermem."""
    nodes = list(nodes)
    return any(_gpudirect(n) for n in nodes) and not needs_peermem(nodes)


def driver_pools(cluster: ClusterModel) -> tuple[DriverPool, ...]:
    """One pool per GPU profile, in inventory order; none when one branch serves every GPU."""
    if not needs_pools(cluster):
        return ()
    by_profile: dict[str, list[NodeModel]] = {}
    for node in cluster.gpu_nodes:
        by_profile.setdefault(node.profile_name, []).append(node)
    out = []
    for profile, nodes in by_profile.items():
        arch = nodes[0].gpu.architecture  # type: ignore[union-attr]
        gpudirect = all(_gpudirect(n) for n in nodes)
        out.append(DriverPool(profile, arch, DRIVER_BY_ARCHITECTURE[arch], gpudirect and needs_peermem(nodes),
                              tuple(n.name for n in nodes), gpudirect and dma_buf(nodes)))
    return tuple(out)


def nvidia_driver(cluster: ClusterModel, pool: DriverPool, upgrade_policy: dict[str, Any] | None) -> dict[str, Any]:
    """The NVIDIADriver of one pool. `upgrade_policy`: the same DriverUpgradePolicySpec as the
    ClusterPolicy's (None: the operator's default), so every pool upgrades the same way."""
    nodes = [n for n in cluster.gpu_nodes if n.name in pool.nodes]
    spec: dict[str, Any] = {
        "driverType": "gpu",
        "default": False,  # every GPU node is in exactly one pool: no fallback driver
        "repository": DRIVER_REPOSITORY,
        "image": DRIVER_IMAGE,
        "version": pool.version,
        "nodeSelector": {PROFILE_LABEL: pool.profile},
        # nvidia-peermem only where the pool's compute NICs do GPUDirect RDMA and its GPUs cannot
        # over DMA-BUF; its DOCA/OFED driver is the Network Operator's container when the cluster
        # has one, else the host's.
        "rdma": {"enabled": pool.rdma, "useHostMofed": pool.rdma and not cluster.ofed_driver},
        "tolerations": cluster.daemon_tolerations_for(nodes),
    }
    if pool.dma_buf:  # DMA-BUF needs the open kernel modules: said, not left to "auto"
        spec["kernelModuleType"] = OPEN_KERNEL_MODULES
    if upgrade_policy is not None:
        spec["upgradePolicy"] = upgrade_policy
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {
            "name": pool.name,
            "annotations": {"forge.exa.ai/gpu-architecture": pool.architecture},
        },
        "spec": spec,
    }


def driver_notes(cluster: ClusterModel, pools: tuple[DriverPool, ...]) -> list[str]:
    """What the gpu-operator values say about the driver on a cluster with several GPU models:
    which branch serves which GPUs. Nothing for one GPU model (the shipped fleets)."""
    models = cluster.gpu_models
    if len(models) < 2:
        return []
    if pools:
        return ["GPU drivers per pool (NVIDIADriver CRs in this folder): the GPU generations here need different",
                "branches (charts/versions.yaml gpu_drivers):",
                *(f"  {p.name}: {p.version} for {p.architecture} (profile {p.profile})" for p in pools)]
    archs = sorted({m.architecture for m in models})
    version = DRIVER_BY_ARCHITECTURE[archs[0]]
    return [f"One driver branch serves every GPU of this cluster: {version} (charts/versions.yaml gpu_drivers: "
            f"{', '.join(archs)}) for {', '.join(m.key for m in models)}."]

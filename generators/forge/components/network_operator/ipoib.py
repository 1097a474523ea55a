"""InfiniBand compute rails: IPoIB secondary networks and NCCL's settings per fabric link type.

On an InfiniBand fabric a rail's port is an IPoIB device (ib0, ibp26s0): macvlan cannot sit on it
(macvlan needs an Ethernet device). The Network Operator's IPoIBNetwork (mellanox.com/v1alpha1,
cluster-scoped, in the chart's CRDs) renders a NetworkAttachmentDefinition for the `ipoib` CNI,
which creates an IPoIB child interface of `master` in the pod; the NicClusterPolicy deploys that
CNI (`secondaryNetwork.ipoib`). Addresses come from the rail's nv-ipam IPPool as on Ethernet.
The child inherits the parent's MTU (the CRD has no mtu field): IPoIB datagram mode, 4092 bytes
at the InfiniBand MTU of 4096, which `forge.inventory.links` holds the inventory's mtu to.

NCCL: on InfiniBand, NCCL's IB transport uses the HCAs the inventory names, exactly
(NCCL_IB_HCA `=mlx5_0,...`: the leading `=` turns off prefix matching, so mlx5_1 never also
selects mlx5_10..17, nor a storage DPU's HCA); no RoCE GID settings. On Ethernet (RoCE) NCCL picks
the RoCE v2 GID of the macvlan address itself. On both, the bootstrap goes over the pod network.
"""
from __future__ import annotations

from typing import Any

from forge.model.cluster import ClusterModel, RailModel
from forge.components.network_operator.nvipam import rail_network

INFINIBAND = "infiniband"
POD_INTERFACE = "eth0"  # the pod network's interface: NCCL's bootstrap and socket fallback


def ipoib_network(rail: RailModel, network_namespace: str) -> dict[str, Any]:
    if rail.link_type != INFINIBAND:
        raise ValueError(f"rail {rail.name}: an IPoIB network needs an infiniband port, {rail.interface} runs {rail.link_type}")
    return rail_network("IPoIBNetwork", rail.name, rail.interface, network_namespace)


def ipoib_rails(cluster: ClusterModel) -> bool:
    """Whether the NicClusterPolicy must deploy the ipoib CNI."""
    return any(rail.link_type == INFINIBAND for rail in cluster.rails)


def nccl_env(cluster: ClusterModel) -> list[dict[str, str]]:
    env = [
        # NCCL_DEBUG=INFO logs the transport: "NET/IB ... GDRDMA" when GPUDirect RDMA is on.
        {"name": "NCCL_DEBUG", "value": "INFO"},
        # Bootstrap over the pod network; NCCL finds the RDMA devices the plugin mounted itself.
        {"name": "NCCL_SOCKET_IFNAME", "value": POD_INTERFACE},
    ]
    resource = cluster.rdma_resource("compute")
    if resource is not None and resource.link_type == INFINIBAND:
        env.append({"name": "NCCL_IB_HCA", "value": "=" + ",".join(resource.hcas)})
    return env

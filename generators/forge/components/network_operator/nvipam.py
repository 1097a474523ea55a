"""NVIDIA IPAM (nv-ipam), the IPAM of the compute fabric's secondary networks.

The Network Operator deploys nv-ipam (NicClusterPolicy `spec.nvIpam`) and applies nv-ipam's CRDs
(IPPool, CIDRPool) itself at run time, so they are not among the chart's CRDs. `forge validate`
checks IPPools against those real CRDs, from their own upstream data folder
(`nv-ipam-network-operator-v<version>`, see NetworkOperator.runtime_crd_data); without
--upstream they are reported unchecked like every other custom resource.

How nv-ipam fills a pool (`pkg/ipam-controller/allocator`): each node matching the pool's node
selector gets one block of `perNodeBlockSize` consecutive addresses; blocks start after the
network address and may not reach the IPv4 broadcast address. A pool therefore serves
floor(possible / perNodeBlockSize) nodes, with possible = 2^host_bits - 2 for IPv4 (- 1 for IPv6;
2 for a /31, 1 for a /32), the same count as nv-ipam's `GetPossibleIPCount`. The inventory rules
use it to refuse a rail subnet too small for its nodes.
"""
from __future__ import annotations

import ipaddress
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

API_VERSION = "nv-ipam.nvidia.com/v1alpha1"
RUNTIME_KINDS = ("IPPool", "CIDRPool")  # the CRDs the operator applies with nvIpam
CNI_TYPE = "nv-ipam"


def possible_ip_count(cidr: str) -> int:
    """Addresses nv-ipam can hand out from a subnet (its GetPossibleIPCount)."""
    net = ipaddress.ip_network(cidr, strict=True)
    host_bits = net.max_prefixlen - net.prefixlen
    if host_bits == 0:
        return 1
    if host_bits == 1:
        return 2  # point to point
    return net.num_addresses - (2 if net.version == 4 else 1)


def node_blocks(cidr: str, block_size: int) -> int:
    """How many nodes a pool can serve: one block of block_size addresses each."""
    return possible_ip_count(cidr) // block_size


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class IpamConfig(_Strict):
    """The `ipam` block of a CNI network config that takes its addresses from an IPPool
    (nvidia-k8s-ipam `pkg/cni/types.IPAMConf`)."""

    type: Literal["nv-ipam"] = CNI_TYPE
    poolName: Annotated[str, Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$")]
    poolType: Literal["ippool", "cidrpool"] = "ippool"

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), separators=(", ", ": "))


def rail_network(kind: str, name: str, interface: str, network_namespace: str, **spec: Any) -> dict[str, Any]:
    """A rail's secondary network (MacvlanNetwork, IPoIBNetwork) on its interface, taking its
    addresses from the nv-ipam pool of the same name."""
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"networkNamespace": network_namespace, "master": interface, **spec,
                 "ipam": IpamConfig(poolName=name).to_json()},
    }


def ip_pool(name: str, namespace: str, subnet: str, block_size: int, label: str, values: tuple[str, ...]) -> dict[str, Any]:
    """An IPPool handing each node whose `label` is one of `values` one block of `block_size`
    addresses of `subnet`. Its fields are checked against nv-ipam's
    own CRD by `forge validate` (Component.runtime_crd_data); the inventory rules have already
    checked that the subnet holds a block for every node (node_blocks)."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": label, "operator": "In", "values": list(values)}]}]}
    return {
        "apiVersion": API_VERSION,
        "kind": "IPPool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"subnet": subnet, "perNodeBlockSize": block_size, "nodeSelector": selector},
    }

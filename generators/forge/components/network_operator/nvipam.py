"""NVIDIA IPAM (nv-ipam), the IPAM of the compute fabric's secondary networks, as typed structures.

The Network Operator deploys nv-ipam (NicClusterPolicy `spec.nvIpam`) and installs its CRDs itself
at run time, so the IPPool CRD is not among the chart's CRDs that forge validates against. Instead
the IPPool spec is built from the model below, whose fields and rules are those of nv-ipam's own
API (Mellanox/nvidia-k8s-ipam `api/v1alpha1/ippool_type.go` and `ippool_validate.go`, as shipped
with Network Operator 26.4.1): unknown fields are refused, and `IPPoolSpec` re-checks what nv-ipam's
webhook would (subnet, block size, gateway in subnet). `ippool_crd()` describes the same model as a
CRD for `forge validate` (Component.runtime_crds): forge's description of nv-ipam's API, used
only to validate, never synced (the operator owns the real CRD).

How nv-ipam fills a pool (`pkg/ipam-controller/allocator`): each node matching the pool's node
selector gets one block of `perNodeBlockSize` consecutive addresses; blocks start after the
network address and may not reach the IPv4 broadcast address. A pool therefore serves
floor(possible / perNodeBlockSize) nodes, with possible = 2^host_bits - 2 for IPv4 (- 1 for IPv6;
2 for a /31, 1 for a /32), the same count as nv-ipam's `GetPossibleIPCount`.
"""
from __future__ import annotations

import ipaddress
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

API_VERSION = "nv-ipam.nvidia.com/v1alpha1"
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


class _MatchExpression(_Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = []


class _NodeSelectorTerm(_Strict):
    matchExpressions: Annotated[list[_MatchExpression], Field(min_length=1)]


class NodeSelector(_Strict):
    nodeSelectorTerms: Annotated[list[_NodeSelectorTerm], Field(min_length=1)]


class IPPoolSpec(_Strict):
    """nv-ipam IPPool spec (the fields forge sets; nv-ipam also knows exclusions, routes,
    defaultGateway and perNodeExclusions, which the compute fabric does not use)."""

    subnet: str
    perNodeBlockSize: Annotated[int, Field(ge=1)]
    gateway: str | None = None
    nodeSelector: NodeSelector | None = None

    @model_validator(mode="after")
    def _nv_ipam_rules(self) -> "IPPoolSpec":
        try:
            net = ipaddress.ip_network(self.subnet, strict=True)
        except ValueError as exc:
            raise ValueError(f"subnet '{self.subnet}' is invalid: {exc}") from None
        if possible_ip_count(self.subnet) < self.perNodeBlockSize:
            raise ValueError(f"perNodeBlockSize {self.perNodeBlockSize} is larger than the {possible_ip_count(self.subnet)} addresses of {self.subnet}")
        if self.gateway is not None and ipaddress.ip_address(self.gateway) not in net:
            raise ValueError(f"gateway {self.gateway} is not part of the subnet {self.subnet}")
        return self


class IpamConfig(_Strict):
    """The `ipam` block of a CNI network config that takes its addresses from an IPPool
    (nvidia-k8s-ipam `pkg/cni/types.IPAMConf`)."""

    type: Literal["nv-ipam"] = CNI_TYPE
    poolName: Annotated[str, Field(pattern=r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$")]
    poolType: Literal["ippool", "cidrpool"] = "ippool"

    def to_json(self) -> str:
        return json.dumps(self.model_dump(), separators=(", ", ": "))


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    """A pydantic JSON schema node as a CRD (structural OpenAPI v3) schema node: references
    inlined, Optional as nullable, no titles/defaults, no `additionalProperties: false` (CRDs
    forbid it; unknown fields are pruned, which forge's CRD check reports as errors)."""
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _structural(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    branches = node.get("anyOf")
    if branches and any(b.get("type") == "null" for b in branches):
        rest = [b for b in branches if b.get("type") != "null"]
        if len(rest) == 1:
            return {**_structural(rest[0], defs), "nullable": True}
    skip = {"title", "default", "description", "$defs", "additionalProperties"}
    return {k: _structural(v, defs) for k, v in node.items() if k not in skip}


def ippool_crd() -> dict[str, Any]:
    schema = IPPoolSpec.model_json_schema()
    spec = _structural(schema, schema.get("$defs", {}))
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ippools.nv-ipam.nvidia.com"},
        "spec": {
            "group": "nv-ipam.nvidia.com",
            "names": {"kind": "IPPool", "listKind": "IPPoolList", "plural": "ippools", "singular": "ippool"},
            "scope": "Namespaced",
            "versions": [{
                "name": API_VERSION.rsplit("/", 1)[1], "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}, "required": ["spec"]}},
            }],
        },
    }


def ip_pool(name: str, namespace: str, spec: IPPoolSpec) -> dict:
    return {
        "apiVersion": API_VERSION,
        "kind": "IPPool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec.model_dump(exclude_none=True),
    }

"""Fleet rules about the compute fabric: they need the derived model's notion of a fabric NIC and
the RDMA resource roles, and the nv-ipam block arithmetic of the network-operator component, so
they run in the fleet stage rather than in forge.inventory (which imports nothing above itself)."""
from __future__ import annotations

import ipaddress
from typing import Iterator

from forge.components.network_operator.nvipam import node_blocks, possible_ip_count
from forge.errors import Problem
from forge.facts.hardware import NIC_MODELS
from forge.inventory.loader import LoadedInventory
from forge.inventory.schema import Inventory
from forge.model.cluster import RDMA_RESOURCE_BY_ROLE, fabric_nics


def fabric_rules(loaded: LoadedInventory) -> list[Problem]:
    inv = loaded.inventory
    return [*_rdma_interface_roles(loaded, inv), *_compute_network(loaded, inv)]


def _rdma_interface_roles(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    """The RDMA device plugin picks ports by interface name across the whole cluster, one resource
    per role: a name that is, say, a compute port in one profile and a storage port in another
    would land in both resources."""
    first: dict[str, tuple[str, str]] = {}  # interface -> (role, profile)
    for name, profile in inv.profiles.items():
        for j, nic in enumerate(profile.nics):
            if not NIC_MODELS[nic.model].rdma or nic.role not in RDMA_RESOURCE_BY_ROLE:
                continue
            for k, iface in enumerate(nic.interfaces):
                role, owner = first.setdefault(iface, (nic.role, name))
                if role != nic.role and owner != name:  # inside one profile: a duplicate, reported above
                    yield loaded.problem(("profiles", name, "nics", j, "interfaces", k),
                                         f"interface '{iface}' is a {nic.role} port here but a {role} port in profile '{owner}'; "
                                         "the RDMA device plugin selects ports by name across the cluster, so a name keeps one role")


def _compute_network(loaded: LoadedInventory, inv: Inventory) -> Iterator[Problem]:
    """Rails against the fabric nodes' profiles, and each rail's IP pool against its nodes.

    Fabric nodes are those whose profile has compute-role RDMA NICs; every rail runs on all of
    them (its macvlan network names one master interface), and every compute port of theirs must
    be on a rail. Without fabric nodes the rails have no node and are not checked against any."""
    at = ("cluster", "network", "compute")
    compute = inv.cluster.network.compute
    fabric = [n for n in inv.nodes if n.profile in inv.profiles and fabric_nics(inv.profiles[n.profile])]
    by_profile: dict[str, list[str]] = {}
    for node in fabric:
        by_profile.setdefault(node.profile, []).append(node.name)
    if compute is None:
        for profile_name in by_profile:
            nic_index = inv.profiles[profile_name].nics.index(fabric_nics(inv.profiles[profile_name])[0])
            yield loaded.problem(("profiles", profile_name, "nics", nic_index, "role"),
                                 "compute-role RDMA NICs need the compute fabric's addressing: add cluster.network.compute with one rail per port")
        return
    names: dict[str, int] = {}
    interfaces: dict[str, int] = {}
    subnets: list[tuple[int, ipaddress.IPv4Network | ipaddress.IPv6Network]] = []
    for i, rail in enumerate(compute.rails):
        rail_at = at + ("rails", i)
        if rail.name in names:
            yield loaded.problem(rail_at + ("name",), f"rail name '{rail.name}' is already used by rails[{names[rail.name]}]")
        names.setdefault(rail.name, i)
        if rail.interface in interfaces:
            other = interfaces[rail.interface]
            yield loaded.problem(rail_at + ("interface",),
                                 f"interface '{rail.interface}' is already used by rails[{other}] ('{compute.rails[other].name}'): each rail needs its own port")
        interfaces.setdefault(rail.interface, i)
        net = ipaddress.ip_network(rail.cidr)
        for j, other_net in subnets:
            if net.version == other_net.version and net.overlaps(other_net):
                yield loaded.problem(rail_at + ("cidr",), f"{rail.cidr} overlaps rails[{j}] ('{compute.rails[j].name}', {other_net})")
        subnets.append((i, net))
        for profile_name, nodes in by_profile.items():
            ports = [iface for nic in fabric_nics(inv.profiles[profile_name]) for iface in nic.interfaces]
            if rail.interface not in ports:
                more = f" and {len(nodes) - 1} more" if len(nodes) > 1 else ""
                yield loaded.problem(rail_at + ("interface",),
                                     f"interface '{rail.interface}' is not defined in profile '{profile_name}' of node {nodes[0]}{more}; "
                                     f"its compute NIC interfaces are: {', '.join(ports)}")
        if fabric:
            blocks = node_blocks(rail.cidr, compute.addresses_per_node)
            if blocks < len(fabric):
                yield loaded.problem(rail_at + ("cidr",),
                                     f"{rail.cidr} is too small for the {len(fabric)} nodes on this rail: its {possible_ip_count(rail.cidr)} usable addresses "
                                     f"hold {blocks} blocks of {compute.addresses_per_node} (addresses_per_node), one per node; "
                                     f"{_fitting_prefix(rail.cidr, compute.addresses_per_node, len(fabric))}")
    for profile_name in by_profile:
        profile = inv.profiles[profile_name]
        for j, nic in enumerate(profile.nics):
            if nic not in fabric_nics(profile):
                continue
            for k, iface in enumerate(nic.interfaces):
                if iface not in interfaces:
                    yield loaded.problem(("profiles", profile_name, "nics", j, "interfaces", k),
                                         f"compute interface '{iface}' is on no rail: add it to cluster.network.compute.rails")


def _fitting_prefix(cidr: str, block: int, nodes: int) -> str:
    net = ipaddress.ip_network(cidr)
    for prefix in range(net.prefixlen - 1, 0, -1):
        if node_blocks(f"{net.supernet(new_prefix=prefix).network_address}/{prefix}", block) >= nodes:
            return f"a /{prefix} would do"
    return "no subnet is large enough"


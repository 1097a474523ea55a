"""Inventories the network fabric refuses, each with its file:line, field path and message.

Every case edits one thing in the real H200 inventory and expects exactly the problems listed.
"""
from __future__ import annotations

from tests.helpers import H200_FILE, edit, inventory_text, line_of, problems

F = H200_FILE
COMPUTE_PORTS = "enp26s0np0, enp60s0np0, enp77s0np0, enp94s0np0, enp156s0np0, enp188s0np0, enp204s0np0, enp220s0np0"


def test_rail_interface_not_defined_in_the_profile_of_its_nodes():
    text = edit(inventory_text("h200"), "{name: rail-3, interface: enp94s0np0,", "{name: rail-3, interface: enp95s0np0,")
    rail = line_of(text, "name: rail-3,")
    port = line_of(text, "interfaces: [enp26s0np0,")
    assert problems(text) == [
        f"{F}:{rail}: cluster.network.compute.rails[3].interface: interface 'enp95s0np0' is not defined in profile "
        f"'sr680a-h200' of node h200-gpu-01 and 17 more; its compute NIC interfaces are: {COMPUTE_PORTS}",
        # ... and the port the rail should have named now carries no rail:
        f"{F}:{port}: profiles.sr680a-h200.nics[0].interfaces[3]: compute interface 'enp94s0np0' is on no rail: "
        "add it to cluster.network.compute.rails",
    ]


def test_renaming_a_port_in_the_profile_breaks_loudly_not_silently():
    text = edit(inventory_text("h200"), "enp94s0np0, enp156s0np0", "enp95s0np0, enp156s0np0")
    rail = line_of(text, "name: rail-3,")
    port = line_of(text, "interfaces: [enp26s0np0,")
    found = problems(text)
    assert found[0].startswith(f"{F}:{rail}: cluster.network.compute.rails[3].interface: interface 'enp94s0np0' is not defined in profile 'sr680a-h200'")
    assert found[1] == f"{F}:{port}: profiles.sr680a-h200.nics[0].interfaces[3]: compute interface 'enp95s0np0' is on no rail: add it to cluster.network.compute.rails"
    assert len(found) == 2


def test_two_rails_sharing_an_interface():
    text = edit(inventory_text("h200"), "{name: rail-3, interface: enp94s0np0,", "{name: rail-3, interface: enp77s0np0,")
    rail = line_of(text, "name: rail-3,")
    assert problems(text)[0] == (
        f"{F}:{rail}: cluster.network.compute.rails[3].interface: interface 'enp77s0np0' is already used by rails[2] "
        "('rail-2'): each rail needs its own port"
    )


def test_ip_pool_too_small_for_the_nodes_on_its_rail():
    text = edit(inventory_text("h200"), "cidr: 10.128.8.0/22}", "cidr: 10.128.8.0/24}")
    assert problems(text) == [
        f"{F}:{line_of(text, 'name: rail-2,')}: cluster.network.compute.rails[2].cidr: 10.128.8.0/24 is too small for the "
        "18 nodes on this rail: its 254 usable addresses hold 7 blocks of 32 (addresses_per_node), one per node; a /22 would do"
    ]


def test_ip_pools_too_small_when_each_node_takes_more_addresses():
    text = edit(inventory_text("h200"), "addresses_per_node: 32", "addresses_per_node: 64")
    found = problems(text)
    assert len(found) == 8  # 1022 // 64 = 15 blocks < 18 nodes, on every rail
    assert found[0] == (
        f"{F}:{line_of(text, 'name: rail-0,')}: cluster.network.compute.rails[0].cidr: 10.128.0.0/22 is too small for the "
        "18 nodes on this rail: its 1022 usable addresses hold 15 blocks of 64 (addresses_per_node), one per node; a /21 would do"
    )


def test_unknown_nic_model():
    text = edit(inventory_text("h200"), "- model: bluefield-3", "- model: bluefield-4")
    assert problems(text) == [
        f"{F}:{line_of(text, 'model: bluefield-4')}: profiles.sr680a-h200.nics[1].model: unknown NIC model 'bluefield-4' "
        "(did you mean: bluefield-3, bluefield-2?; known: bluefield-2, bluefield-3, connectx-6, connectx-6-dx, connectx-7, intel-e810)"
    ]


def test_rail_cidr_with_host_bits_suggests_the_network():
    text = edit(inventory_text("h200"), "cidr: 10.128.8.0/22}", "cidr: 10.128.9.0/22}")
    assert problems(text) == [
        f"{F}:{line_of(text, 'name: rail-2,')}: cluster.network.compute.rails[2].cidr: '10.128.9.0/22' has host bits set; did you mean 10.128.8.0/22?"
    ]


def test_overlapping_rail_subnets():
    text = edit(inventory_text("h200"), "cidr: 10.128.28.0/22}", "cidr: 10.128.24.0/22}")
    assert problems(text) == [
        f"{F}:{line_of(text, 'name: rail-7,')}: cluster.network.compute.rails[7].cidr: 10.128.24.0/22 overlaps rails[6] ('rail-6', 10.128.24.0/22)"
    ]


def test_duplicate_rail_name():
    text = edit(inventory_text("h200"), "{name: rail-7,", "{name: rail-6,")
    lines = [i for i, line in enumerate(text.splitlines(), 1) if "name: rail-6," in line]
    assert problems(text) == [f"{F}:{lines[1]}: cluster.network.compute.rails[7].name: rail name 'rail-6' is already used by rails[6]"]


def test_compute_nics_without_fabric_addressing():
    text = inventory_text("h200")
    start, end = text.index("  network:\n"), text.index("\nprofiles:\n")
    text = text[:start] + text[end + 1:]
    assert problems(text) == [
        f"{F}:{line_of(text, 'role: compute')}: profiles.sr680a-h200.nics[0].role: compute-role RDMA NICs need the compute "
        "fabric's addressing: add cluster.network.compute with one rail per port"
    ]


def test_interface_name_with_two_rdma_roles_across_profiles():
    # A second GPU profile whose storage DPU port has a name the first profile uses for compute.
    text = edit(inventory_text("h200"), "  control-plane:\n    server: generic-1u\n", """\
  sr680a-h200-b:
    server: lenovo-sr680a-v3
    cpu_threads: 192
    memory_gib: 2048
    gpu: {model: H200-141GB, count: 8, nvlink: 4}
    nics:
      - {model: bluefield-3, count: 1, port_gbps: 400, role: storage, interfaces: [enp26s0np0]}
  control-plane:
    server: generic-1u
""")
    line = line_of(text, "role: storage, interfaces: [enp26s0np0]")
    assert problems(text) == [
        f"{F}:{line}: profiles.sr680a-h200-b.nics[0].interfaces[0]: interface 'enp26s0np0' is a storage port here but a "
        "compute port in profile 'sr680a-h200'; the RDMA device plugin selects ports by name across the cluster, so a name keeps one role"
    ]


def test_network_operator_settings_are_strict():
    text = edit(inventory_text("h200"), "\ncomponents:\n", "\ncomponents:\n  network-operator:\n    upgrade_max_unavailable_pct: 20\n")
    assert problems(text) == [
        f"{F}:{line_of(text, 'upgrade_max_unavailable_pct')}: components.network-operator.upgrade_max_unavailable_pct: "
        "unknown key 'upgrade_max_unavailable_pct' (expected one of: upgrade_max_unavailable_percent, drain_timeout_seconds, network_namespace)"
    ]


def test_rail_mtu_out_of_range():
    text = edit(inventory_text("h200"), "mtu: 9000", "mtu: 9600")
    assert problems(text) == [
        f"{F}:{line_of(text, 'mtu: 9600')}: cluster.network.compute.mtu: input should be less than or equal to 9216"
    ]

"""The JSON configs no CRD looks inside, and nv-ipam's pool arithmetic.

The RDMA shared device plugin's fields and rules are those of Mellanox/k8s-rdma-shared-dev-plugin
(pkg/types/types.go, ValidateConfigs); nv-ipam's are those of Mellanox/nvidia-k8s-ipam
(ippool_validate.go, GetPossibleIPCount, the controller's block allocator).
"""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from forge.components.network_operator import rdma_plugin_config
from forge.components.network_operator.nvipam import IpamConfig, node_blocks, possible_ip_count
from forge.components.network_operator.rdma_plugin import PluginConfig

GOOD = {"resourceName": "rdma_network", "rdmaHcaMax": 1000, "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"]}}


def test_plugin_config_json_holds_exactly_the_plugin_fields(h200):
    text = rdma_plugin_config(h200).to_json()
    data = json.loads(text)
    assert set(data) == {"configList"}  # periodicUpdateInterval left to the plugin's default
    for entry in data["configList"]:
        assert set(entry) == {"resourceName", "resourcePrefix", "rdmaHcaMax", "selectors"}
        assert set(entry["selectors"]) == {"vendors", "deviceIDs", "ifNames", "linkTypes"}
        assert entry["selectors"]["linkTypes"] == ["ether"]  # h200's ports are all Ethernet (RoCE)
    assert "'" not in text  # the operator pastes it into a single-quoted YAML scalar
    assert PluginConfig.model_validate_json(text) == rdma_plugin_config(h200)


@pytest.mark.parametrize(("entry", "reason"), [
    ({**GOOD, "rdmaHCAMax": 10}, "Extra inputs are not permitted"),  # misspelt: Go would drop it silently
    ({**GOOD, "resourceName": "rdma-network"}, "String should match pattern"),  # the plugin allows [a-zA-Z0-9_]
    ({**GOOD, "rdmaHcaMax": -1}, "greater than or equal to 0"),
    ({"resourceName": "x", "rdmaHcaMax": 1}, "neither selectors nor devices"),
    ({**GOOD, "devices": ["ib0"]}, "mutually exclusive"),
    ({**GOOD, "selectors": {"vendors": ["0x15b3"]}}, "String should match pattern"),
    ({**GOOD, "selectors": {"vendor": ["15b3"]}}, "Extra inputs are not permitted"),
    # netlink's words for the link layer, not the inventory's: "ethernet" would match no port
    ({**GOOD, "selectors": {"linkTypes": ["ethernet"]}}, "Input should be 'ether' or 'infiniband'"),
])
def test_plugin_config_refuses_what_the_plugin_would_refuse_or_ignore(entry, reason):
    with pytest.raises(ValidationError, match=reason):
        PluginConfig.model_validate({"configList": [entry]})


def test_plugin_config_needs_unique_resource_names_and_at_least_one():
    with pytest.raises(ValidationError, match="resource names must be unique: rdma_network"):
        PluginConfig.model_validate({"configList": [GOOD, GOOD]})
    with pytest.raises(ValidationError, match="at least 1 item"):
        PluginConfig.model_validate({"configList": []})


@pytest.mark.parametrize(("cidr", "count"), [
    ("10.0.0.0/22", 1022), ("10.0.0.0/24", 254), ("10.0.0.0/30", 2), ("10.0.0.0/31", 2), ("10.0.0.1/32", 1),
    ("fd00::/120", 255), ("fd00::/127", 2),
])
def test_possible_ip_count_matches_nv_ipam(cidr, count):
    assert possible_ip_count(cidr) == count


@pytest.mark.parametrize(("cidr", "block", "nodes"), [("10.0.0.0/22", 32, 31), ("10.0.0.0/24", 32, 7), ("10.0.0.0/24", 254, 1), ("10.0.0.0/24", 255, 0)])
def test_node_blocks(cidr, block, nodes):
    assert node_blocks(cidr, block) == nodes


def test_ipam_config_is_nv_ipam_by_pool_name():
    assert json.loads(IpamConfig(poolName="rail-0").to_json()) == {"type": "nv-ipam", "poolName": "rail-0", "poolType": "ippool"}
    with pytest.raises(ValidationError):
        IpamConfig(poolName="-bad")

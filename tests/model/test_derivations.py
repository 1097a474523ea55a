"""Facts the model derives from the inventory, and what the GPU Operator makes of them."""
from __future__ import annotations

import yaml

from forge.components.gpu_operator import GpuOperator
from forge.components.node_feature_discovery import NodeFeatureDiscovery
from tests import helpers
from tests.helpers import edit, inventory_text
from tests.model.test_capacity import ALL_MIG_H200


def test_h200_fleet_totals_and_driver():
    h200 = helpers.model("h200")
    assert (len(h200.gpu_nodes), h200.gpu_count) == (18, 144)
    assert h200.driver_version == "595.91.07"  # Hopper branch
    a100 = helpers.model("a100")
    assert (len(a100.gpu_nodes), a100.gpu_count) == (10, 80)
    assert a100.driver_version == "580.95.05"  # Ampere stays on the R580 long-term branch


def test_h200_node_with_mig_layout_yields_its_mig_parted_config():
    h200 = helpers.model("h200")
    config = yaml.safe_load(GpuOperator().facts(h200).mig_parted_config)
    assert config == {"version": "v1", "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-1g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.18gb": 7}}],
    }}
    values = GpuOperator().values(h200)
    assert values["mig"] == {"strategy": "mixed"}  # whole GPUs on the other 16 nodes
    assert values["migManager"]["config"]["name"] == "forge-mig-parted-config"
    labels = {n.name: n.labels.get("nvidia.com/mig.config") for n in h200.nodes}
    assert labels["h200-gpu-17"] == labels["h200-gpu-18"] == "all-1g"
    assert labels["h200-gpu-01"] == "all-disabled"
    assert labels["h200-cp-01"] is None  # no GPU, no MIG label


def test_config_holds_exactly_the_layouts_in_use():
    text = inventory_text("h200").replace("    mig_layout: all-1g\n", "")
    # With no node cut, the MIG pool is gone: Kueue's shares of it would be stale configuration.
    text = helpers.without_mig_shares(text)
    text = text.replace("  mig_layouts:\n", "  mig_layouts:\n    unused-3g:\n      - gpus: all\n        profiles: {3g.71gb: 2}\n")
    config = yaml.safe_load(GpuOperator().facts(helpers.model("h200", text)).mig_parted_config)
    assert list(config["mig-configs"]) == ["all-disabled"]


def test_single_strategy_only_when_no_gpu_is_left_whole():
    # every H200 cut into 7 x 1g.18gb: slices are the only GPUs, so single is unambiguous
    all_cut = helpers.model("h200", edit(inventory_text("h200"), *ALL_MIG_H200))
    assert GpuOperator().values(all_cut)["mig"] == {"strategy": "single"}
    # MIG off everywhere: whole GPUs only, advertised as nvidia.com/gpu under mixed
    text = inventory_text("h200").replace("    mig_layout: all-1g\n", "")
    text = helpers.without_mig_shares(text)
    assert helpers.model("h200", text).mig_strategy == "mixed"


def test_partial_layout_turns_mig_off_on_the_rest_and_needs_the_mixed_strategy():
    a100 = helpers.model("a100")
    config = yaml.safe_load(GpuOperator().facts(a100).mig_parted_config)
    assert config["mig-configs"]["half-1g"] == [
        {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"1g.10gb": 7}},
        {"devices": [4, 5, 6, 7], "mig-enabled": False},
    ]
    assert a100.mig_strategy == "mixed"


def test_gpudirect_rdma_follows_the_nics():
    # H200 + ConnectX-7: GPUDirect RDMA over DMA-BUF (open kernel modules), no nvidia-peermem
    # (tests/components/test_gpu_drivers.py, the DMA-BUF tests).
    driver = GpuOperator().values(helpers.model("h200"))["driver"]
    assert helpers.model("h200").gpudirect_rdma and driver["kernelModuleType"] == "open"
    assert driver["rdma"]["enabled"] is False
    # The A100 fleet has Ethernet-only Intel E810s: no GPUDirect RDMA.
    assert GpuOperator().values(helpers.model("a100"))["driver"]["rdma"]["enabled"] is False


def test_tolerations_and_selectors_follow_taints():
    text = inventory_text("h200").replace("{key: nvidia.com/gpu, effect: NoSchedule}",
                                          "{key: exa.ai/dedicated, value: training, effect: NoExecute}", 1)
    h200 = helpers.model("h200", text)
    values = GpuOperator().values(h200)
    assert values["daemonsets"]["tolerations"] == [
        {"key": "exa.ai/dedicated", "operator": "Equal", "value": "training", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        # the operands run on a node not yet tested (forge.components.node_tests): its workloads do not
        {"key": "forge.exa.ai/untested", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert values["operator"]["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    nfd = NodeFeatureDiscovery().values(h200)
    assert nfd["master"]["enableTaints"] is True
    assert {"key": "exa.ai/dedicated", "operator": "Equal", "value": "training", "effect": "NoExecute"} in nfd["worker"]["tolerations"]


def test_node_labels_and_taints_reach_nodes_through_one_rule_per_node():
    h200 = helpers.model("h200")
    rules = NodeFeatureDiscovery().manifests(h200)
    assert len(rules) == len(h200.nodes) == 21
    rule = next(r for r in rules if r["metadata"]["name"] == "forge-node-h200-gpu-17")["spec"]["rules"][0]
    assert rule["labels"] == {
        "forge.exa.ai/rack": "h200-r05", "forge.exa.ai/profile": "sr680a-h200", "forge.exa.ai/gpu-model": "H200-141GB",
        "forge.exa.ai/role.gpu": "true",
        "nvidia.com/mig.config": "all-1g", "exa.ai/pool": "interactive",
    }  # no forge.exa.ai/nvme: NFD sets it from what is mounted (forge.components.alluxio.nvme_probe)
    assert rule["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert rule["matchFeatures"] == [{"feature": "system.name", "matchExpressions": {"nodename": {"op": "In", "value": ["h200-gpu-17"]}}}]


def test_gpu_operator_is_off_on_a_cluster_without_gpus():
    text = inventory_text("h200")
    head, _, _ = text.partition("\nnodes:\n")
    cp_only = head + "\nnodes:\n  - {name: cp-01, profile: control-plane, rack: r1, roles: [control-plane]}\n"
    cp_only = cp_only.replace("  expected:\n    gpu_nodes: 18\n    gpus: 144\n", "")
    model = helpers.model("h200", cp_only)
    assert model.gpu_count == 0 and not GpuOperator().enabled(model)

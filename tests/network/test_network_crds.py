"""The generated network objects against the upstream CRDs and chart defaults (FORGE_UPSTREAM).

NicClusterPolicy and MacvlanNetwork validate against the Network Operator 26.4.1 chart's CRDs; the
example PyTorchJob against training-operator v1.9.4's. The nv-ipam IPPool CRD is not among them
(the operator installs it at run time from its own manifests), so IPPools are checked by the
typed nv-ipam model instead: the last test pins that down.
"""
from __future__ import annotations

import copy

import pytest
import yaml

from forge.components.network_operator import NetworkOperator
from forge.nvipam import IPPoolSpec
from forge.validate.crd import CrdSchemas
from forge.validate.kube import KubeSchemas
from forge.validate.values import check_values
from network_helpers import chart_data


@pytest.fixture(scope="module")
def crds(upstream) -> CrdSchemas:
    schemas = CrdSchemas()
    assert schemas.add_dir(chart_data(upstream, "network-operator") / "crds") > 0
    training = upstream / "training-operator-v1.9.4" / "crds"
    assert training.is_dir(), "FORGE_UPSTREAM has no training-operator-v1.9.4/crds"
    schemas.add_dir(training)
    return schemas


def generated(tree, cluster: str, kind: str | None = None, examples: bool = False) -> list[dict]:
    prefix = f"overlays/{cluster}/network-operator/"
    out = []
    for path, text in sorted(tree.files.items()):
        if path.startswith(prefix) and ("/examples/" in path) == examples and not path.endswith(("values.yaml", "kustomization.yaml")):
            obj = yaml.safe_load(text)
            if kind is None or obj["kind"] == kind:
                out.append(obj)
    return out


def test_nic_cluster_policy_and_macvlan_networks_match_their_crds(tree, crds):
    objs = generated(tree, "h200", "NicClusterPolicy") + generated(tree, "h200", "MacvlanNetwork")
    assert len(objs) == 9
    for obj in objs:
        assert crds.validate(obj) == [], obj["metadata"]["name"]
    assert crds.is_namespaced("mellanox.com/v1alpha1", "NicClusterPolicy") is False
    assert ("mellanox.com", "NicClusterPolicy") in NetworkOperator.cluster_kinds
    assert ("mellanox.com", "MacvlanNetwork") in NetworkOperator.cluster_kinds


def test_the_crd_check_catches_a_misplaced_field(tree, crds):
    policy = copy.deepcopy(generated(tree, "h200", "NicClusterPolicy")[0])
    policy["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrade"] = 2
    policy["spec"]["rdmaSharedDevicePlugin"]["config"] = {"configList": []}  # must be a string
    assert sorted(crds.validate(policy)) == [
        ("spec.ofedDriver.upgradePolicy.maxParallelUpgrade", "unknown field"),
        ("spec.rdmaSharedDevicePlugin.config", "expected string, got object"),
    ]


def test_example_workload_validates(tree, crds):
    job, = generated(tree, "h200", "PyTorchJob", examples=True)
    assert crds.validate(job) == []
    config_map, = generated(tree, "h200", "ConfigMap", examples=True)
    assert KubeSchemas("1.34").validate(config_map) == []


def test_values_match_the_chart_defaults(tree, upstream):
    values = yaml.safe_load(tree.files["overlays/h200/network-operator/values.yaml"])
    assert check_values(values, chart_data(upstream, "network-operator"), NetworkOperator.declared_values) == []
    gpu_values = yaml.safe_load(tree.files["overlays/h200/gpu-operator/values.yaml"])
    assert gpu_values["driver"]["rdma"] == {"enabled": True, "useHostMofed": False}
    assert check_values({"driver": {"rdma": gpu_values["driver"]["rdma"]}}, chart_data(upstream, "gpu-operator")) == []


def test_ip_pools_have_no_upstream_crd_and_are_checked_by_the_typed_model(tree, crds):
    pools = generated(tree, "h200", "IPPool")
    assert len(pools) == 8
    for pool in pools:
        assert crds.validate(pool) is None  # unknown to the chart's CRDs: the operator brings it
        IPPoolSpec.model_validate(pool["spec"])

"""The generated network objects against the upstream CRDs and chart defaults (FORGE_UPSTREAM).

NicClusterPolicy and MacvlanNetwork validate against the Network Operator 26.4.1 chart's CRDs; the
example PyTorchJob against training-operator v1.9.4's. The nv-ipam IPPool CRD is not among them
(the operator installs it at run time from its own manifests), so IPPools are checked against
forge's typed nv-ipam model, which the component also hands `forge validate` as a CRD
(Component.runtime_crds).
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from forge.cli import main
from forge.components.network_operator import NetworkOperator
from forge.render import render_all
from forge.components.network_operator.nvipam import IPPoolSpec
from forge.validate.crd import CrdSchemas
from forge.validate.kube import KubeSchemas
from forge.validate.values import check_values
from tests.helpers import chart_data


@functools.cache
def _crds(upstream: Path) -> CrdSchemas:
    schemas = CrdSchemas()
    assert schemas.add_dir(chart_data(upstream, "network-operator") / "crds") > 0
    training = upstream / "training-operator-v1.9.4" / "crds"
    assert training.is_dir(), "FORGE_UPSTREAM has no training-operator-v1.9.4/crds"
    schemas.add_dir(training)
    return schemas


@pytest.fixture
def crds(upstream) -> CrdSchemas:
    return _crds(upstream)


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


def test_ip_pools_have_no_upstream_crd_and_are_checked_by_the_typed_model(tree, crds, h200):
    pools = generated(tree, "h200", "IPPool")
    assert len(pools) == 8
    runtime = CrdSchemas()
    assert runtime.add_objects(NetworkOperator().runtime_crds(h200)) == 1
    for pool in pools:
        assert crds.validate(pool) is None  # unknown to the chart's CRDs: the operator brings it
        assert runtime.validate(pool) == []  # forge's description of nv-ipam's API, as forge validate uses it
        IPPoolSpec.model_validate(pool["spec"])
    bad = copy.deepcopy(pools[0])
    bad["spec"]["blockSize"] = 8
    bad["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["operator"] = "Equals"
    assert sorted(runtime.validate(bad)) == [
        ("spec.blockSize", "unknown field"),
        ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator",
         '"Equals" is not one of: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'),
    ]


def test_the_runtime_ippool_crd_is_a_valid_crd_and_only_there_with_rails(h200, a100):
    crd, = NetworkOperator().runtime_crds(h200)
    assert KubeSchemas("1.34").validate(crd) == []
    assert crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] == ["subnet", "perNodeBlockSize"]
    assert NetworkOperator().runtime_crds(a100) == []


def test_forge_validate_checks_ip_pools_and_the_nic_cluster_policy(repo_inputs, upstream):
    """End to end: generate, render with the real kustomize, hand-break two objects, validate."""
    result = CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)])
    assert result.exit_code == 0, result.output
    folder = repo_inputs / "overlays/h200/network-operator"
    pool = folder / "ippool-rail-3.yaml"
    pool.write_text(pool.read_text().replace("  perNodeBlockSize:", "  perNodeBlocksize:"))
    ncp = folder / "nicclusterpolicy-nic-cluster-policy.yaml"
    ncp.write_text(ncp.read_text().replace("    version: doca", "    versoin: doca"))
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1
    fails = sorted(line for line in result.output.splitlines() if line.startswith("FAIL "))
    assert fails == [
        "FAIL h200 / network-operator / IPPool/nvidia-network-operator/rail-3 / spec.perNodeBlockSize / required field missing",
        "FAIL h200 / network-operator / IPPool/nvidia-network-operator/rail-3 / spec.perNodeBlocksize / unknown field",
        # the misspelt version unpins the DOCA driver too: the pin policy says so
        "FAIL h200 / network-operator / NicClusterPolicy/nic-cluster-policy / spec.ofedDriver.image / image 'doca-driver' has no tag or digest",
        "FAIL h200 / network-operator / NicClusterPolicy/nic-cluster-policy / spec.ofedDriver.versoin / unknown field",
    ]

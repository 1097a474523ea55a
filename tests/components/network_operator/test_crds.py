"""The generated network objects against the upstream CRDs and chart defaults (FORGE_UPSTREAM).

NicClusterPolicy and MacvlanNetwork validate against the Network Operator 26.4.1 chart's CRDs; the
example PyTorchJob against training-operator v1.9.4's. The nv-ipam IPPool and CIDRPool CRDs are not
among them (the operator applies them at run time from its own manifests): IPPools are checked
against those real CRDs, from the data folder the component names (Component.runtime_crd_data).
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from forge.commands.main import main
from forge.components.network_operator import NetworkOperator
from forge.render.overlays import render_all
from forge.validate.crd import CrdSchemas
from forge.validate.kube import KubeSchemas
from forge.validate.values import check_values
from forge.facts.versions import chart_pins
from tests.helpers import REPO, chart_data, copy_repo_inputs


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
    # GPUDirect RDMA over DMA-BUF: no nvidia-peermem, the open kernel modules said (both real chart keys)
    assert gpu_values["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}
    assert gpu_values["driver"]["kernelModuleType"] == "open"
    assert check_values({"driver": {"rdma": gpu_values["driver"]["rdma"], "kernelModuleType": "open"}},
                        chart_data(upstream, "gpu-operator")) == []


def _runtime_crds(upstream: Path) -> CrdSchemas:
    runtime, = NetworkOperator().runtime_crd_data()
    folder = upstream / runtime.data_dir / "crds"
    assert folder.is_dir(), f"FORGE_UPSTREAM has no {runtime.data_dir}/crds"
    schemas = CrdSchemas()
    assert schemas.add_dir(folder) == 2  # IPPool and CIDRPool
    return schemas


def test_ip_pools_are_checked_against_the_real_nv_ipam_crds(tree, crds, upstream):
    pools = generated(tree, "h200", "IPPool")
    assert len(pools) == 8
    runtime = _runtime_crds(upstream)
    for pool in pools:
        assert crds.validate(pool) is None  # unknown to the chart's CRDs: the operator brings it
        assert runtime.validate(pool) == []
    bad = copy.deepcopy(pools[0])
    bad["spec"]["blockSize"] = bad["spec"].pop("perNodeBlockSize")
    bad["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = "sr680a-h200"
    assert sorted(runtime.validate(bad)) == [
        ("spec.blockSize", "unknown field"),
        ("spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values", "expected array, got string"),
        ("spec.perNodeBlockSize", "required field missing"),
    ]
    cidr_pool = {"apiVersion": "nv-ipam.nvidia.com/v1alpha1", "kind": "CIDRPool", "metadata": {"name": "p", "namespace": "x"},
                 "spec": {"cidr": "10.0.0.0/16", "perNodeNetworkPrefix": 24, "perNodeBlockSize": 8}}
    assert runtime.validate(cidr_pool) == [("spec.perNodeBlockSize", "unknown field")]


def test_runtime_crd_data_is_named_after_the_pinned_operator_release():
    runtime, = NetworkOperator().runtime_crd_data()
    pin = chart_pins(REPO)["network-operator"]
    assert runtime.data_dir == f"nv-ipam-network-operator-v{pin.version}"
    assert runtime.api_versions() == {"nv-ipam.nvidia.com/v1alpha1", "nv-ipam.nvidia.com/v1alpha1/IPPool",
                                      "nv-ipam.nvidia.com/v1alpha1/CIDRPool"}


def test_the_declared_runtime_kinds_are_the_crds_of_the_data_folder(upstream):
    runtime, = NetworkOperator().runtime_crd_data()
    found = set()
    for path in sorted((upstream / runtime.data_dir / "crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        found |= {(f"{crd['spec']['group']}/{v['name']}", crd["spec"]["names"]["kind"]) for v in crd["spec"]["versions"] if v["served"]}
    assert found == {(runtime.group_version, kind) for kind in runtime.kinds}


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
    result = CliRunner().invoke(main, ["validate", "--allow-stale", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1
    fails = sorted(line for line in result.output.splitlines() if line.startswith("FAIL "))
    assert fails == [
        "FAIL h200 / network-operator / IPPool/nvidia-network-operator/rail-3 / spec.perNodeBlockSize / required field missing",
        "FAIL h200 / network-operator / IPPool/nvidia-network-operator/rail-3 / spec.perNodeBlocksize / unknown field",
        # the misspelt version unpins the DOCA driver too: the pin policy says so
        "FAIL h200 / network-operator / NicClusterPolicy/nic-cluster-policy / spec.ofedDriver.image / image 'doca-driver' has no tag or digest",
        "FAIL h200 / network-operator / NicClusterPolicy/nic-cluster-policy / spec.ofedDriver.versoin / unknown field",
    ]


def _hydrated_network_operator(tmp_path: Path, tree, h200, upstream: Path | None):
    """forge validate --hydrated's checks over a hand-made hydrated file: the overlay's own objects
    (the chart's are not needed to see how the runtime CRDs are treated)."""
    from forge.upstream.check import _check_cluster
    from forge.upstream.hydrate import Job, hydrated_file
    from forge.validate.engine import Report

    root = copy_repo_inputs(tmp_path)
    objs = generated(tree, "h200", "NicClusterPolicy") + generated(tree, "h200", "IPPool")
    objs[-1]["spec"]["perNodeBlockSize"] = "32"  # nv-ipam's CRD says integer
    path = hydrated_file(root, "h200", "network-operator")
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump_all(objs))
    job = Job(h200, NetworkOperator(), "h200-network-operator", None, None, "network-operator", "nvidia-network-operator", (), "")
    report = Report()
    _check_cluster(root, h200, [job], report, (), upstream)
    return report


def test_hydrated_validation_reads_runtime_crds_from_their_data_folder(tree, h200, upstream, tmp_path):
    """`forge validate --hydrated`: IPPools against nv-ipam's CRDs with --upstream, unchecked
    without it (never a pass); the NicClusterPolicy needs the chart's CRD from the hydrated output,
    which this hand-made file lacks, so it fails either way."""
    checked = _hydrated_network_operator(tmp_path / "a", tree, h200, upstream)
    pools = [(f.object.split()[-1], f.path, f.reason) for f in checked.failures if "IPPool" in f.object]
    assert pools == [("IPPool/nvidia-network-operator/rail-7", "spec.perNodeBlockSize", "expected integer, got string")]
    assert checked.unchecked == []
    bare = _hydrated_network_operator(tmp_path / "b", tree, h200, None)
    assert bare.unchecked == ["h200 / network-operator / nv-ipam.nvidia.com/v1alpha1 IPPool"] * 8
    assert not [f for f in bare.failures if "IPPool" in f.object]
    assert [f.object.split()[-1] for f in bare.failures if f.path == "apiVersion"] == ["NicClusterPolicy/nic-cluster-policy"]


def test_a_missing_runtime_data_folder_is_a_failure(tmp_path):
    from forge.validate.engine import missing_runtime_data, runtime_crds, runtime_kinds

    operator = NetworkOperator()
    runtime, = operator.runtime_crd_data()
    assert runtime_kinds([operator]) == {(runtime.group_version, "IPPool"), (runtime.group_version, "CIDRPool")}
    failure, = missing_runtime_data("h200", [operator], tmp_path)
    assert (failure.component, failure.object) == ("network-operator", runtime.data_dir)
    assert failure.reason == (f"no reference data for the CRDs the operator applies at run time (IPPool, CIDRPool): "
                              f"{tmp_path / runtime.data_dir / 'crds'} is missing")
    pool = {"apiVersion": runtime.group_version, "kind": "IPPool", "metadata": {"name": "x"}, "spec": {}}
    assert runtime_crds([operator], tmp_path).validate(pool) is None  # nothing to check against
    assert runtime_crds([operator], None).validate(pool) is None

"""An InfiniBand compute fabric, from inventory data only (tests/fixtures/clusters/ib-small: ConnectX-7 ports
in InfiniBand mode, IPoIB interfaces ibp*, Ethernet BlueField-3 storage ports).

IB rails become IPoIBNetworks with the ipoib CNI, never macvlan; the RDMA plugin's selectors carry
linkTypes; the example job gets NCCL's InfiniBand settings; the alerts watch the HCAs' link states
and counters. The whole fleet generates, renders and validates against the upstream CRDs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from forge.commands.main import main
from forge.facts import versions
from forge.components.network_operator import NetworkOperator, macvlan_network
from forge.components.network_operator.ipoib import ipoib_network
from forge.generate.tree import build_tree
from forge.model.cluster import ClusterModel
from forge.render.overlays import render_all
from forge.validate.run import validate_repo
from tests.helpers import REPO, add_fixture_cluster, copy_repo_inputs, fixture_file, fixture_model

IB = "ib-small"
IB_PORTS = ["ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0", "ibp156s0", "ibp188s0", "ibp204s0", "ibp220s0"]
IB_HCAS = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


@pytest.fixture(scope="module")
def ib_root(tmp_path_factory) -> Path:
    root = copy_repo_inputs(tmp_path_factory.mktemp("ib") / "repo")
    add_fixture_cluster(root, IB)
    return root


@pytest.fixture(scope="module")
def ib_tree(ib_root):
    return build_tree(ib_root)


@pytest.fixture(scope="module")
def ib() -> ClusterModel:
    return fixture_model(IB)


def objects(tree, cluster: str, component: str, kind: str, examples: bool = False) -> list[dict]:
    prefix = f"overlays/{cluster}/{component}/"
    out = []
    for path, text in sorted(tree.files.items()):
        if path.startswith(prefix) and ("/examples/" in path) == examples and not path.endswith("kustomization.yaml"):
            out += [o for o in yaml.safe_load_all(text) if o and o.get("kind") == kind]
    return out


def test_infiniband_rails_are_ipoib_networks_never_macvlan(ib_tree, ib):
    networks = objects(ib_tree, IB, "network-operator", "IPoIBNetwork")
    assert [(n["metadata"]["name"], n["spec"]["master"]) for n in networks] == sorted(
        (r.name, r.interface) for r in ib.rails)
    assert sorted(n["spec"]["master"] for n in networks) == sorted(IB_PORTS)
    for network in networks:
        assert json.loads(network["spec"]["ipam"]) == {"type": "nv-ipam", "poolName": network["metadata"]["name"], "poolType": "ippool"}
        assert network["spec"]["networkNamespace"] == "default"
    assert objects(ib_tree, IB, "network-operator", "MacvlanNetwork") == []
    assert len(objects(ib_tree, IB, "network-operator", "IPPool")) == 8
    assert ("mellanox.com", "IPoIBNetwork") in NetworkOperator.cluster_kinds  # cluster-scoped: in the AppProject


def test_macvlan_can_never_be_built_on_an_ipoib_port(ib, h200):
    with pytest.raises(ValueError, match="macvlan cannot sit on the IPoIB interface ibp26s0"):
        macvlan_network(ib.rails[0], NetworkOperator.Settings())
    with pytest.raises(ValueError, match="needs an infiniband port, enp26s0np0 runs ethernet"):
        ipoib_network(h200.rails[0], "default")


def test_the_nic_cluster_policy_deploys_the_ipoib_cni_only_for_infiniband_rails(ib_tree, tree):
    policy, = objects(ib_tree, IB, "network-operator", "NicClusterPolicy")
    assert policy["spec"]["secondaryNetwork"]["ipoib"] == {
        "image": "ipoib-cni", "repository": "nvcr.io/nvidia/mellanox", "version": versions.image("ipoib-cni").tag}
    assert versions.image("ipoib-cni").tag == versions.image("nv-ipam").tag  # one operator release
    h200_policy, = objects(tree, "h200", "network-operator", "NicClusterPolicy")
    assert "ipoib" not in h200_policy["spec"]["secondaryNetwork"]


def test_rdma_plugin_selectors_keep_ethernet_and_infiniband_apart(ib_tree, tree):
    policy, = objects(ib_tree, IB, "network-operator", "NicClusterPolicy")
    config = {c["resourceName"]: c["selectors"] for c in json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]}
    assert config["rdma_network"]["linkTypes"] == ["infiniband"]
    assert config["rdma_network"]["ifNames"] == IB_PORTS
    assert config["rdma_storage"]["linkTypes"] == ["ether"]
    assert config["rdma_storage"]["ifNames"] == ["enp41s0f0np0", "enp170s0f0np0"]
    h200_policy, = objects(tree, "h200", "network-operator", "NicClusterPolicy")
    h200 = json.loads(h200_policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]
    assert [c["selectors"]["linkTypes"] for c in h200] == [["ether"], ["ether"]]


def _env(tree, cluster: str) -> dict[str, str]:
    job, = objects(tree, cluster, "network-operator", "PyTorchJob", examples=True)
    envs = [{e["name"]: e["value"] for e in spec["template"]["spec"]["containers"][0]["env"]}
            for spec in job["spec"]["pytorchReplicaSpecs"].values()]
    assert len(envs) == 2 and envs[0] == envs[1]
    return envs[0]


def test_the_example_job_uses_nccl_infiniband_settings_on_infiniband(ib_tree, tree):
    env = _env(ib_tree, IB)
    assert env["NCCL_IB_HCA"] == "=" + ",".join(IB_HCAS)  # exact names: mlx5_1 must not also match mlx5_10
    assert env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert not [k for k in env if "GID" in k or "ROCE" in k]
    roce = _env(tree, "h200")
    assert "NCCL_IB_HCA" not in roce and roce["NCCL_SOCKET_IFNAME"] == "eth0"


def _rules(tree, cluster: str) -> dict[str, list[dict]]:
    rule, = [o for o in objects(tree, cluster, "prometheus", "PrometheusRule") if o["metadata"]["name"] == "forge-fleet"]
    return {g["name"]: g["rules"] for g in rule["spec"]["groups"]}


def test_infiniband_alerts_watch_the_hcas_and_roce_alerts_leave_them_out(ib_tree, tree):
    groups = _rules(ib_tree, IB)
    ib_alerts = {r["alert"]: r for r in groups["forge-infiniband"]}
    assert set(ib_alerts) == {"InfinibandPortNotActive", "InfinibandPortMissing", "InfinibandLinkDowned", "InfinibandLinkErrors"}
    hcas = "|".join(sorted(IB_HCAS))
    # The profile's nodes by a join on the inventory's forge:node_info, not by a list of node names.
    assert ib_alerts["InfinibandPortNotActive"]["expr"] == (
        f'(node_infiniband_state_id{{device=~"{hcas}"}} and on (node) forge:node_info{{profile="sr680a-h100-ib"}}) != 4')
    for counter in ("node_infiniband_symbol_error_total", "node_infiniband_link_error_recovery_total",
                    "node_infiniband_port_errors_received_total"):
        assert counter in ib_alerts["InfinibandLinkErrors"]["expr"]
    roce, = [r for r in groups["forge-network"] if r["alert"] == "RdmaPortErrors"]
    assert f'device!~"{hcas}"' in roce["expr"]  # the Ethernet BlueField ports only
    assert "forge-infiniband" not in _rules(tree, "h200")
    h200_roce, = [r for r in _rules(tree, "h200")["forge-network"] if r["alert"] == "RdmaPortErrors"]
    assert "device!~" not in h200_roce["expr"]


def test_the_infiniband_fleet_generates_renders_and_validates(tmp_path, upstream):
    """End to end with the real kustomize and the upstream CRDs: IPoIBNetwork and the NicClusterPolicy
    against the chart's CRDs, IPPools against nv-ipam's own (their data folder); without the
    upstream data the pools are unchecked, and without nv-ipam's folder validation fails."""
    root = copy_repo_inputs(tmp_path / "repo")
    add_fixture_cluster(root, IB)
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 0, result.output
    render_all(root)
    result = CliRunner().invoke(main, ["validate", "--root", str(root), "--upstream", str(upstream)])
    assert result.exit_code == 0, result.output
    assert "0 failures, 0 unchecked" in result.output

    bare = validate_repo(root, None)
    assert bare.failures == []
    assert f"{IB} / network-operator / nv-ipam.nvidia.com/v1alpha1 IPPool" in bare.unchecked
    assert bare.unchecked.count(f"{IB} / network-operator / nv-ipam.nvidia.com/v1alpha1 IPPool") == 8

    partial = tmp_path / "upstream"  # every data folder but nv-ipam's
    partial.mkdir()
    runtime, = NetworkOperator().runtime_crd_data()
    for folder in sorted(upstream.iterdir()):
        if folder.name != runtime.data_dir:
            (partial / folder.name).symlink_to(folder)
    failures = [f.line() for f in validate_repo(root, partial).failures]
    assert any(f"{IB} / network-operator / {runtime.data_dir}" in line and "no reference data for the CRDs the operator "
               "applies at run time (IPPool, CIDRPool)" in line for line in failures), failures
    assert any("IPPool" in line and "no CRD for nv-ipam.nvidia.com/v1alpha1 IPPool" in line for line in failures), failures


def test_a_bad_link_type_stops_generate_with_file_and_line(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    path = root / "clusters/a100/inventory.yaml"
    text = path.read_text()
    old = "role: frontend, interfaces: [ens1f0, ens1f1]}"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "role: frontend, link_type: infiniband, interfaces: [ib0, ib1]}"))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "link_type: infiniband" in t)
    result = CliRunner().invoke(main, ["generate", "--root", str(root)])
    assert result.exit_code == 2
    assert (f"clusters/a100/inventory.yaml:{line}: profiles.as-4124go-a100.nics[0].link_type: "
            "intel-e810 ports cannot run infiniband (it runs: ethernet)") in result.output
    assert "Traceback" not in result.output
    assert not (root / "overlays").exists()


def test_the_fixture_is_never_synced():
    assert fixture_file(IB).is_file()
    assert not (REPO / "clusters" / IB).exists()

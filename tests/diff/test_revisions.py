"""`forge diff` on crafted pairs of revisions: the exact objects, fields and risk flags reported.

Components other than node-feature-discovery, gpu-operator, network-operator and the Argo CD
bootstrap are being added in parallel; where they may add objects of their own to a change, the
assertions hold exactly for these components and require only that nothing else changes on the
other cluster.
"""
from __future__ import annotations

import re

from forge.diff import diff_against
from forge.diff.objects import MISSING, format_path

from tests.helpers import cli, commit, git, regenerate, without_mig_shares

KNOWN = {"node-feature-discovery", "gpu-operator", "network-operator", "argocd"}


def changes_of(report, cluster: str) -> list[tuple[str, str, str]]:
    return [(c.component, c.action, str(c.ident)) for c in report.changes if c.cluster == cluster and c.component in KNOWN]


def fields_of(report, cluster: str, ident: str) -> list[tuple[str, object, object]]:
    change = next(c for c in report.changes if c.cluster == cluster and str(c.ident) == ident)
    return [(f.where, f.old, f.new) for f in change.fields]


def flags_of(report, kind: str) -> list[tuple[str, str, str, str]]:
    return [(f.level, f.cluster, f.component, f.message) for f in report.flags if f.kind == kind]


def test_node_added_changes_only_its_rule_on_h200(repo, kustomize):
    result = cli("node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05",
                   "--like", "h200-gpu-16", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    report = diff_against(repo, "HEAD")

    # its own rule, and the node gate's list of GPU nodes (its config, and the nodes its role may patch)
    assert changes_of(report, "h200") == [
        ("gpu-operator", "changed", "ClusterRole forge-node-gate (rbac.authorization.k8s.io)"),
        ("gpu-operator", "changed", "ConfigMap gpu-operator/forge-node-gate"),
        ("node-feature-discovery", "added", "NodeFeatureRule forge-node-h200-gpu-19 (nfd.k8s-sigs.io)"),
    ]
    role = fields_of(report, "h200", "ClusterRole forge-node-gate (rbac.authorization.k8s.io)")
    assert [new for _, _, new in role] == ["h200-gpu-19"], role
    assert report.for_cluster("a100") == []
    assert report.stale == []  # `forge node add` regenerated the overlays
    assert flags_of(report, "capacity") == [
        ("low", "h200", "inventory", "GPU nodes 18 -> 19, GPUs 144 -> 152, NVMe TB 230.4 -> 243.2"),
    ]
    assert not flags_of(report, "prune") and not flags_of(report, "restart")
    added = next(c for c in report.changes if c.action == "added").new
    assert added["spec"]["rules"][0]["labels"]["exa.ai/pool"] == "training"  # copied --like h200-gpu-16
    assert added["spec"]["rules"][0]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]

    md = cli("diff", "--base", "HEAD", "--format", "markdown", "--root", str(repo))
    assert md.exit_code == 1
    assert "| h200 | node-feature-discovery | 1 | 0 | 0 |" in md.stdout
    assert "No change on: `a100`, `h200-burst`." in md.stdout
    assert not re.search(r"^\| a100 \|", md.stdout, re.M)
    assert "<details><summary><code>h200</code> · node-feature-discovery · added NodeFeatureRule forge-node-h200-gpu-19" in md.stdout


def test_nic_model_change_changes_the_rdma_device_ids_and_flags_the_plugin_restart(repo, kustomize):
    inventory = repo / "clusters/h200/inventory.yaml"
    cx7 = "      - model: connectx-7\n        count: 8\n        port_gbps: 400\n"
    assert cx7 in inventory.read_text()
    inventory.write_text(inventory.read_text().replace(cx7, "      - model: connectx-6-dx\n        count: 8\n        port_gbps: 100\n"))
    regenerate(repo)
    commit(repo, "h200: ConnectX-6 Dx compute fabric")
    report = diff_against(repo, "HEAD~1")

    # the node gate's config lists each node's tests, which follow the NICs; nothing else changes
    assert changes_of(report, "h200") == [
        ("gpu-operator", "changed", "ConfigMap gpu-operator/forge-node-gate"),
        ("network-operator", "changed", "NicClusterPolicy nic-cluster-policy (mellanox.com)"),
    ]
    # The RDMA plugin's config is JSON inside YAML: compared as data, down to the device ID.
    assert fields_of(report, "h200", "NicClusterPolicy nic-cluster-policy (mellanox.com)") == [
        ("spec.rdmaSharedDevicePlugin.config > configList[0].selectors.deviceIDs[0]", "1021", "101d"),
    ]
    assert report.for_cluster("a100") == []
    assert flags_of(report, "restart") == [(
        "high", "h200", "network-operator",
        "NicClusterPolicy nic-cluster-policy (mellanox.com) change spec.rdmaSharedDevicePlugin.config > "
        "configList[0].selectors.deviceIDs[0]: restarts the RDMA shared device plugin DaemonSet on 18 nodes with "
        "NVIDIA/Mellanox NICs (h200-gpu-01, h200-gpu-02, h200-gpu-03, h200-gpu-04, h200-gpu-05, h200-gpu-06 and 12 more); "
        "rdma/* resources are re-registered on each node",
    )]


def test_first_mellanox_nic_brings_the_network_operator_and_its_driver(repo, kustomize):
    inventory = repo / "clusters/a100/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("{model: intel-e810, count: 1, ports: 2", "{model: connectx-6-dx, count: 1, ports: 2"))
    regenerate(repo)
    commit(repo, "a100: ConnectX-6 Dx instead of the E810")
    report = diff_against(repo, "HEAD~1")

    assert changes_of(report, "a100") == [
        ("argocd", "added", "AppProject argocd/forge-a100-network-operator (argoproj.io)"),
        ("argocd", "added", "Application argocd/a100-network-operator (argoproj.io)"),
        # the node gate now holds the DOCA driver's rollout too (its config lists the driver `ofed`)
        ("gpu-operator", "changed", "ConfigMap gpu-operator/forge-node-gate"),
        ("network-operator", "added", "Helm values of network-operator"),
        # the Maintenance Operator's limits: DOCA/OFED upgrades share the GPU driver upgrades' knob
        ("network-operator", "added", "MaintenanceOperatorConfig nvidia-network-operator/default (maintenance.nvidia.com)"),
        ("network-operator", "added", "Namespace nvidia-network-operator"),
        ("network-operator", "added", "NetworkPolicy nvidia-network-operator/allow-prometheus-scrape (networking.k8s.io)"),
        ("network-operator", "added", "NetworkPolicy nvidia-network-operator/allow-same-namespace (networking.k8s.io)"),
        ("network-operator", "added", "NetworkPolicy nvidia-network-operator/default-deny-ingress (networking.k8s.io)"),
        ("network-operator", "added", "NicClusterPolicy nic-cluster-policy (mellanox.com)"),
    ]
    assert fields_of(report, "a100", "ConfigMap gpu-operator/forge-node-gate") == [('data["config.json"] > drivers[1]', MISSING, "ofed")]
    # The new Application comes with its own AppProject, as wide as what it renders; no other changes.
    project = next(c.new for c in report.changes if str(c.ident) == "AppProject argocd/forge-a100-network-operator (argoproj.io)")["spec"]
    assert {(k["group"], k["kind"]) for k in project["clusterResourceWhitelist"]} >= {
        ("mellanox.com", "IPoIBNetwork"), ("mellanox.com", "MacvlanNetwork"), ("mellanox.com", "NicClusterPolicy")}
    assert project["destinations"] == [{"server": "https://kubernetes.default.svc", "namespace": "nvidia-network-operator"}]
    assert report.for_cluster("h200") == []
    assert flags_of(report, "restart") == [(
        "high", "a100", "network-operator",
        "new NicClusterPolicy nic-cluster-policy (mellanox.com): starts the DOCA/OFED driver DaemonSet on 10 nodes with "
        "NVIDIA/Mellanox NICs (a100-gpu-01, a100-gpu-02, a100-gpu-03, a100-gpu-04, a100-gpu-05, a100-gpu-06 and 4 more); "
        "the NIC driver is reloaded: RDMA traffic on each node stops until it is back",
    )]
    assert flags_of(report, "prune") == []


def test_mig_layout_change_on_one_node(repo, kustomize):
    result = cli("node", "set", "h200", "h200-gpu-17", "--mig-layout", "none", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    commit(repo, "h200-gpu-17: whole GPUs")
    report = diff_against(repo, "HEAD~1")

    # the node's rule, and the node gate's config (the node's tests: whole GPUs now)
    assert changes_of(report, "h200") == [
        ("gpu-operator", "changed", "ConfigMap gpu-operator/forge-node-gate"),
        ("node-feature-discovery", "changed", "NodeFeatureRule forge-node-h200-gpu-17 (nfd.k8s-sigs.io)"),
    ]
    assert fields_of(report, "h200", "NodeFeatureRule forge-node-h200-gpu-17 (nfd.k8s-sigs.io)") == [
        ('spec.rules[name=forge-node-h200-gpu-17].labels["nvidia.com/mig.config"]', "all-1g", "all-disabled"),
    ]
    assert flags_of(report, "mig") == [(
        "high", "h200", "node-feature-discovery",
        "MIG layout changes on 1 node: h200-gpu-17 (all-1g -> all-disabled); "
        "mig-manager evicts the GPU pods there and re-partitions the GPUs",
    )]
    assert report.for_cluster("a100") == []


def test_last_user_of_a_mig_layout_changes_the_gpu_operator_values(repo, kustomize):
    # Kueue's shares of the MIG pool go first: once no node is cut, they would be stale (refused).
    inventory = repo / "clusters/h200/inventory.yaml"
    inventory.write_text(without_mig_shares(inventory.read_text()))
    for node in ("h200-gpu-17", "h200-gpu-18"):
        assert cli("node", "set", "h200", node, "--mig-layout", "none", "--root", str(repo)).exit_code == 0
    commit(repo, "h200: no MIG")
    report = diff_against(repo, "HEAD~1")

    values = fields_of(report, "h200", "Helm values of gpu-operator")
    assert [(where, new) for where, old, new in values] == [
        ('migManager.config.data["config.yaml"] > mig-configs.all-1g', MISSING),
    ]
    assert values[0][1] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.18gb": 7}}]
    messages = [f[3] for f in flags_of(report, "restart")]
    assert any(m.startswith('Helm values of chart gpu-operator change migManager.config.data["config.yaml"] > mig-configs.all-1g: '
                            "restarts the MIG manager DaemonSet on 18 MIG-capable GPU nodes") for m in messages), messages
    assert [f[3].split(":")[0] for f in flags_of(report, "mig")] == ["MIG layout changes on 2 nodes"]


def test_chart_bump_is_flagged_on_every_cluster_that_installs_it(repo, kustomize):
    versions = repo / "charts/versions.yaml"
    versions.write_text(versions.read_text().replace("version: v26.7.0", "version: v26.8.0"))
    regenerate(repo)
    commit(repo, "gpu-operator v26.8.0")
    report = diff_against(repo, "HEAD~1")

    for cluster in ("a100", "h200", "h200-burst"):
        assert changes_of(report, cluster) == [("argocd", "changed", f"Application argocd/{cluster}-gpu-operator (argoproj.io)")]
        assert fields_of(report, cluster, f"Application argocd/{cluster}-gpu-operator (argoproj.io)") == [
            ("spec.sources[0].targetRevision", "v26.7.0", "v26.8.0"),
        ]
    charts = flags_of(report, "chart")
    assert [(level, cluster, component) for level, cluster, component, _ in charts] == [
        ("medium", "a100", "gpu-operator"), ("medium", "h200", "gpu-operator"), ("medium", "h200-burst", "gpu-operator"),
    ], charts
    assert charts[1][3].startswith("chart gpu-operator v26.7.0 -> v26.8.0 (Application h200-gpu-operator): "
                                   "new templates and CRDs are applied on sync; its DaemonSets may roll on 18 GPU nodes")


def test_no_change_exits_0_and_leaves_the_users_tree_alone(repo, kustomize):
    before = git(repo, "status", "--porcelain", "--ignored")
    result = cli("diff", "--base", "HEAD", "--root", str(repo))
    assert result.exit_code == 0, result.stderr
    assert "no changes" in result.stdout
    assert git(repo, "status", "--porcelain", "--ignored") == before
    assert len(git(repo, "worktree", "list").splitlines()) == 1
    assert not (repo / "build").exists()


def test_stale_generated_files_are_reported_but_not_touched(repo, kustomize):
    inventory = repo / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("    mig_layout: all-1g\n", "", 1))
    result = cli("diff", "--base", "HEAD", "--root", str(repo))
    assert result.exit_code == 1
    # the node's NodeFeatureRule, and what moving its 8 GPUs between pools does to the quotas:
    # 4 ClusterQueues and the 12 ResourceQuotas (their ceilings), the node's join file, its 4 new
    # node tests (whole GPUs now: DCGM, NVLink, the NCCL pair test and the release Job), the node
    # gate's ConfigMap (each node's tests) and overlays/h200/generated.sha256 (forge.generate.handedits)
    assert "note: the working tree's generated files are out of step with its inventories (24 files)" in result.stdout, result.stdout
    assert "all-1g -> all-disabled" in result.stdout
    assert git(repo, "status", "--porcelain") == " M clusters/h200/inventory.yaml\n"


def test_bad_ref_and_bad_inventory_exit_2(repo, kustomize):
    result = cli("diff", "--base", "no-such-branch", "--root", str(repo))
    assert result.exit_code == 2
    assert "error: --base no-such-branch: not a commit in" in result.stderr

    inventory = repo / "clusters/a100/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("rack: a100-r01\n    roles: [gpu]", "rack: a100-r01\n    roles: [gpu, bogus]", 1))
    result = cli("diff", "--base", "HEAD", "--root", str(repo))
    assert result.exit_code == 2
    line = next(i for i, text in enumerate(inventory.read_text().splitlines(), 1) if "bogus" in text)
    assert f"clusters/a100/inventory.yaml:{line}: nodes[3].roles[1]:" in result.stderr
    assert len(git(repo, "worktree", "list").splitlines()) == 1  # the base worktree is gone again


def test_format_path_quotes_keys_that_are_not_plain():
    from forge.diff.objects import EMBEDDED, Named

    assert format_path(("spec", "rules", Named("r"), "labels", "nvidia.com/mig.config")) == 'spec.rules[name=r].labels["nvidia.com/mig.config"]'
    assert format_path(("data", "config.yaml", EMBEDDED, "version", 0)) == 'data["config.yaml"] > version[0]'

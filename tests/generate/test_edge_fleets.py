"""The edge-case fleets of tests/fixtures/clusters through the whole pipeline: generate, render with
the real kustomize, validate (against the upstream chart data when FORGE_UPSTREAM is set).

`mig-lab` cuts each GPU node differently (every GPU in slices, two profiles on some GPUs with the
rest whole, MIG off); `no-fabric` has GPU nodes with front-end Ethernet only and no component
settings but its secret store (every cluster declares one: no Secret is made by hand); `ib-small`
runs its compute fabric on InfiniBand (tests/components/network_operator/test_infiniband.py).
They live outside clusters/, so Argo CD never syncs them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, copy_repo_inputs, forge, kustomize_or_skip

FIXTURES = REPO / "tests" / "fixtures" / "clusters"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repo made of the fixture inventories only, generated and rendered once for the module."""
    kustomize_or_skip()
    repo = copy_repo_inputs(tmp_path_factory.mktemp("edge") / "repo", FIXTURES)
    result = forge(repo, "generate")
    assert result.exit_code == 0, result.output
    result = forge(repo, "render")
    assert result.exit_code == 0, result.output
    return repo


def values(repo: Path, cluster: str, component: str) -> dict:
    return yaml.safe_load((repo / "overlays" / cluster / component / "values.yaml").read_text())


def rendered(repo: Path, cluster: str, component: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((repo / "build/rendered" / cluster / f"{component}.yaml").read_text()) if d]


def node_labels(repo: Path, cluster: str, node: str) -> dict[str, str]:
    rule = yaml.safe_load((repo / f"overlays/{cluster}/node-feature-discovery/nodefeaturerule-forge-node-{node}.yaml").read_text())
    return rule["spec"]["rules"][0]["labels"]


def test_validate_passes_on_both_fixtures(fleet: Path):
    upstream = os.environ.get("FORGE_UPSTREAM", "")
    args = ["validate", "--upstream", upstream] if upstream else ["validate"]
    result = forge(fleet, *args)
    assert result.exit_code == 0, result.output
    # Every fixture fleet (the added fleets of tests/generate/test_added_fleets.py too).
    assert sorted(p.name for p in (fleet / "build/rendered").iterdir()) == sorted(p.parent.name for p in FIXTURES.glob("*/inventory.yaml"))
    assert {"ib-small", "mig-lab", "no-fabric"} <= {p.name for p in (fleet / "build/rendered").iterdir()}
    assert ": 0 failures, " in result.output
    if upstream:
        assert result.output.endswith(": 0 failures, 0 unchecked\n")


def test_mig_lab_needs_the_mixed_strategy_and_carries_every_layout_in_use(fleet: Path):
    gpu = values(fleet, "mig-lab", "gpu-operator")
    assert gpu["mig"]["strategy"] == "mixed"
    config = yaml.safe_load(gpu["migManager"]["config"]["data"]["config.yaml"])
    assert config["mig-configs"] == {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-1g": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
        "halves-and-smalls": [
            {"devices": [0, 1, 2, 3], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
            {"devices": [4, 5], "mig-enabled": True, "mig-devices": {"1g.10gb": 3, "2g.20gb": 2}},
            {"devices": [6, 7], "mig-enabled": False}],
    }
    assert gpu["driver"]["version"] == "580.95.05"  # the Ampere branch
    assert gpu["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                                # a node with whole GPUs is tested before it serves (node_tests)
                                                {"key": "forge.exa.ai/untested", "operator": "Exists", "effect": "NoSchedule"}]


def test_mig_lab_nodes_get_the_layout_of_their_node_or_profile(fleet: Path):
    layouts = {n: node_labels(fleet, "mig-lab", n).get("nvidia.com/mig.config") for n in ("ml-gpu-01", "ml-gpu-02", "ml-gpu-03")}
    assert layouts == {"ml-gpu-01": "all-1g", "ml-gpu-02": "halves-and-smalls", "ml-gpu-03": "all-disabled"}
    assert "nvidia.com/mig.config" not in node_labels(fleet, "mig-lab", "ml-cp-01")


def test_mig_lab_renders_one_node_rule_per_node_with_its_layout(fleet: Path):
    rules = {d["metadata"]["name"]: d["spec"]["rules"][0]["labels"].get("nvidia.com/mig.config")
             for d in rendered(fleet, "mig-lab", "node-feature-discovery") if d["kind"] == "NodeFeatureRule"}
    assert {k: v for k, v in rules.items() if v} == {
        "forge-node-ml-gpu-01": "all-1g", "forge-node-ml-gpu-02": "halves-and-smalls", "forge-node-ml-gpu-03": "all-disabled"}
    assert len(rules) == 6


def test_no_fabric_has_no_network_operator_and_no_gpudirect(fleet: Path):
    overlays = sorted(p.name for p in (fleet / "overlays/no-fabric").iterdir() if p.is_dir())
    assert "network-operator" not in overlays
    assert not (fleet / "clusters/no-fabric/argocd/apps/application-network-operator.yaml").exists()
    assert not (fleet / "build/rendered/no-fabric/network-operator.yaml").exists()
    rdma = values(fleet, "no-fabric", "gpu-operator")["driver"]["rdma"]
    assert rdma == {"enabled": False, "useHostMofed": False}
    assert values(fleet, "no-fabric", "gpu-operator")["driver"]["version"] == "595.91.07"  # the Hopper branch


def test_no_fabric_without_settings_runs_only_the_components_that_need_none(fleet: Path):
    overlays = sorted(p.name for p in (fleet / "overlays/no-fabric").iterdir() if p.is_dir())
    # external-secrets: the one block it has (its secret store)
    assert overlays == ["alloy", "external-secrets", "gpu-operator", "kuberay-operator", "loki", "node-feature-discovery",
                        "prometheus", "prometheus-crds", "training-operator"]
    apps = sorted(p.name for p in (fleet / "clusters/no-fabric/argocd/apps").glob("application-*.yaml"))
    assert apps == sorted(f"application-{c}.yaml" for c in overlays)
    gpu = values(fleet, "no-fabric", "gpu-operator")
    assert gpu["mig"]["strategy"] == "mixed"  # MIG off: every GPU whole, never advertised as slices
    assert yaml.safe_load(gpu["migManager"]["config"]["data"]["config.yaml"])["mig-configs"] == {
        "all-disabled": [{"devices": "all", "mig-enabled": False}]}

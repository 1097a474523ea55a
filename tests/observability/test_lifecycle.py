"""The node-lifecycle alerts (forge.observability.lifecycle) under promtool: those that wait a day
and more, at their own evaluation step, on their rule group alone (the rest run in test_rules)."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from forge.components.prometheus import Prometheus
from forge.observability.rules import rule_groups
from tests.helpers import CLUSTERS, generated, model
from tests.observability.lifecycle_cases import STEP_MIN, held_untested_cases, lifecycle_cases, upgrade_cases
from tests.observability.test_rules import promtool_tests

GROUP = "forge-node-lifecycle"


def assert_promtool_passes(cluster, cases, promtool, tmp_path) -> None:
    """promtool runs `cases` (a firing and a quiet one each) against the lifecycle rule group."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [g for g in rule_groups(cluster) if g["name"] == GROUP]}, sort_keys=False))
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": f"{STEP_MIN}m",
                                     "tests": promtool_tests(cluster, cases)}, sort_keys=False))
    r = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]


@pytest.mark.parametrize("name", CLUSTERS)
def test_a_node_held_in_an_upgrade_too_long_alerts_and_a_finished_one_does_not(name, promtool, tmp_path):
    cluster = model(name)
    cases = [c for c in upgrade_cases(cluster) if c.interval != "1m"]
    assert {c.alert for c in cases} == {"NodeDriverUpgradeStuck"}
    assert_promtool_passes(cluster, cases, promtool, tmp_path)


@pytest.mark.parametrize("name", CLUSTERS)
def test_a_node_forgotten_with_the_untested_taint_alerts_and_a_released_one_does_not(name, promtool, tmp_path):
    cluster = model(name)
    cases = held_untested_cases(cluster)
    names = {r.get("alert") for g in rule_groups(cluster) for r in g["rules"]}
    assert ("NodeHeldUntested" in names) == bool(cases) == any(n.tested_before_service for n in cluster.nodes)
    if not cases:
        return  # a cloud cluster: Karpenter's nodes are not tainted
    assert_promtool_passes(cluster, cases, promtool, tmp_path)


@pytest.mark.parametrize("name", CLUSTERS)
def test_kube_state_metrics_exports_the_upgrade_state_labels_the_alerts_read(name):
    """Without the allowlist, kube_node_labels has no upgrade-state label and the alerts never fire."""
    values = generated(f"overlays/{name}/prometheus/values.yaml")
    [entry] = values["kube-state-metrics"]["metricLabelsAllowlist"]
    assert "nvidia.com/gpu-driver-upgrade-state" in entry and entry.startswith("nodes=[")
    assert ("nvidia.com/ofed-driver-upgrade-state" in entry) == model(name).ofed_driver
    assert Prometheus().values(model(name))["kube-state-metrics"]["metricLabelsAllowlist"] == [entry]


def test_the_stuck_limit_follows_the_wait_and_drain_timeouts():
    [rule] = [r for g in rule_groups(model("h200")) for r in g["rules"]
              if r.get("alert") == "NodeDriverUpgradeStuck" and r["labels"]["driver"] == "gpu"]
    assert rule["for"] == "26h30m"  # a day's wait for training pods, 30 minutes' drain, 2 h reload and validation


@pytest.mark.parametrize("name", CLUSTERS)
def test_the_one_minute_lifecycle_alerts_fire_and_stay_quiet(name, promtool, tmp_path):
    """NodeDriverUpgradeFailed and NodeTestFailed on their group alone (test_rules runs them with the rest)."""
    cluster = model(name)
    cases = [c for c in lifecycle_cases(cluster) if c.interval == "1m"]
    assert {c.alert for c in cases} == {"NodeDriverUpgradeFailed", "NodeTestFailed"}
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [g for g in rule_groups(cluster) if g["name"] == GROUP]}, sort_keys=False))
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                     "tests": promtool_tests(cluster, cases)}, sort_keys=False))
    r = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]

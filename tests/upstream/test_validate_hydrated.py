"""forge validate --hydrated: schemas and the CRDs the charts ship, policies, values keys the chart
ignores or sets to its default, and what the charts' custom resources carry.
The widget chart is a test fixture (tests/upstream/charts/README.md), not an upstream chart."""
from __future__ import annotations

from pathlib import Path

from forge.fleet import load_fleet
from forge.components.driver_upgrades import rendered_upgrade_policy
from forge.components.gpu_operator import MIG_CONFIG_NAME, GpuOperator
from forge.upstream.check import check_expected
from tests.helpers import REPO, forge
from tests.upstream.conftest import GOOD_VALUES, Widget, set_values


def hydrate(repo: Path, mirror: Path) -> None:
    assert forge(repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    result = forge(repo, "hydrate")
    assert result.exit_code == 0, result.output


def test_clean_values_pass(widget_repo: Path, mirror: Path):
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.splitlines()[0] == "a100: 9 objects (1 against CRDs the charts ship), 15 values keys"
    assert ": 0 failures, 0 warnings" in result.stdout


def test_silent_drops_are_reported_with_file_and_line(widget_repo: Path, mirror: Path):
    values = {
        "replicas": 2,
        "image": {"repository": "registry.example.com/widget", "tag": "1.2.3"},  # both the chart's defaults
        "resources": {"limits": {"cpu": "1"}},
        "podLabels": {"team": "ml"},
        "config": {"anything": {"deep": 1}},
        "feature": {"enabled": True, "portt": 9090},  # misspelt: the chart keeps its port 8080
        "notesOnly": "hello",  # only NOTES.txt reads it
        "legacy": {"oldKey": "y"},  # in the chart's defaults, read by no template (only an unused helper)
        "widget": {"size": 0, "mode": "fast", "extra": {"colour": "red"}},  # `| default 1` eats the 0; colour is no field
        "sidekick": {"enabled": True, "port": 9100, "bogus": 1},  # a subchart key it does not read
        "global": {"domain": "example.com"},
        "priorityClassName": "system-cluster-critical",
    }
    set_values(widget_repo, values)
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    vf = "overlays/a100/widget/values.yaml"
    assert result.stderr.splitlines() == [
        "FAIL a100 / widget / Widget/main / spec.size / is 1, the inventory asks for 0",
        "FAIL a100 / widget / build/hydrated/a100/widget.yaml:111 Widget/main / spec.colour / unknown field",
        f"FAIL a100 / widget / {vf}:16 / feature.portt / ignored: no template of widget 1.2.3 or its subcharts reads it (did you mean 'port'?)",
        f"FAIL a100 / widget / {vf}:17 / notesOnly / ignored: no template of widget 1.2.3 or its subcharts reads it",
        f"FAIL a100 / widget / {vf}:19 / legacy.oldKey / ignored: no template of widget 1.2.3 or its subcharts reads it",
        f"FAIL a100 / widget / {vf}:28 / sidekick.bogus / ignored: no template of widget 1.2.3 or its subcharts reads it",
        f"warning: a100 / widget / {vf}:4 / image.repository / redundant: \"registry.example.com/widget\" is already the chart's default",
        f"warning: a100 / widget / {vf}:5 / image.tag / redundant: \"1.2.3\" is already the chart's default",
    ]
    lines = (widget_repo / vf).read_text().splitlines()
    assert lines[15].strip() == "portt: 9090" and lines[27].strip() == "bogus: 1"  # the lines named are the keys
    hydrated = (widget_repo / "build/hydrated/a100/widget.yaml").read_text().splitlines()
    assert hydrated[110:112] == ["apiVersion: example.com/v1", "kind: Widget"]
    assert result.stdout.splitlines()[-1].endswith(": 6 failures, 2 warnings")


def test_keys_of_a_disabled_subchart_are_ignored(widget_repo: Path, mirror: Path):
    values = {key: value for key, value in GOOD_VALUES.items() if key != "sidekick"}
    values["sidekick"] = {"enabled": False, "port": 9100}  # the last lines of the values file
    set_values(widget_repo, values)
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        # only the switched-off subchart reads the global
        "FAIL a100 / widget / overlays/a100/widget/values.yaml:23 / global.domain / ignored: no template of widget 1.2.3 "
        "or its subcharts reads it",
        "FAIL a100 / widget / overlays/a100/widget/values.yaml:27 / sidekick.port / ignored: subchart sidecar 0.1.0 "
        "('sidekick') is disabled (sidekick.enabled is false), Helm does not render it",
        "warning: a100 / widget / overlays/a100/widget/values.yaml:26 / sidekick.enabled / redundant: false is already the chart's default",
    ]
    lines = (widget_repo / "overlays/a100/widget/values.yaml").read_text().splitlines()
    assert [lines[i].strip() for i in (22, 25, 26)] == ["domain: example.com", "enabled: false", "port: 9100"]


def test_validate_hydrated_needs_hydrate_first(widget_repo: Path, mirror: Path):
    assert forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["error: build/hydrated/a100/widget.yaml is missing: run `forge hydrate` first"]


# ---- the GPU Operator's expectations on its ClusterPolicy (no chart needed: the object is given) ----

def test_gpu_operator_cluster_policy_must_carry_the_inventory():
    h200 = next(c for c in load_fleet(REPO).clusters if c.name == "h200")
    expected = GpuOperator().expected_in_hydrated(h200)
    good = {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
        "spec": {
            "driver": {"version": h200.driver_version, "kernelModuleType": "open", "rdma": {"enabled": False, "useHostMofed": False},
                       # as the chart renders it (v26.7.0 writes no empty drain.podSelector)
                       "upgradePolicy": rendered_upgrade_policy(h200.component_settings["gpu-operator"].upgrade)},
            "mig": {"strategy": h200.mig_strategy},
            "migManager": {"config": {"name": MIG_CONFIG_NAME, "default": "all-disabled"}},
            "daemonsets": {"tolerations": h200.gpu_daemon_tolerations},  # with the untested taint (node_tests)
            "dcgmExporter": {"serviceMonitor": {"enabled": True, "interval": "15s"}},
        },
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": MIG_CONFIG_NAME},
              "data": {"config.yaml": GpuOperator().facts(h200).mig_parted_config}}
    assert [p for e in expected for p in check_expected([good, config], e)] == []

    # driver.nvidiaDriverCRD.enabled=true makes the chart leave rdma out of the ClusterPolicy.
    # And with our key misspelt the chart's default MIG strategy (single) would stand in for mixed.
    assert h200.mig_strategy == "mixed" and h200.gpudirect_rdma
    dropped = {**good, "spec": {**good["spec"], "driver": {"version": h200.driver_version}, "mig": {"strategy": "single"}}}
    problems = [p for e in expected for p in check_expected([dropped, config], e)]
    assert problems == [
        ("spec.driver.rdma.enabled", "missing: the inventory asks for false"),
        ("spec.driver.rdma.useHostMofed", "missing: the inventory asks for false"),
        ("spec.driver.kernelModuleType", 'missing: the inventory asks for "open"'),
        # a chart that dropped our upgrade policy would leave its defaults: pods deleted mid-training
        *((f"spec.driver.upgradePolicy.{key}", reason) for key, reason in (
            ("autoUpgrade", "missing: the inventory asks for true"),
            ("maxParallelUpgrades", "missing: the inventory asks for 1"),
            ("maxUnavailable", 'missing: the inventory asks for "25%"'),
            ("waitForCompletion", 'missing: the inventory asks for {"podSelector": "forge.exa.ai/workload", "timeoutSeconds"...'),
            ("podDeletion", 'missing: the inventory asks for {"force": false, "timeoutSeconds": 1800, "deleteEmptyDir"...'),
            ("drain", 'missing: the inventory asks for {"enable": true, "force": false, "timeoutSeconds": 1800, ...'),
        )),
        ("spec.mig.strategy", 'is "single", the inventory asks for "mixed"'),
    ]
    assert check_expected([config], expected[0]) == [
        ("spec.driver.version", f"the chart rendered no ClusterPolicy named 'cluster-policy' (the inventory asks for "
                                f"spec.driver.version = \"{h200.driver_version}\")")]


def test_an_infrastructure_pod_without_a_high_class_fails_on_the_hydrated_output(widget_repo: Path, mirror: Path):
    set_values(widget_repo, {k: v for k, v in GOOD_VALUES.items() if k != "priorityClassName"})
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "FAIL a100 / widget / Deployment/widget/wdg-widget / spec.template.spec.priorityClassName / no priorityClassName in "
        "infrastructure namespace 'widget': its pods get the global default class, pre-emptible by workload classes up to "
        "none (0); name system-cluster-critical or system-node-critical"]


def test_a_priority_exception_turns_the_chart_pods_into_warnings(widget_repo: Path, mirror: Path, monkeypatch):
    monkeypatch.setattr(Widget, "priority_exception", "widget 1.2.3 has no priorityClassName value")
    set_values(widget_repo, {k: v for k, v in GOOD_VALUES.items() if k != "priorityClassName"})
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "warning: a100 / widget / Deployment/widget/wdg-widget / spec.template.spec.priorityClassName / priority exception: "
        "widget 1.2.3 has no priorityClassName value"]


def test_a_crd_in_an_automatically_pruning_application_fails_on_the_hydrated_output(widget_repo: Path, mirror: Path, monkeypatch):
    monkeypatch.setattr(Widget, "prune", True)
    set_values(widget_repo, GOOD_VALUES)
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "FAIL a100 / widget / CustomResourceDefinition/widgets.example.com / metadata.annotations.argocd.argoproj.io/sync-options / "
        "CRD in Application a100-widget, which prunes automatically, without Prune=false: a release that drops it would delete "
        "every object of its kind (annotate it, or turn the Application's pruning off)"]

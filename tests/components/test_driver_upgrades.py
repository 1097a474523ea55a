"""Driver upgrades (forge.components.driver_upgrades): one knob in the inventory drives the GPU
Operator's upgrade policy, the Network Operator's DOCA/OFED upgrades (requestor mode through the
Maintenance Operator) and the MaintenanceOperatorConfig; both fleets drain one node at a time and
wait for training pods."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.components.driver_upgrades import UpgradeSettings, maintenance_operator_config, upgrade_policy
from forge.components.gpu_operator import GpuOperator
from forge.components.network_operator import NAMESPACE, NetworkOperator, max_parallel_upgrades
from forge.validate.crd import CrdSchemas
from forge.validate.objects import load_yaml_stream
from tests.helpers import CLUSTERS, H200_FILE, edit, generated, generated_dir, inventory_text, line_of, model, needs_upstream, problems

KNOB = "      wait_for_completion: {pod_selector: forge.exa.ai/workload, timeout_seconds: 86400}\n"


def _custom(text: str) -> str:
    text = edit(text, "      max_parallel: 1\n", "      max_parallel: 2\n      max_unavailable: 10%\n")
    text = edit(text, "      drain_timeout_seconds: 1800\n", "      drain_timeout_seconds: 900\n")
    return edit(text, KNOB, "      wait_for_completion: {pod_selector: 'ray.io/node-type=worker', timeout_seconds: 3600}\n")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_both_fleets_upgrade_gpu_drivers_one_drained_node_at_a_time_waiting_for_training_pods(cluster):
    values = generated(f"overlays/{cluster}/gpu-operator/values.yaml")
    assert values["driver"]["upgradePolicy"] == {
        "autoUpgrade": True,
        "maxParallelUpgrades": 1,
        "maxUnavailable": "25%",
        "waitForCompletion": {"podSelector": "forge.exa.ai/workload", "timeoutSeconds": 86400},
        "drain": {"enable": True, "force": False, "podSelector": "", "timeoutSeconds": 1800, "deleteEmptyDir": True},
        "gpuPodDeletion": {"force": False, "timeoutSeconds": 1800, "deleteEmptyDir": True},
    }
    # and the ClusterPolicy the chart renders must carry it (forge validate --hydrated)
    expected = {e.path: e.value for e in GpuOperator().expected_in_hydrated(model(cluster)) if e.kind == "ClusterPolicy"}
    assert expected["spec.driver.upgradePolicy.maxUnavailable"] == "25%"
    # as the chart's template renders it: no podSelector when ours is "" (the real chart's hydrated
    # ClusterPolicy has none; "" and absent both mean every pod to the operator)
    assert expected["spec.driver.upgradePolicy.drain"] == {"enable": True, "force": False, "timeoutSeconds": 1800,
                                                            "deleteEmptyDir": True}
    assert expected["spec.driver.upgradePolicy.waitForCompletion"] == {"podSelector": "forge.exa.ai/workload",
                                                                       "timeoutSeconds": 86400}
    assert expected["spec.driver.upgradePolicy.podDeletion"]["force"] is False


def test_nic_driver_upgrades_ask_the_maintenance_operator_within_the_same_knob():
    values = generated("overlays/h200/network-operator/values.yaml")
    assert values["maintenanceOperator"] == {"enabled": True}
    assert values["operator"]["maintenanceOperator"] == {"useRequestor": True}
    # no cert-manager here: the webhook is off, said on purpose
    assert values["maintenance-operator-chart"]["operator"]["admissionController"] == {"enable": False}
    config = generated("overlays/h200/network-operator/maintenanceoperatorconfig-default.yaml")
    assert config["metadata"]["name"] == "default" and config["metadata"]["namespace"] == NAMESPACE
    assert config["spec"] == {"maxParallelOperations": 1, "maxUnavailable": "25%"}
    ofed = generated("overlays/h200/network-operator/nicclusterpolicy-nic-cluster-policy.yaml")["spec"]["ofedDriver"]["upgradePolicy"]
    assert ofed["maxParallelUpgrades"] == 1
    assert ofed["waitForCompletion"] == {"podSelector": "forge.exa.ai/workload", "timeoutSeconds": 86400}
    assert ofed["drain"]["enable"] is True


def test_a_restarted_doca_driver_pod_reloads_only_after_cordon_and_drain():
    """ofedDriver.upgradePolicy.safeLoad (the CRD's default false reloads the modules under
    running jobs when the driver pod merely restarts)."""
    ofed = generated("overlays/h200/network-operator/nicclusterpolicy-nic-cluster-policy.yaml")["spec"]["ofedDriver"]
    assert ofed["upgradePolicy"]["safeLoad"] is True


def test_a100_has_no_nic_driver_and_no_maintenance_operator():
    cluster = model("a100")
    assert not NetworkOperator().enabled(cluster)


def test_the_knob_comes_from_the_inventory():
    cluster = model("h200", _custom(inventory_text("h200")))
    values = GpuOperator().values(cluster)["driver"]["upgradePolicy"]
    assert (values["maxParallelUpgrades"], values["maxUnavailable"]) == (2, "10%")
    assert values["waitForCompletion"] == {"podSelector": "ray.io/node-type=worker", "timeoutSeconds": 3600}
    assert values["drain"]["timeoutSeconds"] == 900 and values["gpuPodDeletion"]["timeoutSeconds"] == 900
    objs = {o["kind"]: o for o in NetworkOperator().manifests(cluster)}
    assert objs["MaintenanceOperatorConfig"]["spec"] == {"maxParallelOperations": 2, "maxUnavailable": "10%"}
    ofed = objs["NicClusterPolicy"]["spec"]["ofedDriver"]["upgradePolicy"]
    # 10 % of the 18 DOCA nodes is 1: the NIC's own share stays below the knob
    assert ofed["maxParallelUpgrades"] == 1
    assert ofed["waitForCompletion"] == {"podSelector": "ray.io/node-type=worker", "timeoutSeconds": 3600}


@pytest.mark.parametrize(("nodes", "percent", "limit", "expected"), [(18, 50, 1, 1), (18, 50, 3, 3), (18, 10, 3, 1), (18, 50, None, 9)])
def test_nic_upgrades_never_exceed_the_gpu_knob(nodes, percent, limit, expected):
    assert max_parallel_upgrades(nodes, percent, limit) == expected


def test_a_knob_of_zero_is_refused_with_its_line():
    text = edit(inventory_text("h200"), "      max_parallel: 1\n", "      max_parallel: 0\n")
    [problem] = [p for p in problems(text) if "max_parallel" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, 'max_parallel: 0')}: components.gpu-operator.upgrade.max_parallel:")


def test_the_knob_defaults_to_one_node_without_a_block():
    text = inventory_text("h200")
    start = text.index("  gpu-operator:\n")
    text = text[:start] + text[text.index(KNOB) + len(KNOB):]
    cluster = model("h200", text)
    assert GpuOperator().values(cluster)["driver"]["upgradePolicy"]["maxUnavailable"] == "25%"
    assert GpuOperator().settings(cluster).upgrade == UpgradeSettings()


@needs_upstream
def test_the_policy_fits_clusterpolicy_nvidiadriver_and_the_maintenance_config(upstream: Path):
    """One policy for every driver spec: the ClusterPolicy's driver and an NVIDIADriver (per-pool
    driver CRs) take the same DriverUpgradePolicySpec; the real CRDs reject an unknown field."""
    schemas = CrdSchemas()
    for folder, names in (("gpu-operator-v26.7.0", ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com")),
                          ("network-operator-26.4.1", ("maintenanceoperatorconfigs.maintenance.nvidia.com",))):
        for name in names:
            schemas.add_objects(load_yaml_stream((upstream / folder / "crds" / f"{name}.yaml").read_text()))
    policy = upgrade_policy(UpgradeSettings())
    driver = {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "pool"},
              "spec": {"default": False, "driverType": "gpu", "image": "driver", "repository": "nvcr.io/nvidia", "version": "1",
                       "upgradePolicy": policy}}
    assert schemas.validate(driver) == []
    cluster_policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                      "spec": {"driver": {"upgradePolicy": policy}}}
    assert not [p for p in schemas.validate(cluster_policy) or [] if "upgradePolicy" in p[0]]
    assert schemas.validate(maintenance_operator_config(UpgradeSettings(max_parallel=2), NAMESPACE)) == []
    bad = {**driver, "spec": {**driver["spec"], "upgradePolicy": {**policy, "maxParallel": 1}}}
    assert any("maxParallel" in reason or "maxParallel" in path for path, reason in schemas.validate(bad))


@pytest.mark.parametrize("value", ["1", "0%", "150%", "'1'", "25 %"])
def test_an_unavailability_budget_that_is_not_a_percentage_is_refused_with_its_line(value):
    """An absolute budget is what froze the fleet: one NotReady node used it up."""
    text = edit(inventory_text("h200"), "      max_parallel: 1\n", f"      max_parallel: 1\n      max_unavailable: {value}\n")
    [problem] = [p for p in problems(text) if "max_unavailable" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, 'max_unavailable:')}: components.gpu-operator.upgrade.max_unavailable:")


def test_one_broken_node_does_not_use_up_the_budget():
    """A percentage rounds up (k8s-operator-libs, the Maintenance Operator): 25 % of the 18 H200
    nodes is 5, so a node waiting for repair leaves room for the one upgrade at a time."""
    import math
    cluster = model("h200")
    percent = int(GpuOperator().values(cluster)["driver"]["upgradePolicy"]["maxUnavailable"].rstrip("%"))
    assert math.ceil(len(cluster.gpu_nodes) * percent / 100) - 1 >= 1


def test_upgrades_wait_for_every_workload_flyte_starts_not_only_kubeflow_jobs():
    """The wait selector is the label Flyte puts on every pod and job it creates (its default
    labels): plain-pod tasks and RayJobs are waited for too, not evicted at once."""
    from forge.components.driver_upgrades import WORKLOAD_LABEL
    assert UpgradeSettings().wait_for_completion.pod_selector == WORKLOAD_LABEL == "forge.exa.ai/workload"
    for cluster in CLUSTERS:
        k8s = generated(f"overlays/{cluster}/flyte/values.yaml")["configuration"]["inline"]["plugins"]["k8s"]
        assert k8s["default-labels"][WORKLOAD_LABEL] == "flyte"
        policy = generated(f"overlays/{cluster}/gpu-operator/values.yaml")["driver"]["upgradePolicy"]
        assert policy["waitForCompletion"]["podSelector"] == WORKLOAD_LABEL


# ---- maintenance mode: hold the queues, a rack at a time, resume ------------------------------------

MAINTENANCE = "      maintenance: {hold_queues: true, racks: [h200-r01]}\n"


def _maintenance(block: str = MAINTENANCE) -> str:
    return edit(inventory_text("h200"), KNOB, KNOB + block)


def test_maintenance_holds_every_queue_and_upgrades_only_the_named_racks():
    from forge.components.kueue import Kueue
    from forge.components.node_feature_discovery import NodeFeatureDiscovery
    cluster = model("h200", _maintenance())
    queues = [o for o in Kueue().manifests(cluster) if o["kind"] == "ClusterQueue"]
    own = [q for q in queues if "admissionChecksStrategy" not in q["spec"]]
    assert own and all(q["spec"]["stopPolicy"] == "HoldAndDrain" for q in own)
    # the cloud queues (MultiKueue to h200-burst) keep admitting: the racks held are not their capacity
    cloud = [q for q in queues if "admissionChecksStrategy" in q["spec"]]
    assert cloud and not [q["metadata"]["name"] for q in cloud if "stopPolicy" in q["spec"]]
    labels = {r["metadata"]["name"].removeprefix("forge-node-"): r["spec"]["rules"][0]["labels"]
              for r in NodeFeatureDiscovery().manifests(cluster)}
    skip = {"nvidia.com/gpu-driver-upgrade.skip": "true", "nvidia.com/ofed-driver-upgrade.skip": "true"}
    for node in cluster.gpu_nodes:
        held = skip.items() <= labels[node.name].items()
        assert held == (node.rack != "h200-r01"), node.name
    assert any(n.rack == "h200-r01" for n in cluster.gpu_nodes) and any(n.rack != "h200-r01" for n in cluster.gpu_nodes)
    # the control plane and system nodes run no driver: never labelled
    assert not [n.name for n in cluster.nodes if n.gpu is None and "nvidia.com/gpu-driver-upgrade.skip" in labels[n.name]]


def test_without_maintenance_the_queues_admit_and_no_node_is_skipped():
    """The shipped fleets serve: no stopPolicy, no skip label (resume = remove the block)."""
    for cluster in CLUSTERS:
        for obj in generated_dir(f"overlays/{cluster}/kueue", "clusterqueue-"):
            assert "stopPolicy" not in obj["spec"]
        for obj in generated_dir(f"overlays/{cluster}/node-feature-discovery", "nodefeaturerule-"):
            assert not [k for k in obj["spec"]["rules"][0]["labels"] if k.endswith("-driver-upgrade.skip")]
    from forge.components.kueue import Kueue
    cluster = model("h200", _maintenance("      maintenance: {hold_queues: false}\n"))
    assert all("stopPolicy" not in q["spec"] for q in Kueue().manifests(cluster) if q["kind"] == "ClusterQueue")


def test_an_unknown_maintenance_rack_is_refused_with_its_line():
    text = _maintenance("      maintenance: {racks: [h200-r99]}\n")
    [problem] = [p for p in problems(text) if "maintenance" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, 'h200-r99')}: components.gpu-operator.upgrade.maintenance.racks[0]:")
    assert "unknown rack 'h200-r99'" in problem


def test_forge_s_own_nvidiadriver_crs_keep_the_empty_drain_selector():
    from forge.components.driver_upgrades import rendered_upgrade_policy
    assert upgrade_policy(UpgradeSettings())["drain"]["podSelector"] == ""  # the CR's own field, as we write it
    assert "podSelector" not in rendered_upgrade_policy(UpgradeSettings())["drain"]  # what the chart renders

"""The node gate (forge.components.node_gate, forge.pod_scripts.node_gate): what forge generates for it, its
least privilege, and that the script shipped whole agrees with forge's facts. What it does is
proven on the box's real API server (clusters/h200/scenarios.yaml, driver-rollout-gated)."""
from __future__ import annotations

import json

import yaml

from forge.model import day_two

from forge.pod_scripts import node_gate
from forge.model.cluster import UNTESTED_TAINT_KEY
from tests.helpers import REPO, model

GPU = REPO / "overlays/h200/gpu-operator"


def _doc(name: str) -> dict:
    return yaml.safe_load((GPU / name).read_text())


def test_the_script_s_labels_are_forge_s():
    assert node_gate.STATE_LABEL == day_two.UPGRADE_STATE_LABEL.format(driver="gpu")
    assert node_gate.SKIP_LABEL == day_two.SKIP_LABEL.format(driver="gpu")
    assert (node_gate.REQUIRED, node_gate.DONE, node_gate.FAILED) == (
        day_two.UPGRADE_STATES[0], day_two.UPGRADE_DONE, day_two.UPGRADE_FAILED)
    assert (node_gate.RELEASE_REQUEST, node_gate.RELEASED, node_gate.ROUND, node_gate.BOOT) == (
        day_two.RELEASE_REQUEST_ANNOTATION, day_two.RELEASED_ANNOTATION, day_two.TEST_ROUND_ANNOTATION,
        day_two.TESTED_BOOT_ANNOTATION)


def test_the_gate_ships_the_script_and_every_tested_node_s_tests_in_order():
    cluster = model("h200")
    cm = _doc("configmap-forge-node-gate.yaml")
    assert cm["data"]["node_gate.py"] == (REPO / "generators/forge/pod_scripts/node_gate.py").read_text()
    config = json.loads(cm["data"]["config.json"])
    assert config["nodes"] == [n.name for n in cluster.gpu_nodes]  # rack by rack, as the inventory lists them
    assert (config["taint"], config["max_parallel"], config["namespace"]) == (UNTESTED_TAINT_KEY, 1, "gpu-operator")
    tested = [n.name for n in cluster.gpu_nodes if n.tested_before_service]
    assert sorted(config["tests"]) == sorted(tested) and "h200-gpu-17" not in config["tests"]  # MIG-split: untested
    jobs = [o["metadata"]["name"] for o in config["tests"]["h200-gpu-01"] if o["kind"] == "Job"]
    assert jobs == [f"forge-node-test-{t}-h200-gpu-01" for t in ("dcgm", "nvlink", "nccl")]
    # the same objects as the node-test files
    on_disk = yaml.safe_load((GPU / "node-tests/dcgm-h200-gpu-01.yaml").read_text())
    assert config["tests"]["h200-gpu-01"][0] == on_disk


def test_the_gate_may_only_patch_the_gpu_nodes_and_manage_jobs_in_its_namespace():
    cluster = model("h200")
    [rule] = _doc("clusterrole-forge-node-gate.yaml")["rules"]
    assert rule == {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"],
                    "resourceNames": [n.name for n in cluster.gpu_nodes]}
    role = _doc("role-forge-node-gate.yaml")
    assert role["metadata"]["namespace"] == "gpu-operator"
    assert {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in role["rules"]} == {
        ("batch", "jobs"): ["create", "get", "delete"], ("", "services"): ["create", "get", "delete"],
        ("", "events"): ["create"]}
    deployment = _doc("deployment-forge-node-gate.yaml")
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["serviceAccountName"] == "forge-node-gate" and pod["priorityClassName"] == "system-cluster-critical"
    assert pod["containers"][0]["image"].startswith("docker.io/library/python:")
    assert pod["nodeSelector"] == cluster.system_node_selector


def test_the_gate_holds_the_doca_driver_where_the_network_operator_runs_one():
    """h200's ConnectX-7 NICs take the Network Operator's DOCA driver (k8s-operator-libs under the
    driver name `ofed`); a100 has no DOCA driver, so its gate holds the GPU driver alone."""
    assert json.loads(_doc("configmap-forge-node-gate.yaml")["data"]["config.json"])["drivers"] == ["gpu", "ofed"]
    a100 = yaml.safe_load((REPO / "overlays/a100/gpu-operator/configmap-forge-node-gate.yaml").read_text())
    assert json.loads(a100["data"]["config.json"])["drivers"] == ["gpu"]


def test_no_gate_where_no_node_is_tested():
    assert not (REPO / "overlays/h200-burst/gpu-operator/deployment-forge-node-gate.yaml").exists()


def test_the_gate_s_probes_read_the_file_its_passes_touch():
    deployment = _doc("deployment-forge-node-gate.yaml")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    alive = next(a for a in container["command"] if a.startswith("--alive="))
    for probe in ("readinessProbe", "livenessProbe"):
        command = container[probe]["exec"]["command"]
        assert alive in command and command[-1] == "--probe", probe
    # the liveness probe waits three intervals for the first pass, or a slow start would restart it
    assert container["livenessProbe"]["initialDelaySeconds"] >= 90
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert alive.split("=", 1)[1].rsplit("/", 1)[0] in mounts  # writable under a read-only root

"""Nodes register with their taints from the inventory (forge.components.node_join): a new GPU
node must not take ordinary pods in the time before node-feature-discovery labels and taints it."""
from __future__ import annotations

import pytest
import yaml

from forge.components.node_join import CONTROL_PLANE_FILE, join_files
from tests.helpers import REPO, inventory_text, model


def _docs(cluster: str, node: str) -> list[dict]:
    path = REPO / f"overlays/{cluster}/node-feature-discovery/node-join/{node}.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_every_gpu_node_joins_with_the_gpu_taint_and_its_labels():
    cluster = model("h200")
    for node in cluster.gpu_nodes:
        join, kubelet = _docs("h200", node.name)
        assert (join["apiVersion"], join["kind"]) == ("kubeadm.k8s.io/v1beta4", "JoinConfiguration")
        registration = join["nodeRegistration"]
        assert registration["name"] == node.name
        # and, on a node with whole GPUs, the taint that keeps it out until its tests pass (node_tests)
        untested = [{"key": "forge.exa.ai/untested", "effect": "NoSchedule"}] if node.tested_before_service else []
        assert registration["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}, *untested]
        [labels] = [a["value"] for a in registration["kubeletExtraArgs"] if a["name"] == "node-labels"]
        assert dict(kv.split("=", 1) for kv in labels.split(",")) == node.labels
        assert kubelet == {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                           "registerWithTaints": registration["taints"]}


def test_the_taints_follow_the_inventory_and_the_control_plane_is_left_to_the_installer():
    text = inventory_text("h200").replace("{key: nvidia.com/gpu, effect: NoSchedule}",
                                          "{key: exa.ai/dedicated, value: training, effect: NoExecute}", 1)
    cluster = model("h200", text)
    files = join_files(cluster)
    tainted = [n for n in cluster.nodes if n.taints and "control-plane" not in n.roles]
    control_plane = files.pop(f"node-join/{CONTROL_PLANE_FILE}")  # the cluster's own, not a node's
    assert [d["kind"] for d in control_plane] == ["ClusterConfiguration"]
    changed = [f for f in files.values() if {"key": "exa.ai/dedicated", "value": "training", "effect": "NoExecute"}
               in f[0]["nodeRegistration"]["taints"]]
    assert changed and len(changed) <= len(tainted)
    assert not [n for n in cluster.nodes if "control-plane" in n.roles and f"node-join/{n.name}.yaml" in files]
    assert len(files) == len([n for n in cluster.nodes if "control-plane" not in n.roles])


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_the_control_plane_is_built_with_the_api_server_flags_of_the_inventory(cluster):
    # Issue 30: what the inventory says the API server serves is what kubeadm builds it with.
    [config] = yaml.safe_load_all((REPO / f"overlays/{cluster}/node-feature-discovery/node-join/{CONTROL_PLANE_FILE}").read_text())
    assert config["apiVersion"] == "kubeadm.k8s.io/v1beta4" and config["kind"] == "ClusterConfiguration"
    assert config["apiServer"]["extraArgs"] == [
        {"name": "feature-gates", "value": "MutatingAdmissionPolicy=true"},
        {"name": "runtime-config", "value": "admissionregistration.k8s.io/v1beta1=true"}]
    text = inventory_text(cluster).replace("    runtime_config: [admissionregistration.k8s.io/v1beta1]\n", "")
    [edited] = join_files(model(cluster, text))[f"node-join/{CONTROL_PLANE_FILE}"]
    assert edited["apiServer"]["extraArgs"] == [{"name": "feature-gates", "value": "MutatingAdmissionPolicy=true"}]


def test_a_managed_control_plane_gets_no_cluster_configuration():
    assert f"node-join/{CONTROL_PLANE_FILE}" not in join_files(model("h200-burst"))


def test_join_files_are_never_synced():
    kustomization = yaml.safe_load((REPO / "overlays/h200/node-feature-discovery/kustomization.yaml").read_text())
    assert not [r for r in kustomization["resources"] if "node-join" in r]

"""Nodes register with their taints from the inventory (forge.components.node_join): a new GPU
node must not take ordinary pods in the time before node-feature-discovery labels and taints it."""
from __future__ import annotations

import yaml

from forge.components.node_join import join_files
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
    changed = [f for f in files.values() if {"key": "exa.ai/dedicated", "value": "training", "effect": "NoExecute"}
               in f[0]["nodeRegistration"]["taints"]]
    assert changed and len(changed) <= len(tainted)
    assert not [n for n in cluster.nodes if "control-plane" in n.roles and f"node-join/{n.name}.yaml" in files]
    assert len(files) == len([n for n in cluster.nodes if "control-plane" not in n.roles])


def test_join_files_are_never_synced():
    kustomization = yaml.safe_load((REPO / "overlays/h200/node-feature-discovery/kustomization.yaml").read_text())
    assert not [r for r in kustomization["resources"] if "node-join" in r]

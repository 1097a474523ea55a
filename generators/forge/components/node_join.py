"""What the node-join step needs: each node registers with its taints (and labels) from the
inventory, so it never takes an ordinary pod before node-feature-discovery labels it.

Taints reach running nodes through NFD's NodeFeatureRules (forge.components.node_feature_discovery),
but only once nfd-master has seen the node: until then a new GPU node would take any pod. So forge
writes, per node, `overlays/<cluster>/node-feature-discovery/node-join/<node>.yaml` (never synced):

* a kubeadm `JoinConfiguration` (kubeadm.k8s.io/v1beta4) with `nodeRegistration.taints` and the
  kubelet's `node-labels`; the installer adds `discovery` (the bootstrap token is a secret: never
  in Git) and runs `kubeadm join --config`;
* the same taints as a `KubeletConfiguration` fragment (`registerWithTaints`) for installers that
  do not use kubeadm (they pass the JoinConfiguration's `node-labels` as the kubelet's flag).

and once per on-premises cluster, `node-join/control-plane.kubeadm.yaml`: the kubeadm `ClusterConfiguration`
fragment the control plane is built with (`kubeadm init --config`), whose `apiServer.extraArgs` turn
on exactly the feature gates and APIs of the inventory's `cluster.api_server` (forge.facts.kube_apis):
what forge's output needs and the fleet in a box runs with. Kubespray takes the same values as
`kube_apiserver_feature_gates` and `kube_api_runtime_config` (docs/bootstrap.md).
"""
from __future__ import annotations

from typing import Any

from forge.model.cluster import UNTESTED_TAINT, ClusterModel, NodeModel

JOIN_DIR = "node-join"
KUBEADM_API = "kubeadm.k8s.io/v1beta4"  # kubeadm 1.31 and later (the clusters run 1.34)
KUBELET_API = "kubelet.config.k8s.io/v1beta1"
CONTROL_PLANE_FILE = "control-plane.kubeadm.yaml"  # never a node's file: node names are DNS labels, without a dot


def registration_taints(node: NodeModel) -> list[dict[str, str]]:
    """The node's taints from the inventory, as the NodeFeatureRule sets them later, and on a node
    forge tests the untested taint: it keeps workloads off until the node's tests passed and its
    release Job removed it (forge.components.node_tests)."""
    inventory = [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in node.taints]
    return inventory + ([dict(UNTESTED_TAINT)] if node.tested_before_service else [])


def _labels_flag(node: NodeModel) -> str:
    return ",".join(f"{k}={v}" for k, v in node.labels.items())


def join_configuration(node: NodeModel) -> dict[str, Any]:
    return {
        "apiVersion": KUBEADM_API,
        "kind": "JoinConfiguration",
        "nodeRegistration": {
            "name": node.name,
            "taints": registration_taints(node),
            "kubeletExtraArgs": [{"name": "node-labels", "value": _labels_flag(node)}],
        },
    }


def kubelet_configuration(node: NodeModel) -> dict[str, Any]:
    return {
        "apiVersion": KUBELET_API,
        "kind": "KubeletConfiguration",  # a fragment (no metadata: the kubelet decodes it strictly)
        "registerWithTaints": registration_taints(node),
    }


def cluster_configuration(cluster: ClusterModel) -> dict[str, Any]:
    """The kubeadm ClusterConfiguration's API server flags (a fragment: the installer adds the
    endpoint, certificates and networking it owns)."""
    flags = cluster.served.flags()
    args = [{"name": flags[i].removeprefix("--"), "value": flags[i + 1]} for i in range(0, len(flags), 2)]
    return {"apiVersion": KUBEADM_API, "kind": "ClusterConfiguration", "apiServer": {"extraArgs": args}}


def join_files(cluster: ClusterModel) -> dict[str, list[dict[str, Any]]]:
    """{path under the NFD overlay: documents} for every node but the control plane (the installer
    joins and taints those itself) and a cloud pool's (Karpenter registers them with the NodePool's
    taints)."""
    files = {f"{JOIN_DIR}/{node.name}.yaml": [join_configuration(node), kubelet_configuration(node)]
             for node in cluster.nodes if "control-plane" not in node.roles and node.pool is None}
    if not cluster.cloud:  # a managed control plane is the provider's
        files[f"{JOIN_DIR}/{CONTROL_PLANE_FILE}"] = [cluster_configuration(cluster)]
    return files

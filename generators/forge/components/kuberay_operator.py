"""KubeRay operator: the RayCluster/RayJob controller behind Flyte's Ray plugin.

One operator for the whole cluster (it watches every namespace: Flyte runs Ray jobs in each
project-domain namespace). It runs on the control plane with the system-cluster-critical class.
Its metrics Service (`kuberay-operator`, port 8080, /metrics) is on by default in the chart.
"""
from __future__ import annotations

from typing import Any

from forge.components.base import WAVE_OPERATORS, Component
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model import ClusterModel


class KuberayOperator(Component):
    name = "kuberay-operator"
    namespace = "kuberay"
    sync_wave = WAVE_OPERATORS  # before Flyte, whose Ray plugin creates RayJobs
    chart = "kuberay-operator"
    server_side_apply = True  # the RayCluster/RayJob CRDs embed pod templates: too large otherwise
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    )

    def enabled(self, cluster: ClusterModel) -> bool:
        return bool(cluster.gpu_nodes)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        return {
            "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
            "nodeSelector": cluster.system_node_selector,
            "tolerations": cluster.system_tolerations,
        }

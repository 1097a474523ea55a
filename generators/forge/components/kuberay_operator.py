"""KubeRay operator: the RayCluster/RayJob controller behind Flyte's Ray plugin.

One operator for the whole cluster (it watches every namespace: Flyte runs Ray jobs in each
project-domain namespace). It runs on the control plane with the system-cluster-critical class.
Its metrics Service (`kuberay-operator`, port 8080, /metrics) is on by default in the chart.
"""
from __future__ import annotations

from typing import Any

from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_OPERATORS, Component, Expected
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import ClusterModel
from forge.facts import versions

DEPLOYMENT = "kuberay-operator"  # the chart's fullname for release kuberay-operator
IMAGE = "kuberay-operator"  # images in charts/versions.yaml: the chart's default (pinned by the chart version)
METRICS_PORT = 8080  # the chart's service.port: the operator's metrics
# What the operator calls on the Ray head pods it manages (in Flyte's project namespaces): the
# dashboard's job API (RayJob submission, status) and the dashboard agent (RayService health).
RAY_HEAD_PORTS = (8265, 52365)


class KuberayOperator(Component):
    name = "kuberay-operator"
    namespace = "kuberay"
    sync_wave = WAVE_OPERATORS  # before Flyte, whose Ray plugin creates RayJobs
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED)
    api_groups = ('ray.io',)
    chart = "kuberay-operator"
    server_side_apply = True  # the RayCluster/RayJob CRDs embed pod templates: too large otherwise
    # Only Argo CD's automated pruning is off: the chart's CRDs (RayCluster, RayJob, RayService, RayCronJob) cannot be annotated
    # Prune=false from values (see forge.validate.cluster_policies).
    prune = False
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    )

    def enabled(self, cluster: ClusterModel) -> bool:
        return bool(cluster.gpu_nodes)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape([METRICS_PORT]),)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        return {
            "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
            "nodeSelector": cluster.system_node_selector,
            "tolerations": cluster.system_tolerations,
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """The operator's placement and image, as the chart rendered them."""
        deployment = ("Deployment", DEPLOYMENT)
        pod = ("spec", "template", "spec")
        return [
            Expected(*deployment, (*pod, "priorityClassName"), SYSTEM_CLUSTER_CRITICAL),
            Expected(*deployment, (*pod, "nodeSelector"), cluster.system_node_selector),
            Expected(*deployment, (*pod, "tolerations"), cluster.system_tolerations),
            Expected(*deployment, (*pod, "containers", f"name={DEPLOYMENT}", "image"), versions.image(IMAGE).ref),
        ]

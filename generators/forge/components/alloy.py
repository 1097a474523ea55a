"""Grafana Alloy, the log shipper: a DaemonSet on every node sending to Loki (forge.observability.alloy).

Why Alloy: Promtail is end-of-life (LTS ended in 2026) and Grafana's own replacement is Alloy;
it reads files and the journal, relabels like Prometheus, and is maintained with Loki. Plain
manifests rather than Alloy's Helm chart: forge already writes the whole config, so a chart would
add templating without adding anything, and plain objects are validated by `forge validate`
against the Kubernetes schemas. Its own namespace, because reading host logs needs hostPath
volumes (Pod Security `privileged`), which Loki itself does not.
"""
from __future__ import annotations

from typing import Any

from forge.components import network
from forge.components.base import WAVE_OBSERVABILITY, Component, custom_resource
from forge.components.loki import PUSH_URL
from forge.components.scheduling import SYSTEM_NODE_CRITICAL
from forge.model.cluster import ClusterModel
from forge.observability import alloy


class Alloy(Component):
    name = "alloy"
    namespace = "alloy"
    sync_wave = WAVE_OBSERVABILITY
    cluster_kinds = (
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    )

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape([alloy.HTTP_PORT]),)

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return [*alloy.manifests(cluster, self.namespace, PUSH_URL, SYSTEM_NODE_CRITICAL),
                custom_resource(alloy.pod_monitor(self.namespace))]

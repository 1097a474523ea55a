"""kube-prometheus-stack: Prometheus, Alertmanager, Grafana, node-exporter, kube-state-metrics,
plus forge's alert rules, scrape objects and dashboards.

Two Applications from the one pinned chart:
* `prometheus-crds` (wave WAVE_MONITORING_CRDS, before everything else but NFD): the chart with
  every component switched off, so it installs only the monitoring.coreos.com CRDs. Charts of
  later waves (the GPU Operator's DCGM ServiceMonitor, Loki, Alloy) create ServiceMonitors,
  PodMonitors and PrometheusRules and need the CRDs at sync time; nothing else.
* `prometheus` (wave WAVE_OBSERVABILITY): the stack itself, with `crds.enabled: false`. It runs
  late because it needs what later waves bring (persistent volumes, the things it scrapes) and
  the first waves must not wait for Prometheus pods to become healthy.
Splitting the CRDs out of the same chart version keeps CRDs and operator in step by construction.

Prometheus selects ServiceMonitors, PodMonitors, PrometheusRules, Probes and ScrapeConfigs from
every namespace and release (`*SelectorNilUsesHelmValues: false`), labels everything it sends
with `cluster=<name>`, and gets its retention, volume and memory from forge.observability.sizing.
Grafana's admin credentials come only from an existing Secret; its data sources are the
chart's Prometheus and forge's Loki; its Ingress and OIDC login: forge.components.grafana_access.
Prometheus has no Ingress; its pods admit only Grafana and each other (`isolated_pods`). Alertmanager's configuration (receivers hold credentials)
also comes only from an existing Secret: the chart renders no config Secret of its own.
`expected_in_hydrated` checks all of this on what the real chart renders (`forge validate --hydrated`).
"""
from __future__ import annotations

from typing import Annotated, Any, Iterator, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from forge.components import alluxio, external_secrets, flyte, network
from forge.components import grafana_access, local_storage
from forge.components.grafana_access import GrafanaAccess
from forge.components.local_storage import DataPath, chosen_class, conflict
from forge.components.base import (RBAC_NAMESPACED, WORKLOAD_KINDS, kinds, WAVE_MONITORING_CRDS, WAVE_OBSERVABILITY, Component, Expected, custom_resource,
                                   storage_class_problem)
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL
from forge.components.loki import GATEWAY_URL as LOKI_URL
from forge.model.cluster import ClusterModel
from forge.observability import metrics as m
from forge.observability import plain
from forge.observability.alerting import AlertingSettings, alertmanager_config, with_runbook_links
from forge.observability.dashboards import dashboard_configmap, dashboards
from forge.observability.lifecycle import node_label_allowlist
from forge.observability.rules import prometheus_rule, rule_groups
from forge.observability.sizing import PrometheusSize, prometheus_size, series_of
from forge.model.secrets import SecretUse

NAMESPACE = network.MONITORING
WEBHOOK_PORT = 10250  # the operator's admission webhook (prometheusOperator.tls.internalPort)
CHART = "kube-prometheus-stack"
# Names kube-prometheus-stack 88.5.3 gives the objects of release `prometheus` (its fullname is
# `<release>-kube-prometheus`; subcharts use `<release>-<subchart>`), checked by expected_in_hydrated.
PROMETHEUS_CR = "prometheus-kube-prometheus-prometheus"
ALERTMANAGER_CR = "prometheus-kube-prometheus-alertmanager"
GRAFANA_DEPLOYMENT = "prometheus-grafana"
GRAFANA_PODS = {"app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "prometheus"}  # the subchart's pod labels
PROMETHEUS_PORT = 9090  # Prometheus' web port (queries, its own metrics)
RELOADER_PORT = 8080  # the operator's config-reloader sidecar: its metrics, scraped by the chart's self-monitor
GRAFANA_DATASOURCES = "prometheus-kube-prometheus-grafana-datasource"
NODE_EXPORTER_MONITOR = "prometheus-prometheus-node-exporter"
# The chart names its admission webhook configurations and their certificate Secret alike.
ADMISSION_SECRET = "prometheus-kube-prometheus-admission"
ADMISSION_WEBHOOKS = ADMISSION_SECRET

# Everything kube-prometheus-stack installs besides its CRDs, switched off for `prometheus-crds`.
# tests/observability checks this against the chart's values.yaml: every top-level `enabled: true`.
CRDS_ONLY_OFF = (
    "alertmanager", "coreDns", "grafana", "kubeApiServer", "kubeControllerManager", "kubeDns", "kubeEtcd",
    "kubeProxy", "kubeScheduler", "kubeStateMetrics", "kubelet", "kubernetesServiceMonitors", "nodeExporter", "prometheus",
    "prometheusOperator", "thanosRuler", "windowsMonitoring",
)


# How the cluster exposes its control plane's metrics (components.prometheus.control_plane), and
# so which of the chart's control-plane monitors and their alert rules can work:
# - kubeadm: kubeadm's defaults bind kube-scheduler (10259), kube-controller-manager (10257),
#   kube-proxy's metrics (10249) and etcd's (2381) to 127.0.0.1: Prometheus can reach none of them,
#   and the chart's KubeSchedulerDown, KubeControllerManagerDown, KubeProxyDown (and etcd's) would
#   fire from day one. Off; the API server and kubelets are still monitored.
# - kubeadm-exposed: the same, with those bind addresses opened to the node network (kubeadm's
#   ClusterConfiguration extraArgs bind-address: 0.0.0.0, KubeProxyConfiguration
#   metricsBindAddress: 0.0.0.0:10249, etcd listen-metrics-urls): all monitored.
# - managed: a provider runs the control plane (EKS, GKE, AKS): only the API server is reachable.
CONTROL_PLANE_MONITORS = ("kubeScheduler", "kubeControllerManager", "kubeProxy", "kubeEtcd")
CONTROL_PLANE_RULES = ("kubeSchedulerAlerting", "kubeSchedulerRecording", "kubeControllerManager", "kubeProxy", "etcd")
CONTROL_PLANE_SCRAPED = {"kubeadm": False, "kubeadm-exposed": True, "managed": False}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    control_plane: Literal["kubeadm", "kubeadm-exposed", "managed"] = "kubeadm"
    # Prometheus and Alertmanager each run this many replicas, one per system node (hard
    # anti-affinity): one node lost loses no metrics, no alert and no silence.
    replicas: Annotated[int, Field(ge=2, le=5)] = 2

    retention_days: Annotated[int, Field(ge=1, le=365)] = 15
    scrape_interval_seconds: Annotated[int, Field(ge=5, le=300)] = 30
    storage_class: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")] | None = None  # None: cluster.storage_class
    # A folder on the system nodes for Prometheus' TSDB, and one for Alertmanager's data: each gets a
    # local-path StorageClass of its own (forge.components.local_storage) instead of storage_class.
    data_path: DataPath | None = None
    alertmanager_data_path: DataPath | None = None
    alertmanager_volume_gib: Annotated[int, Field(ge=1, le=100)] = 2  # silences and the notification log
    # An existing Secret in `monitoring` with keys admin-user and admin-password; never the password.
    grafana_admin_secret: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)] = "grafana-admin"
    # An existing Secret in `monitoring` whose key alertmanager.yaml is Alertmanager's whole
    # configuration (receivers carry webhook URLs and keys). Until it exists the operator runs
    # Alertmanager with its built-in configuration, which sends nothing anywhere.
    # With `alerting`: the Secret holds only the receivers' keys (critical, warning, heartbeat), and
    # the configuration itself is generated (forge.observability.alerting).
    alertmanager_config_secret: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)] = "alertmanager-config"
    alerting: AlertingSettings | None = None
    # Grafana for browsers: Ingress and OIDC login (forge.components.grafana_access); none: reached by port-forward only.
    grafana: GrafanaAccess | None = None


class PrometheusCrds(Component):
    name = "prometheus-crds"
    namespace = NAMESPACE
    sync_wave = WAVE_MONITORING_CRDS
    chart = CHART
    release_name = "prometheus-crds"
    prune = False  # CRDs only: never pruned by Argo CD (see Component.prune)
    server_side_apply = True  # the Prometheus/Alertmanager CRDs exceed client-side apply's annotation limit
    crd_groups = ("monitoring.coreos.com",)
    cluster_kinds = (("apiextensions.k8s.io", "CustomResourceDefinition"),)

    def owned_namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        return ()  # it shares `prometheus`'s namespace and runs no pods

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        return {"crds": {"enabled": True}, "defaultRules": {"create": False},
                **{key: {"enabled": False} for key in CRDS_ONLY_OFF}}


class Prometheus(Component):
    name = "prometheus"
    namespace = NAMESPACE
    # The chart puts the Services that expose the control plane's metrics (scheduler, controller
    # manager, etcd, kube-proxy, CoreDNS) in kube-system, next to the pods they select.
    other_namespaces = ("kube-system",)
    sync_wave = WAVE_OBSERVABILITY
    # The admission webhook's patch Jobs, node-exporter's DaemonSet, Grafana, the Alertmanager config
    # Secret, and the operator's custom resources.
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("apps", "DaemonSet"), ("", "Secret"), ("batch", "Job"),
                        *kinds("monitoring.coreos.com", "Prometheus", "Alertmanager", "ServiceMonitor", "PodMonitor", "PrometheusRule"))
    chart = CHART
    server_side_apply = True  # dashboard ConfigMaps grow past client-side apply's annotation limit
    cluster_kinds = (
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    )
    # The chart documents configSecret only in a comment (values.yaml of 88.5.3); its Alertmanager
    # template reads it.
    declared_values = frozenset({"alertmanager.alertmanagerSpec.configSecret"})
    # So are the priority classes of the operator and the subcharts (each `# priorityClassName:`).
    declared_values |= {"prometheusOperator.priorityClassName", "prometheusOperator.admissionWebhooks.deployment.priorityClassName",
                        "grafana.priorityClassName",
                        "kube-state-metrics.priorityClassName", "prometheus-node-exporter.priorityClassName"}
    # Grafana's Ingress class is documented only as `# ingressClassName: nginx` (both values.yaml);
    # `grafana.ini` is rendered section by section into grafana.ini, whatever the sections: its
    # default lists five, and documents `server.root_url` and the `auth.*` sections in comments.
    declared_values |= {"grafana.ingress.ingressClassName", "grafana.grafana.ini.server.root_url", "grafana.grafana.ini.auth"}
    Settings = Settings
    # Set from the inventory on every cluster, whatever it equals (control_plane: the chart's defaults
    # are on for kubeadm-exposed).
    inventory_values = frozenset({*(f"{k}.enabled" for k in CONTROL_PLANE_MONITORS),
                                  *(f"defaultRules.rules.{k}" for k in CONTROL_PLANE_RULES)})
    # The chart's admission-webhook patch Job writes the CA it generated into both webhook
    # configurations and switches their failurePolicy to the chart's value once the CA is in
    # (prometheus-community/helm-charts issues 4914, 2516): Argo CD must leave exactly those alone.
    ignore_differences = tuple(
        {"group": "admissionregistration.k8s.io", "kind": kind, "name": ADMISSION_WEBHOOKS,
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle", ".webhooks[]?.failurePolicy"]}
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))

    def owned_namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        return (self.namespace,)  # kube-system holds Services the chart adds, not ours to isolate

    def chart_kinds(self, cluster: ClusterModel) -> tuple[tuple[str, str], ...]:
        return (*self.namespaced_kinds, *grafana_access.kinds(self.settings(cluster).grafana))

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # Alertmanager, Grafana, kube-state-metrics: from inside monitoring (node-exporter is on the
        # host network). Prometheus (isolated_pods): from Grafana and its replicas (self-scrape) only.
        out = [network.webhook([WEBHOOK_PORT]),  # only the operator listens on it
               network.Allow("prometheus-from-grafana", (PROMETHEUS_PORT,), from_namespaces=(NAMESPACE,),
                             from_pods=GRAFANA_PODS, to_pods=network.PROMETHEUS_PODS),
               network.Allow("prometheus-self-scrape", (PROMETHEUS_PORT, RELOADER_PORT), from_namespaces=(NAMESPACE,),
                             from_pods=network.PROMETHEUS_PODS, to_pods=network.PROMETHEUS_PODS)]
        if self.settings(cluster).grafana is not None:
            out.append(network.Allow("grafana-from-ingress", (grafana_access.PORT,),
                                     from_namespaces=(cluster.settings.ingress_namespace,), to_pods=GRAFANA_PODS))
        return tuple(out)

    def isolated_pods(self, cluster: ClusterModel) -> dict[str, str]:
        return dict(network.PROMETHEUS_PODS)

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        s: Settings = self.settings(cluster)
        alertmanager = SecretUse("alertmanager", s.alertmanager_config_secret, (self.namespace,))
        if s.alerting:  # the generated configuration around the receivers' keys (forge.observability.alerting)
            config = yaml.safe_dump(alertmanager_config(s.alerting, rule_groups(cluster)), sort_keys=False, width=1000)
            alertmanager = SecretUse("alertmanager-keys", s.alertmanager_config_secret, (self.namespace,), role="alertmanager",
                                     data=(("alertmanager.yaml", config),))
        return [SecretUse("grafana-admin", s.grafana_admin_secret, (self.namespace,)), alertmanager,
                *grafana_access.secret_uses(s.grafana, self.namespace)]

    def produced_secrets(self, cluster: ClusterModel) -> dict[str, str]:
        return {ADMISSION_SECRET: "the chart's admission-create Job writes the operator webhook's certificate at install",
                **grafana_access.produced_by_issuer(self.settings(cluster).grafana)}

    def _plan(self, cluster: ClusterModel) -> tuple[Settings, PrometheusSize, dict[str, Any]]:
        """The settings, the size, and the volume claim of Prometheus' storage."""
        s: Settings = self.settings(cluster)
        size = prometheus_size(node_series=sum(series_of(n) for n in cluster.nodes), gpus=cluster.gpu_count,
                               scrape_interval_s=s.scrape_interval_seconds, retention_days=s.retention_days)
        claim: dict[str, Any] = {"storageClassName": chosen_class(cluster, s.storage_class, s.data_path, "prometheus"),
                                 "accessModes": ["ReadWriteOnce"],
                                 "resources": {"requests": {"storage": f"{size.volume_gib}Gi"}}}
        return s, size, claim

    @staticmethod
    def _alertmanager_claim(cluster: ClusterModel, s: Settings) -> dict[str, Any]:
        return {"storageClassName": chosen_class(cluster, s.storage_class, s.alertmanager_data_path, "alertmanager"),
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{s.alertmanager_volume_gib}Gi"}}}

    def check(self, loaded, settings: Settings, given) -> Iterator:
        at = ("components", self.name)
        yield from conflict(loaded, at + ("data_path",), settings.storage_class, settings.data_path, "storage_class", "prometheus")
        yield from conflict(loaded, at + ("alertmanager_data_path",), settings.storage_class, settings.alertmanager_data_path,
                            "storage_class", "alertmanager")
        if not (settings.data_path and settings.alertmanager_data_path):
            yield from storage_class_problem(loaded, settings.storage_class, self.name, "Prometheus and Alertmanager")
        # On a cloud cluster the system pool's nodes (its max_count) hold the controllers.
        system = ([n.name for n in loaded.inventory.nodes if "system" in n.roles]
                  + [f"{p.name}-{i}" for p in loaded.inventory.node_pools if p.role == "system" for i in range(p.max_count)])
        if settings.replicas > len(system):
            yield loaded.problem(("components", self.name, "replicas"),
                                 f"{settings.replicas} replicas of Prometheus and Alertmanager need as many nodes with role "
                                 f"'system' (one each); the inventory has {len(system)}: lower replicas or add system nodes")
        # Grafana's defaults come from Flyte's block; one that is not valid reports its own problems.
        if settings.grafana is not None and not ("flyte" in given and given["flyte"] is None):
            yield from grafana_access.problems(settings.grafana, given.get("flyte"), loaded.problem, at + ("grafana",))

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        s, size, claim = self._plan(cluster)
        system = {"nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,  # never pre-empted
                  "priorityClassName": SYSTEM_CLUSTER_CRITICAL}
        interval = f"{s.scrape_interval_seconds}s"
        spread = {"replicas": s.replicas, "podAntiAffinity": "hard", "podAntiAffinityTopologyKey": "kubernetes.io/hostname"}
        return plain({
            "crds": {"enabled": False},  # owned by the prometheus-crds Application
            **control_plane_values(s.control_plane),
            "prometheusOperator": {**system, "admissionWebhooks": {"deployment": dict(system), "patch": dict(system)}},
            "prometheus": {
                "prometheusSpec": {
                    **system,
                    **spread,
                    "scrapeInterval": interval,
                    "evaluationInterval": interval,
                    "retention": f"{s.retention_days}d",
                    "retentionSize": f"{size.retention_size_gb}GB",
                    "storageSpec": {"volumeClaimTemplate": {"spec": claim}},
                    "resources": {"requests": {"cpu": "1", "memory": f"{size.memory_gib}Gi"}},
                    # Alerts, federation and remote writes say which fleet they come from.
                    "externalLabels": {"cluster": cluster.name},
                    # Every ServiceMonitor/PodMonitor/rule in the cluster, whichever chart made it.
                    "serviceMonitorSelectorNilUsesHelmValues": False,
                    "podMonitorSelectorNilUsesHelmValues": False,
                    "ruleSelectorNilUsesHelmValues": False,
                    "probeSelectorNilUsesHelmValues": False,
                    "scrapeConfigSelectorNilUsesHelmValues": False,
                },
            },
            "alertmanager": {"enabled": True, "alertmanagerSpec": {
                **system,
                **spread,  # the replicas gossip: one notification per alert
                # The chart would otherwise render its own config Secret, with the config in Git.
                "useExistingSecret": True,
                "configSecret": s.alertmanager_config_secret,
                # Silences and the notification log survive a restart (the chart keeps them in an emptyDir).
                "storage": {"volumeClaimTemplate": {"spec": self._alertmanager_claim(cluster, s)}},
            }},
            "grafana": self._grafana(s, system, cluster.component_settings.get("flyte")),
            # The driver upgrade state of each node (and the node-test labels) on kube_node_labels,
            # for the node-lifecycle alerts (forge.observability.lifecycle) and to keep the GPU
            # alerts quiet on a node being upgraded (forge.observability.platform_rules).
            "kube-state-metrics": {**system, "metricLabelsAllowlist": node_label_allowlist(cluster)},
            "prometheus-node-exporter": {
                "priorityClassName": SYSTEM_NODE_CRITICAL,
                "tolerations": cluster.all_node_tolerations,
                "prometheus": {"monitor": {"relabelings": [m.NODE_RELABELING]}},
            },
        })

    @staticmethod
    def _grafana(s: Settings, system: dict[str, Any], flyte: Any) -> dict[str, Any]:
        return {
            "enabled": True,
            **system,
            # Only from an existing Secret: with admin.existingSecret set the chart renders no
            # admin Secret of its own, and no adminPassword value exists to fall back on.
            "admin": {"existingSecret": s.grafana_admin_secret, "userKey": "admin-user", "passwordKey": "admin-password"},
            # No `testFramework` here: grafana 12.11.1 as packaged has no test Pod (its .helmignore
            # drops tests/, templates/tests included), so no template reads the key.
            "additionalDataSources": [{
                "name": "Loki", "uid": "loki", "type": "loki", "access": "proxy", "url": LOKI_URL,
                "editable": False, "jsonData": {"maxLines": 5000},
            }],
            # Ingress, login and the OIDC client secret (forge.components.grafana_access); never a Prometheus Ingress.
            **(grafana_access.chart_values(s.grafana, flyte) if s.grafana else {}),
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """What the inventory asks of the objects kube-prometheus-stack renders from our values."""
        s, size, claim = self._plan(cluster)
        interval = f"{s.scrape_interval_seconds}s"
        prom = ("Prometheus", PROMETHEUS_CR)
        out = [
            Expected(*prom, "spec.externalLabels", {"cluster": cluster.name}),
            Expected(*prom, "spec.scrapeInterval", interval),
            Expected(*prom, "spec.evaluationInterval", interval),
            Expected(*prom, "spec.retention", f"{s.retention_days}d"),
            Expected(*prom, "spec.retentionSize", f"{size.retention_size_gb}GB"),
            Expected(*prom, "spec.storage.volumeClaimTemplate.spec", claim),
            Expected(*prom, "spec.resources.requests.memory", f"{size.memory_gib}Gi"),
            Expected(*prom, "spec.nodeSelector", cluster.system_node_selector),
            Expected(*prom, "spec.priorityClassName", SYSTEM_CLUSTER_CRITICAL),
            Expected(*prom, "spec.replicas", s.replicas),
            Expected("Alertmanager", ALERTMANAGER_CR, "spec.replicas", s.replicas),
            Expected("Alertmanager", ALERTMANAGER_CR, "spec.priorityClassName", SYSTEM_CLUSTER_CRITICAL),
            # `*SelectorNilUsesHelmValues: false` renders empty selectors: every object, every
            # namespace. (True would select only objects labelled release=prometheus.)
            *(Expected(*prom, f"spec.{kind}{which}", {})
              for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig")
              for which in ("Selector", "NamespaceSelector")),
            Expected("Alertmanager", ALERTMANAGER_CR, "spec.configSecret", s.alertmanager_config_secret),
            Expected("Alertmanager", ALERTMANAGER_CR, "spec.storage.volumeClaimTemplate.spec", self._alertmanager_claim(cluster, s)),
            Expected("Alertmanager", ALERTMANAGER_CR, "spec.nodeSelector", cluster.system_node_selector),
        ]
        grafana = ("spec", "template", "spec", "containers", "name=grafana", "env")
        for env, key in (("GF_SECURITY_ADMIN_USER", "admin-user"), ("GF_SECURITY_ADMIN_PASSWORD", "admin-password")):
            out.append(Expected("Deployment", GRAFANA_DEPLOYMENT, (*grafana, f"name={env}"),
                                {"name": env, "valueFrom": {"secretKeyRef": {"name": s.grafana_admin_secret, "key": key}}}))
        out.append(Expected("ConfigMap", GRAFANA_DATASOURCES,
                            ("data", "datasource.yaml", "datasources", "name=Loki", "url"), LOKI_URL))
        out += grafana_access.expected(s.grafana, cluster.component_settings.get("flyte"), GRAFANA_DEPLOYMENT, GRAFANA_PODS)
        out.append(Expected("ServiceMonitor", NODE_EXPORTER_MONITOR, "spec.endpoints.0.relabelings", [m.NODE_RELABELING]))
        return out

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        rule = prometheus_rule(cluster, NAMESPACE)
        s: Settings = self.settings(cluster)
        if s.alerting:
            rule["spec"]["groups"] = with_runbook_links(rule["spec"]["groups"], s.alerting.runbook_base_url)
        return [
            custom_resource(rule),
            *(custom_resource(pm) for pm in pod_monitors(cluster)),
            *(dashboard_configmap(name, NAMESPACE, board) for name, board in dashboards(cluster).items()),
            *local_storage.objects({"prometheus": s.data_path, "alertmanager": s.alertmanager_data_path}),
        ]


def control_plane_values(control_plane: str) -> dict[str, Any]:
    """The chart's control-plane monitors and their rules, as the cluster exposes them (CONTROL_PLANE_SCRAPED)."""
    scraped = CONTROL_PLANE_SCRAPED[control_plane]
    return {**{key: {"enabled": scraped} for key in CONTROL_PLANE_MONITORS},
            "defaultRules": {"rules": {key: scraped for key in CONTROL_PLANE_RULES}}}


def pod_monitors(cluster: ClusterModel) -> list[dict[str, Any]]:
    """Scrape objects for components whose charts ship none (assumptions in forge.observability.metrics),
    for those the cluster enables (no Alluxio monitors on a cluster without Alluxio, as its rules).

    The pods name no port, so endpoints give the number as `targetPort`: deprecated in favour of
    `portNumber` but still honoured by operator v0.93, and known to every PodMonitor CRD version
    (`forge validate` may check against the older copy Loki's chart data carries)."""
    def monitor(name: str, namespaces: dict[str, Any], labels: dict[str, Any], endpoints: list[dict[str, Any]]) -> dict[str, Any]:
        for endpoint in endpoints:
            endpoint["relabelings"] = [m.NODE_RELABELING]
        return {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PodMonitor",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"namespaceSelector": namespaces, "selector": labels, "podMetricsEndpoints": endpoints},
        }

    # Declared by the components that run the pods.
    by_component = {"alluxio": alluxio.SCRAPES, "flyte": flyte.SCRAPES, "external-secrets": external_secrets.SCRAPES}
    scrapes = [s for name, declared in by_component.items() if name in cluster.component_settings for s in declared]
    return [
        *(monitor(s.name, {"matchNames": [s.namespace]}, s.selector, [{"targetPort": s.port, "path": s.path}]) for s in scrapes),
        # No monitor for the DOCA Telemetry Service: forge does not deploy it (NicClusterPolicy
        # docaTelemetryService), since node-exporter's infiniband and netclass collectors already
        # give the port and RDMA counters the alerts use (README).
    ]

"""Loki: logs of every node and pod, stored in the cluster's S3 bucket.

* Storage: the inventory's `cluster.s3.buckets.loki` bucket at `cluster.s3.endpoint`; the
  credentials come from the existing Secret `cluster.s3.credentials_secret` (in namespace `loki`)
  as environment variables, which Loki substitutes into its config (`-config.expand-env=true`):
  the values and the rendered config only ever hold `${AWS_ACCESS_KEY_ID}`.
* Retention: `components.loki.retention_days`, enforced by the compactor.
* Deployment mode and replicas: from the estimated daily log volume (forge.observability.sizing).
  Loki runs on the system (control-plane) nodes; its targets keep one replica per node (the
  chart's hard anti-affinity), so a layout needing more replicas than there are system nodes is
  an error here rather than Pending pods later.
* `expected_in_hydrated`: bucket, endpoint, retention and replication in the config.yaml the
  chart renders (it builds it with `tpl` from a template in its values.yaml), and each target's
  workload with its replicas, the credentials Secret and the system nodeSelector.
The log shipper (Grafana Alloy) is its own component, `alloy`.
"""
from __future__ import annotations

from typing import Annotated, Any, Iterator

from pydantic import BaseModel, ConfigDict, Field

from forge.components import network
from forge.components import local_storage
from forge.components.local_storage import DataPath, chosen_class, conflict
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_OBSERVABILITY, Component, Expected, storage_class_problem
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import CONTROL_PLANE_LABEL, ClusterModel
from forge.observability import plain
from forge.model.secrets import SecretUse
from forge.observability.sizing import LOKI_TARGETS, LokiLayout, loki_daily_gb, loki_layout

NAMESPACE = "loki"
BUCKET_KEY = "loki"  # the key in cluster.s3.buckets
GATEWAY_URL = "http://loki-gateway.loki.svc.cluster.local"  # release "loki": service loki-gateway, port 80
GATEWAY_PORT = 8080  # the chart's gateway.containerPort (its Service's port 80 targets it)
HTTP_PORT = 3100  # Loki's http_listen_port: push, query and /metrics on every target
PUSH_URL = f"{GATEWAY_URL}/loki/api/v1/push"
SCHEMA_FROM = "2026-01-01"  # first day of the v13/TSDB schema; a new period is appended, never edited
# What loki 7.3.0 names the objects of release "loki" (checked by expected_in_hydrated): the
# ConfigMap holding config.yaml, and the workload of each target (sizing.LOKI_TARGETS).
CONFIG_OBJECT = "loki"
WORKLOADS: dict[str, tuple[str, str]] = {
    "singleBinary": ("StatefulSet", "loki"),
    "write": ("StatefulSet", "loki-write"),
    "read": ("Deployment", "loki-read"),
    "backend": ("StatefulSet", "loki-backend"),
    "ingester": ("StatefulSet", "loki-ingester"),
    "distributor": ("Deployment", "loki-distributor"),
    "querier": ("Deployment", "loki-querier"),
    "queryFrontend": ("Deployment", "loki-query-frontend"),
    "queryScheduler": ("Deployment", "loki-query-scheduler"),
    "indexGateway": ("StatefulSet", "loki-index-gateway"),
    "compactor": ("StatefulSet", "loki-compactor"),
}


# How each stateful target of loki 7.3.0 takes its volume: `class` (persistence.storageClass; the
# chart claims it by default: singleBinary, write, backend), `enable` (off by default: enabled and
# the class), `claims` (off by default, a list of claims: enabled and one claim `data` in the class,
# the chart's default claim otherwise). Distributed's ingesters keep their write-ahead log, its
# index gateways and compactor their index, on a volume like the other modes' targets do.
PERSISTENCE = {"singleBinary": "class", "write": "class", "backend": "class",
               "ingester": "claims", "indexGateway": "enable", "compactor": "claims"}
CLAIM = {"name": "data", "accessModes": ["ReadWriteOnce"], "size": "10Gi"}  # the chart's default claim
# The targets global.extraArgs, global.extraEnv and global.extraEnvFrom reach (loki 7.3.0's
# values.yaml, their `scope:` comments): not the single binary, whose StatefulSet reads only its
# own singleBinary.extraArgs/extraEnvFrom. A target outside gets the S3 credentials and
# -config.expand-env itself, or Loki starts without them and writes nothing to the bucket.
GLOBAL_SCOPE = frozenset({"backend", "compactor", "distributor", "indexGateway", "ingester", "querier", "queryFrontend",
                          "queryScheduler", "read", "write"})
EXPAND_ENV = "-config.expand-env=true"

CACHES = ("loki-chunks-cache", "loki-results-cache")  # the chart's memcached StatefulSets for release loki
S3_ROLE = "s3-loki"  # its own S3 credential in the secret store: the log bucket only (docs/security.md)

class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    # Measured GB/day once known; until then forge estimates it from the node counts.
    daily_log_gb: Annotated[float, Field(gt=0)] | None = None
    storage_class: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")] | None = None  # None: cluster.storage_class
    # A folder on the system nodes for the targets' volumes: a local-path StorageClass of its own
    # (forge.components.local_storage) instead of storage_class.
    data_path: DataPath | None = None


# The namespace warns at Pod Security `restricted`, which needs a seccomp profile; the chart 7.3.0
# sets none. Pod level, merged into the chart's own pod security contexts (loki, gateway,
# memcached), so every container (sidecars and the memcached exporter included) gets it.
POD_SECCOMP = {"seccompProfile": {"type": "RuntimeDefault"}}

def env_from(cluster: ClusterModel) -> list[dict[str, Any]]:
    """The S3 credentials as environment variables, which Loki expands into its config."""
    return [{"secretRef": {"name": cluster.settings.s3.credentials_secret}}]


def target_values(cluster: ClusterModel, target: str, replicas: int, system: dict[str, Any],
                  storage_class: str) -> dict[str, Any]:
    """A target of the chosen mode: its replicas on the system nodes, its volume in the chosen
    class, and the credentials where the chart's globals do not reach it (GLOBAL_SCOPE)."""
    values: dict[str, Any] = {"replicas": replicas, **system}
    kind = PERSISTENCE.get(target)
    if kind == "class":
        values["persistence"] = {"storageClass": storage_class}
    elif kind == "enable":
        values["persistence"] = {"enabled": True, "storageClass": storage_class}
    elif kind == "claims":
        values["persistence"] = {"enabled": True, "claims": [{**CLAIM, "storageClass": storage_class}]}
    if target not in GLOBAL_SCOPE:
        values |= {"extraArgs": [EXPAND_ENV], "extraEnvFrom": env_from(cluster)}
    return values


class Loki(Component):
    name = "loki"
    namespace = NAMESPACE
    sync_wave = WAVE_OBSERVABILITY
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("apps", "StatefulSet"), ("", "Secret"),
                        ("policy", "PodDisruptionBudget"))
    chart = "loki"
    cluster_kinds = (
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    )
    # bucketNames is documented only in the chart's comments; limits_config passes through to Loki's
    # own configuration, where retention_period is a documented limit. The pod security contexts
    # are Kubernetes PodSecurityContexts the chart passes whole through toYaml: any of its fields.
    declared_values = frozenset({"loki.storage.bucketNames", "loki.limits_config.retention_period",
                                 *(f"{key}.podSecurityContext.seccompProfile" for key in ("loki", "gateway", "memcached"))})
    # The layout follows the log volume: on every cluster, also where it matches the chart's default.
    inventory_values = frozenset({"deploymentMode", "loki.commonConfig.replication_factor",
                                  *(f"{target}.replicas" for targets in LOKI_TARGETS.values() for target in targets)})
    Settings = Settings

    def check(self, loaded, settings: Settings, given) -> Iterator:
        """A bucket to write to, and enough system nodes for the replicas the volume needs."""
        inv = loaded.inventory
        at = ("components", self.name)
        yield from conflict(loaded, at + ("data_path",), settings.storage_class, settings.data_path, "storage_class", self.name)
        if not settings.data_path:
            yield from storage_class_problem(loaded, settings.storage_class, self.name, "the write-ahead logs and index of its targets")
        if BUCKET_KEY not in inv.cluster.s3.buckets:
            have = ", ".join(sorted(inv.cluster.s3.buckets)) or "none"
            yield loaded.problem(("cluster", "s3", "buckets"), f"no '{BUCKET_KEY}' bucket: Loki stores its chunks there (have: {have})")
        gpu_nodes = sum(1 for n in inv.nodes if n.profile in inv.profiles and inv.profiles[n.profile].gpu)
        gpu_nodes += sum(p.max_count for p in inv.node_pools if p.role == "gpu")  # a cloud's pools, at their maximum
        all_nodes = len(inv.nodes) + sum(p.max_count for p in inv.node_pools)
        daily = settings.daily_log_gb or loki_daily_gb(gpu_nodes=gpu_nodes, other_nodes=all_nodes - gpu_nodes)
        layout = loki_layout(daily)
        system_nodes = sum(1 for n in inv.nodes if "control-plane" in n.roles)
        system_nodes += sum(p.max_count for p in inv.node_pools if p.role == "system")
        over = [f"{replicas} {target}" for target, replicas in layout.replicas.items() if replicas > system_nodes]
        if over:
            yield loaded.problem(at, f"the {layout.mode} layout for {daily:g} GB/day of logs needs {' and '.join(over)} "
                                     f"replicas, one per node, but the cluster has {system_nodes} control-plane nodes; "
                                     "add control-plane nodes or set daily_log_gb to the measured volume")

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # Alloy pushes through the gateway; Grafana (in monitoring) queries through it.
        return (network.Allow("log-clients", (GATEWAY_PORT, HTTP_PORT), from_components=("alloy", "prometheus")),
                network.scrape([HTTP_PORT]))

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        return [SecretUse("s3", cluster.settings.s3.credentials_secret, (self.namespace,), role=S3_ROLE)]

    def _layout(self, cluster: ClusterModel) -> tuple[Settings, LokiLayout]:
        s: Settings = self.settings(cluster)
        gpu_nodes = len(cluster.gpu_nodes)
        return s, loki_layout(s.daily_log_gb or loki_daily_gb(gpu_nodes=gpu_nodes, other_nodes=len(cluster.nodes) - gpu_nodes))

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return local_storage.objects({self.name: self.settings(cluster).data_path})

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        s, layout = self._layout(cluster)
        s3 = cluster.settings.s3
        bucket = s3.buckets[BUCKET_KEY]  # check() made sure it exists
        system = {"nodeSelector": {CONTROL_PLANE_LABEL: ""}, "tolerations": cluster.system_tolerations}
        values: dict[str, Any] = {
            "deploymentMode": layout.mode,
            "global": {
                "priorityClassName": SYSTEM_CLUSTER_CRITICAL,  # every pod of the chart: never pre-empted by workloads
                "extraArgs": [EXPAND_ENV],
                "extraEnvFrom": env_from(cluster),
            },
            "loki": {
                "auth_enabled": False,  # one tenant per cluster; the cluster label tells fleets apart
                "commonConfig": {"replication_factor": layout.replication_factor},
                "schemaConfig": {"configs": [{
                    "from": SCHEMA_FROM, "store": "tsdb", "object_store": "s3", "schema": "v13",
                    "index": {"prefix": "loki_index_", "period": "24h"},
                }]},
                "storage": {
                    "type": "s3",
                    "bucketNames": {"chunks": bucket, "ruler": bucket},
                    "s3": {
                        "endpoint": s3.endpoint,
                        "region": s3.region,
                        # Expanded by Loki from the Secret's environment variables at start-up.
                        "accessKeyId": "${AWS_ACCESS_KEY_ID}",
                        "secretAccessKey": "${AWS_SECRET_ACCESS_KEY}",
                    },
                },
                "limits_config": {"retention_period": f"{s.retention_days * 24}h"},
                "compactor": {"retention_enabled": True, "delete_request_store": "s3"},
                "podSecurityContext": POD_SECCOMP,  # read, write and backend pods
            },
            "gateway": {**system, "podSecurityContext": POD_SECCOMP},
            "memcached": {"podSecurityContext": POD_SECCOMP},  # both caches' pods
            # The memcached caches ignore global.priorityClassName (chart 7.3.0): their own value.
            "chunksCache": {**system, "priorityClassName": SYSTEM_CLUSTER_CRITICAL},
            "resultsCache": {**system, "priorityClassName": SYSTEM_CLUSTER_CRITICAL},
            # The canary would need its own DaemonSet on every node; Alloy's metrics cover shipping.
            "lokiCanary": {"enabled": False},
            "test": {"enabled": False},
        }
        storage_class = chosen_class(cluster, s.storage_class, s.data_path, self.name)
        # Every target of every mode: ours get their replicas, the others 0 (the chart refuses mixes).
        for mode, targets in LOKI_TARGETS.items():
            for target in targets:
                values[target] = (target_values(cluster, target, layout.replicas[target], system, storage_class)
                                  if mode == layout.mode else {"replicas": 0})
        if layout.mode == "Distributed":
            for target, replicas in layout.replicas.items():
                if replicas > 1:
                    # The chart refuses to render a Distributed target's PodDisruptionBudget with more
                    # than one replica unless maxUnavailable is given (loki 7.3.0).
                    values[target]["maxUnavailable"] = 1
            # One ingester StatefulSet on the system nodes, one replica per node like every other
            # target: the chart's default splits ingesters into three zone StatefulSets whose own
            # (empty) zone nodeSelectors replace ours.
            values["ingester"]["zoneAwareReplication"] = {"enabled": False}
        return plain(values)

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """Loki's configuration as the chart renders it (from `tpl .Values.loki.config`, a template
        in its values.yaml), and one workload per target of the chosen mode with its replicas."""
        s, layout = self._layout(cluster)
        s3 = cluster.settings.s3
        config = ("ConfigMap", CONFIG_OBJECT, ("data", "config.yaml"))
        out = [
            Expected(config[0], config[1], (*config[2], *path), value) for path, value in (
                (("auth_enabled",), False),
                (("common", "replication_factor"), layout.replication_factor),
                (("common", "storage", "s3", "bucketnames"), s3.buckets[BUCKET_KEY]),
                (("common", "storage", "s3", "endpoint"), s3.endpoint),
                (("common", "storage", "s3", "region"), s3.region),
                (("common", "storage", "s3", "access_key_id"), "${AWS_ACCESS_KEY_ID}"),
                (("common", "storage", "s3", "secret_access_key"), "${AWS_SECRET_ACCESS_KEY}"),
                (("schema_config", "configs", "0", "from"), SCHEMA_FROM),
                (("schema_config", "configs", "0", "object_store"), "s3"),
                (("limits_config", "retention_period"), f"{s.retention_days * 24}h"),
                (("compactor", "retention_enabled"), True),
            )
        ]
        out += [Expected("StatefulSet", name, "spec.template.spec.priorityClassName", SYSTEM_CLUSTER_CRITICAL)
                for name in CACHES]
        for target, replicas in layout.replicas.items():
            kind, name = WORKLOADS[target]
            out.append(Expected(kind, name, "spec.replicas", replicas))
            container = ("spec", "template", "spec", "containers", "name=loki")
            out.append(Expected(kind, name, (*container, "envFrom"), [{"secretRef": {"name": s3.credentials_secret}}]))
            out.append(Expected(kind, name, "spec.template.spec.nodeSelector", {CONTROL_PLANE_LABEL: ""}))
        return out

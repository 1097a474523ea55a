"""Flyte (chart flyte-binary v1.16.8): the ML team's workflow scheduler, with plugins for plain
containers, k8s arrays (map tasks), PyTorch and MPI (training-operator) and Ray (KubeRay).

Why flyte-binary and not flyte-core: one Deployment holds admin, propeller, data catalog and the
scheduler, configured in one place (`configuration.inline`); flyte-core's per-service deployments
pay off for multi-cluster execution or when propeller must scale apart from admin, neither of
which two single clusters of 80-144 GPUs need. Its default image tag is `latest`: pinned below.

From the inventory (`components.flyte`):
- projects and domains; each project-domain gets a namespace `<project>-<domain>` (Flyte's
  default mapping) with a ResourceQuota, a LimitRange and a default PodTemplate. These are Flyte's
  per project-domain "cluster resource templates", rendered by forge rather than by Flyte's
  cluster-resource controller (switched off): that controller can vary values only per domain
  from its configuration (per project only through Flyte Admin's database), while the quotas
  here differ per project and per domain, and as plain objects they are diffable, validated and
  pruned like everything else. Arithmetic in `quotas()`.
- a PriorityClass per project (and a default), applied through the PodTemplate `forge-default`
  that propeller bases every pod on (`default-pod-template-name`): PyTorchJob, MPIJob and RayJob
  pods included.
- storage: metadata and raw data in the cluster's `flyte` bucket, reached through Alluxio's S3
  endpoint; credentials by reference to the cluster's S3 Secret.
- task log links to Grafana Explore over Loki (issue 5's stack: Grafana in `monitoring`, Loki in
  `loki`, datasource uid `loki`, stream labels namespace/pod/container). Container, k8s-array,
  PyTorch and MPI tasks take them from `plugins.logs` (the chart's `configuration.logging`); the
  Ray plugin reads only its own `plugins.ray.logs` and knows no pod name, so its link selects the
  RayCluster's pods by name prefix (`<cluster>-head-…`, `<cluster>-<group>-worker-…`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Iterator
from urllib.parse import quote

from pydantic import Field

from forge.components import alluxio
from forge.components.base import WAVE_WORKLOADS, Component, Contains, Expected, custom_resource
from forge.capacity import Capacity, capacity, quantity
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL, priority_class_names
from forge.inventory.schema import Name, PositiveInt, Strict
from forge.model import ClusterModel
from forge.queues import FLYTE_PROJECT_LABEL, LOCAL_QUEUE, QUEUE_NAME_LABEL, KueueSettings, kueue_settings, local_queue, project_quotas

IMAGE = "cr.flyte.org/flyteorg/flyte-binary-release"  # what Flyte's release build pins the chart to
IMAGE_TAG = "v1.16.8"
# Placeholder image of the PodTemplate's container named `default`: propeller merges that
# container's settings into task containers but never runs its image. Pinned all the same.
TEMPLATE_IMAGE = "registry.k8s.io/pause:3.10"
POD_TEMPLATE = "forge-default"
RELEASE = "flyte"
FULLNAME = "flyte"  # services flyte-http (8088), flyte-grpc (8089), flyte-webhook
METRICS_PORT = 10254  # propeller's profiler port: /metrics in flyte-binary
DB_PASSWORD_DIR = "/etc/flyte/db"
PSA_LEVEL = "baseline"
PLUGINS = ["container", "sidecar", "k8s-array", "pytorch", "mpi", "ray"]
# Task type -> plugin, added to the chart's defaults (container, sidecar, container_array -> k8s-array).
TASK_TYPES = {"pytorch": "pytorch", "mpi": "mpi", "ray": "ray"}
CHART_TASK_TYPES = {"container": "container", "sidecar": "sidecar", "container_array": "k8s-array"}
OPERATOR_RULES = [  # what the PyTorch, MPI and Ray plugins create and watch
    {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs", "mpijobs"],
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayjobs", "rayclusters"],
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
]


class DomainSpec(Strict):
    name: Name
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of each project's share


class ProjectSpec(Strict):
    name: Name
    description: str = ""
    share_percent: Annotated[int, Field(ge=1, le=100)]  # of the cluster
    priority_class: Name  # one of components.scheduling.priority_classes


class Database(Strict):
    host: Annotated[str, Field(min_length=1)]
    port: PositiveInt = 5432
    dbname: Name
    username: Name
    password_secret: Name  # an existing Secret in namespace flyte, key `password`
    options: str = "sslmode=require"


class TaskDefaults(Strict):
    """What a task container gets when it asks for nothing (LimitRange and Flyte defaults)."""

    cpu: PositiveInt = 1
    memory_gib: PositiveInt = 4


class FlyteSettings(Strict):
    domains: Annotated[list[DomainSpec], Field(min_length=1)]
    projects: Annotated[list[ProjectSpec], Field(min_length=1)]
    default_priority_class: Name
    database: Database
    grafana_url: Annotated[str, Field(pattern=r"^https?://[^\s/]+(/\S*)?$")]  # as browsers reach it
    loki_datasource_uid: Name = "loki"
    task_defaults: TaskDefaults = TaskDefaults()


# ---- quota arithmetic ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Quota:
    """A project-domain namespace's ResourceQuota: resource -> amount (forge.capacity's units)."""

    project: str
    domain: str
    hard: dict[str, int]

    @property
    def namespace(self) -> str:
        return namespace_for(self.project, self.domain)


def namespace_for(project: str, domain: str) -> str:
    return f"{project}-{domain}"  # Flyte's default namespace_mapping: {{ project }}-{{ domain }}


def quotas(cap: Capacity, settings: FlyteSettings, kueue: KueueSettings | None = None) -> list[Quota]:
    """Per resource of the capacity (whole GPUs, each MIG resource, CPUs, GiB, RDMA):

    - without Kueue: floor(capacity x project% x domain% / 10000). With project shares and domain
      shares each adding up to at most 100 % (the inventory check), all namespaces together get
      at most the capacity;
    - with Kueue (forge.queues): a hard ceiling, the project's reach (nominal + borrowing limit
      over every flavor), the same for each of its domains. Kueue never admits more into one of
      the project's namespaces, so the ceiling never refuses a pod Kueue admitted (a half-started
      job); it still bounds pods that bypass Kueue.
    """
    reach = {q.project: q for q in project_quotas(cap, [(p.name, p.share_percent) for p in settings.projects], kueue)} if kueue else {}
    out = []
    for p in settings.projects:
        for d in settings.domains:
            share = p.share_percent * d.share_percent
            hard = ({r: reach[p.name].reach(r) for r in cap.resources} if kueue
                    else {r: cap.total(r) * share // 10_000 for r in cap.resources})
            out.append(Quota(p.name, d.name, hard))
    return out


# ---- the component ------------------------------------------------------------------------------

class Flyte(Component):
    name = "flyte"
    namespace = "flyte"
    sync_wave = WAVE_WORKLOADS  # after training-operator and KubeRay (WAVE_OPERATORS) and Alluxio
    chart = "flyte-binary"
    release_name = RELEASE
    server_side_apply = True  # the FlyteWorkflow CRD (configuration.propeller.createCRDs: false) is large
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    )
    # deployment.resources is documented only in comments (values.yaml of v1.16.8); the task type
    # -> plugin map is free-form Flyte configuration (the default shows the built-in types only).
    declared_values = frozenset({"deployment.resources", "enabled_plugins.tasks.task-plugins.default-for-task-types"})
    # Set on purpose although they may equal the chart's defaults: the database from the
    # inventory, and the S3 storage with credentials from the AWS SDK's chain (the Secret's env).
    inventory_values = frozenset({"configuration.database", "configuration.storage.provider",
                                  "configuration.storage.providerConfig.s3.authType"})
    Settings = FlyteSettings

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        s: FlyteSettings = self.settings(cluster)
        return (self.namespace, *(namespace_for(p.name, d.name) for p in s.projects for d in s.domains))

    def check(self, loaded, settings: FlyteSettings) -> Iterator:
        at = ("components", self.name)
        for field, items in (("projects", settings.projects), ("domains", settings.domains)):
            total = sum(x.share_percent for x in items)
            if total > 100:
                parts = " + ".join(f"{x.name} {x.share_percent}" for x in items)
                yield loaded.problem(at + (field,), f"{field[:-1]} shares add up to {total}% ({parts}): at most 100% can be handed out")
            seen: dict[str, int] = {}
            for i, x in enumerate(items):
                if x.name in seen:
                    yield loaded.problem(at + (field, i, "name"), f"{field[:-1]} '{x.name}' listed twice (also {field}[{seen[x.name]}])")
                seen.setdefault(x.name, i)
        classes = priority_class_names(loaded.inventory.components)
        known = ", ".join(classes) or "none: add components.scheduling.priority_classes"
        if settings.default_priority_class not in classes:
            yield loaded.problem(at + ("default_priority_class",), f"unknown priority class '{settings.default_priority_class}' (expected one of: {known})")
        for i, p in enumerate(settings.projects):
            if p.priority_class not in classes:
                yield loaded.problem(at + ("projects", i, "priority_class"), f"unknown priority class '{p.priority_class}' (expected one of: {known})")
            for d in settings.domains:
                if len(namespace_for(p.name, d.name)) > 63:
                    yield loaded.problem(at + ("projects", i, "name"), f"namespace '{namespace_for(p.name, d.name)}' would exceed 63 characters")
        s3 = loaded.inventory.cluster.s3
        if "flyte" not in s3.buckets:
            yield loaded.problem(("cluster", "s3", "buckets"), "Flyte needs a bucket under the key 'flyte'")
        alluxio_block = loaded.inventory.components.get(alluxio.Alluxio.name) or {}
        if "flyte" not in (alluxio_block.get("buckets") or []):
            yield loaded.problem(at, "Flyte's storage goes through Alluxio's S3 endpoint: list 'flyte' in components.alluxio.buckets")

    # ---- values ---------------------------------------------------------------------------------

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        s: FlyteSettings = self.settings(cluster)
        s3 = cluster.settings.s3
        bucket = s3.buckets["flyte"]
        endpoint = alluxio.s3_endpoint()
        largest = max(cluster.workload_nodes, key=lambda n: (n.gpu_count, n.profile.cpu_threads, n.profile.memory_gib))
        return {
            "fullnameOverride": FULLNAME,
            "flyte-core-components": {
                "admin": {
                    # forge renders each project-domain's namespace and quotas (see the docstring).
                    "disableClusterResourceManager": True,
                    "seedProjects": [p.name for p in s.projects],
                    "seedProjectsWithDetails": [{"name": p.name, "description": p.description or p.name} for p in s.projects],
                },
            },
            "configuration": {
                "database": {
                    "username": s.database.username,
                    "host": s.database.host,
                    "port": s.database.port,
                    "dbname": s.database.dbname,
                    "options": s.database.options,
                    "passwordPath": f"{DB_PASSWORD_DIR}/password",
                },
                "storage": {
                    "metadataContainer": bucket,
                    "userDataContainer": bucket,
                    "provider": "s3",
                    "providerConfig": {"s3": {
                        "region": s3.region,
                        "endpoint": endpoint,
                        "disableSSL": endpoint.startswith("http://"),  # in-cluster, plain HTTP
                        "authType": "iam",  # the AWS SDK's chain: env vars from the Secret below
                    }},
                },
                # The chart ships the FlyteWorkflow CRD (Argo CD owns it) instead of the binary
                # creating it at startup, out of GitOps' sight.
                "propeller": {"createCRDs": False},
                "logging": {"plugins": {"custom": [log_link(s)]}},
                "inline": {
                    "domains": [{"id": d.name, "name": d.name} for d in s.domains],
                    "task_resources": {
                        "defaults": {"cpu": str(s.task_defaults.cpu), "memory": f"{s.task_defaults.memory_gib}Gi"},
                        # No task pod can be larger than the largest node.
                        "limits": {"cpu": str(largest.profile.cpu_threads), "memory": f"{largest.profile.memory_gib}Gi",
                                   "gpu": str(largest.gpu_count)},
                    },
                    "plugins": {
                        "k8s": {
                            "default-pod-template-name": POD_TEMPLATE,
                            # Every worker node is a GPU node with a taint; CPU tasks run there too.
                            "default-tolerations": cluster.gpu_tolerations,
                            "default-cpus": str(s.task_defaults.cpu),
                            "default-memory": f"{s.task_defaults.memory_gib}Gi",
                            # Task code (flytekit) reads and writes raw data through Alluxio as well.
                            "default-env-vars": {"FLYTE_AWS_ENDPOINT": endpoint},
                            "default-env-from-secrets": [s3.credentials_secret], **default_labels(cluster),
                        },
                        # The Ray plugin does not read plugins.logs (configuration.logging above).
                        # The chart passes `inline` through Helm's tpl: Flyte's placeholders escaped.
                        "ray": {"logs": {"templates": [escape_for_tpl(ray_log_link(s))]}},
                    },
                },
            },
            "enabled_plugins": {"tasks": {"task-plugins": {"enabled-plugins": PLUGINS, "default-for-task-types": TASK_TYPES}}},
            "deployment": {
                "image": {"repository": IMAGE, "tag": IMAGE_TAG},
                "extraEnvVars": [
                    {"name": key, "valueFrom": {"secretKeyRef": {"name": s3.credentials_secret, "key": key}}}
                    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
                ],
                "extraVolumes": [{"name": "db-password", "secret": {"secretName": s.database.password_secret}}],
                "extraVolumeMounts": [{"name": "db-password", "mountPath": DB_PASSWORD_DIR, "readOnly": True}],
                "extraPodSpec": {
                    "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
                    "nodeSelector": cluster.system_node_selector,
                    "tolerations": cluster.system_tolerations,
                },
                "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
            },
            "rbac": {"extraRules": OPERATOR_RULES},
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """What the chart must have made of our values: Flyte's configuration files (storage
        through Alluxio, plugins, log links, task defaults, database), and the pinned image,
        credentials by Secret reference and placement of its Deployment."""
        s: FlyteSettings = self.settings(cluster)
        s3 = cluster.settings.s3
        endpoint = alluxio.s3_endpoint()
        config = ("ConfigMap", f"{FULLNAME}-config")
        storage, plugins = ("data", "003-storage.yaml"), ("data", "001-plugins.yaml")
        inline, database = ("data", "100-inline-config.yaml"), ("data", "002-database.yaml", "database", "postgres")
        pod = ("spec", "template", "spec")
        flyte = (*pod, "containers", "name=flyte")
        deployment = ("Deployment", FULLNAME)
        return [
            Expected(*config, (*storage, "storage", "type"), "stow"),
            Expected(*config, (*storage, "storage", "container"), s3.buckets["flyte"]),
            Expected(*config, (*storage, "storage", "stow"), {"kind": "s3", "config": {
                "region": s3.region, "disable_ssl": endpoint.startswith("http://"), "v2_signing": False,
                "endpoint": endpoint, "auth_type": "iam"}}),
            Expected(*config, (*plugins, "tasks", "task-plugins", "enabled-plugins"), PLUGINS),
            Expected(*config, (*plugins, "tasks", "task-plugins", "default-for-task-types"), {**CHART_TASK_TYPES, **TASK_TYPES}),
            # Container and PyTorch/MPI tasks (plugins.logs), map tasks (k8s-array), Ray tasks.
            Expected(*config, (*plugins, "plugins", "logs", "templates"), [log_link(s)]),
            Expected(*config, (*plugins, "plugins", "logs", "kubernetes-enabled"), False),
            Expected(*config, (*plugins, "plugins", "k8s-array", "logs", "config", "templates"), [log_link(s)]),
            Expected(*config, (*inline, "plugins", "ray", "logs", "templates"), [ray_log_link(s)]),
            Expected(*config, (*inline, "plugins", "k8s", "default-tolerations"), cluster.gpu_tolerations),
            Expected(*config, (*inline, "plugins", "k8s", "default-pod-template-name"), POD_TEMPLATE),
            Expected(*config, (*inline, "plugins", "k8s", "default-env-from-secrets"), [s3.credentials_secret]),
            Expected(*config, (*inline, "plugins", "k8s", "default-env-vars", "FLYTE_AWS_ENDPOINT"), endpoint),
            *(Expected(*config, (*inline, "plugins", "k8s", k), v) for k, v in default_labels(cluster).items()),
            Expected(*config, (*database, "host"), s.database.host),
            Expected(*config, (*database, "passwordPath"), f"{DB_PASSWORD_DIR}/password"),
            Expected(*config, (*database, "dbname"), s.database.dbname),
            Expected(*deployment, (*flyte, "image"), f"{IMAGE}:{IMAGE_TAG}"),
            Expected(*deployment, (*flyte, "env"), Contains(*(
                {"name": key, "valueFrom": {"secretKeyRef": {"key": key, "name": s3.credentials_secret}}}
                for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")))),
            Expected(*deployment, (*pod, "volumes"), Contains({"name": "db-password", "secret": {"secretName": s.database.password_secret}})),
            Expected(*deployment, (*flyte, "volumeMounts"), Contains({"mountPath": DB_PASSWORD_DIR, "name": "db-password", "readOnly": True})),
            Expected(*deployment, (*pod, "priorityClassName"), SYSTEM_CLUSTER_CRITICAL),
            Expected(*deployment, (*pod, "nodeSelector"), cluster.system_node_selector),
            Expected(*deployment, (*pod, "tolerations"), cluster.system_tolerations),
            Expected("ClusterRole", f"{FULLNAME}-cluster-role", "rules", Contains(*OPERATOR_RULES)),
        ]

    # ---- per project-domain objects ---------------------------------------------------------------

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        s: FlyteSettings = self.settings(cluster)
        objs: list[dict[str, Any]] = [metrics_service(), pod_template(None, s.default_priority_class)]
        classes = {p.name: p.priority_class for p in s.projects}
        kueue = kueue_settings(cluster)
        for q in quotas(capacity(cluster), s, kueue):
            objs += [project_namespace(q), resource_quota(q), limit_range(q.namespace, s.task_defaults),
                     pod_template(q.namespace, classes[q.project])]
            objs += [custom_resource(local_queue(q.namespace, q.project))] if kueue else []  # Kueue: its project's ClusterQueue
        return objs


def default_labels(cluster: ClusterModel) -> dict[str, Any]:
    """With Kueue: every object Flyte creates (pods, PyTorchJobs, MPIJobs, RayJobs) names its
    namespace's LocalQueue; a task's own labels win over these, so a task can name another queue."""
    return {"default-labels": {QUEUE_NAME_LABEL: LOCAL_QUEUE}} if kueue_settings(cluster) else {}


def log_link(s: FlyteSettings) -> dict[str, Any]:
    """A Grafana Explore link over Loki for the task's pod, from its start time until now."""
    return _explore_link(s, '{namespace="NS_", pod="POD_", container="CTR_"}')


def ray_log_link(s: FlyteSettings) -> dict[str, Any]:
    """The same for a Ray task: every pod of its RayCluster (the plugin gives the cluster's name,
    no pod name), from the RayJob's creation until now."""
    return _explore_link(s, '{namespace="NS_", pod=~"RAYCLUSTER_-.+"}')


def escape_for_tpl(value: Any) -> Any:
    """`value` with every {{ ... }} in its strings wrapped as {{`{{ ... }}`}}, which Helm's `tpl`
    (the chart renders configuration.inline with it) turns back into the original text."""
    if isinstance(value, str):
        return re.sub(r"\{\{.*?\}\}", lambda m: "{{`" + m.group(0) + "`}}", value)
    if isinstance(value, list):
        return [escape_for_tpl(v) for v in value]
    if isinstance(value, dict):
        return {k: escape_for_tpl(v) for k, v in value.items()}
    return value


def _explore_link(s: FlyteSettings, expr: str) -> dict[str, Any]:
    """The JSON is URL-encoded with stand-ins for Flyte's {{ .var }} placeholders, which must reach
    Flyte unencoded."""
    stand_ins = {"NS_": "{{ .namespace }}", "POD_": "{{ .podName }}", "CTR_": "{{ .containerName }}",
                 "RAYCLUSTER_": "{{ .rayClusterName }}", "START_": "{{ .podUnixStartTime }}"}
    pane = {"a": {
        "datasource": s.loki_datasource_uid,
        "queries": [{"refId": "A", "expr": expr, "datasource": {"type": "loki", "uid": s.loki_datasource_uid}}],
        "range": {"from": "START_000", "to": "now"},
    }}
    encoded = quote(json.dumps(pane, separators=(",", ":")), safe="")
    for stand_in, placeholder in stand_ins.items():
        encoded = encoded.replace(stand_in, placeholder)
    return {"displayName": "Logs (Grafana/Loki)",
            "templateUris": [f"{s.grafana_url.rstrip('/')}/explore?schemaVersion=1&orgId=1&panes={encoded}"]}


def project_namespace(q: Quota) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": q.namespace,
            "labels": {
                "pod-security.kubernetes.io/enforce": PSA_LEVEL,
                "pod-security.kubernetes.io/audit": PSA_LEVEL,
                "pod-security.kubernetes.io/warn": PSA_LEVEL,
                FLYTE_PROJECT_LABEL: q.project,
                "forge.exa.ai/flyte-domain": q.domain,
            },
            # Removing a project from the inventory must not delete its running work with it.
            "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"},
        },
    }


def resource_quota(q: Quota) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "forge-quota", "namespace": q.namespace},
        "spec": {"hard": {f"requests.{r}": quantity(r, n) for r, n in q.hard.items()}},
    }


def limit_range(namespace: str, d: TaskDefaults) -> dict[str, Any]:
    """Containers that ask for nothing get the task defaults, so the quota can count them."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "forge-defaults", "namespace": namespace},
        "spec": {"limits": [{
            "type": "Container",
            "defaultRequest": {"cpu": str(d.cpu), "memory": f"{d.memory_gib}Gi"},
            "default": {"memory": f"{d.memory_gib}Gi"},
        }]},
    }


def pod_template(namespace: str | None, priority_class: str) -> dict[str, Any]:
    """Propeller's base for every pod in `namespace` (None: the flyte namespace, its fallback)."""
    meta: dict[str, Any] = {"name": POD_TEMPLATE}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": meta,
        "template": {"spec": {
            "priorityClassName": priority_class,
            "containers": [{"name": "default", "image": TEMPLATE_IMAGE}],
        }},
    }


def metrics_service() -> dict[str, Any]:
    """The chart exposes no Service for propeller's metrics port; this one is for scraping."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "flyte-metrics", "annotations": {"forge.exa.ai/metrics-path": "/metrics"}},
        "spec": {
            "selector": {"app.kubernetes.io/name": "flyte-binary", "app.kubernetes.io/instance": RELEASE,
                         "app.kubernetes.io/component": "flyte-binary"},
            "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT}],
        },
    }

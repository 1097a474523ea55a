"""Flyte (chart flyte-binary v1.16.8): the ML team's workflow scheduler, with plugins for plain
containers, k8s arrays (map tasks), PyTorch (training-operator) and Ray (KubeRay); MPI off (PLUGINS says why).

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

from typing import Any, Iterator

from forge.components import alluxio, multikueue, network
from forge.components.driver_upgrades import WORKLOAD_FLYTE, WORKLOAD_LABEL
from forge.components.kuberay_operator import RAY_HEAD_PORTS, KuberayOperator
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_WORKLOADS, Component, Contains, Expected, custom_resource
from forge.components.flyte import access, auth, cloud_storage, efa, fence, plan, rdma, smoke, workload_label
from forge.components.flyte.objects import (API_PORTS, GPU_RESOURCE, WEBHOOK_PORT, METRICS_PATH, METRICS_PORT, NAMESPACE, POD_TEMPLATE,  # noqa: F401 (re-exported)
                                            PSA_LEVEL, RELEASE, SCRAPES, escape_for_tpl, limit_range, log_link,
                                            metrics_service, pod_template, project_namespace, ray_log_link, resource_quota)
from forge.components.flyte.plan import (Capacity, Database, DomainSpec, FlyteFacts, FlyteSettings,  # noqa: F401 (re-exported)
                                         ProjectSpec, Quota, TaskDefaults, TaskLimits, capacity, namespace_for, quotas)
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL, Scheduling, priority_class_names
from forge.model.cluster import ClusterModel
from forge.model.queues import CLOUD_QUEUE, LOCAL_QUEUE, QUEUE_NAME_LABEL, kueue_settings, local_queue
from forge.facts import versions
from forge.model.secrets import SecretUse

IMAGE = "flyte-binary"  # images in charts/versions.yaml: what Flyte's release build pins the chart to
# Placeholder image of the PodTemplate's container named `default`: propeller merges that
# container's settings into task containers but never runs its image. Pinned all the same.
TEMPLATE_IMAGE = "flyte-pod-template"  # images in charts/versions.yaml
CONTROL_PLANE_S3_ROLE = "s3-flyte"  # Flyte's own S3 credential in the secret store
TASKS_S3_ROLE_PREFIX = "s3-tasks-"  # + project: the credential of that project's task pods
FULLNAME = "flyte"  # services flyte-http (8088), flyte-grpc (8089), flyte-webhook
DB_PASSWORD_DIR = "/etc/flyte/db"
# The MPI plugin is off: it creates training-operator's kubeflow.org/v1 MPIJob
# (flyteplugins go/tasks/plugins/k8s/kfoperators/mpi/mpi.go), while Kueue 0.19.2's
# kubeflow.org/mpijob integration is mpi-operator's v2beta1, so Kueue would see the launcher and each
# worker only as plain pods carrying the queue label (propeller puts default-labels on every replica's
# pod): each admitted alone, a partial placement that deadlocks and is pre-empted half-way. With the
# plugin off a task of type `mpi` fails at once ("no plugin"), never half-placed; multi-node jobs use
# the PyTorch plugin, whose PyTorchJob Kueue admits as one gang.
PLUGINS = ["container", "sidecar", "k8s-array", "pytorch", "ray"]
# Task type -> plugin, added to the chart's defaults (container, sidecar, container_array -> k8s-array).
TASK_TYPES = {"pytorch": "pytorch", "ray": "ray"}
CHART_TASK_TYPES = {"container": "container", "sidecar": "sidecar", "container_array": "k8s-array"}
OPERATOR_RULES = [  # what the PyTorch and Ray plugins create and watch
    {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"],
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayjobs", "rayclusters"],
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
]


# ---- the component ------------------------------------------------------------------------------

class Flyte(Component):
    name = "flyte"
    namespace = NAMESPACE
    sync_wave = WAVE_WORKLOADS  # after training-operator and KubeRay (WAVE_OPERATORS) and Alluxio
    namespaced_kinds = (*WORKLOAD_KINDS, ("", "Secret"), ("networking.k8s.io", "Ingress"),
                        ("batch", "Job"))  # the login smoke test (forge.components.flyte.smoke)
    api_groups = ('flyte.lyft.io',)
    chart = "flyte-binary"
    release_name = RELEASE
    server_side_apply = True  # the FlyteWorkflow CRD (configuration.propeller.createCRDs: false) is large
    # Only Argo CD's automated pruning is off: the chart's FlyteWorkflow CRD cannot be annotated
    # Prune=false from values (commonAnnotations would annotate every object), and deleting it deletes
    # every running workflow (see forge.validate.cluster_policies).
    prune = False
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        *fence.KINDS,  # fabric clusters: baseline + IPC_LOCK in the project namespaces
        *workload_label.KINDS,  # the upgrade wait's label on pods started outside Flyte
    )
    # deployment.resources is documented only in comments (values.yaml of v1.16.8); the task type
    # -> plugin map is free-form Flyte configuration (the default shows the built-in types only).
    # configuration.auth.internal.audience likewise (commented out in values.yaml; configmap.yaml renders it as admin.audience).
    declared_values = frozenset({"deployment.resources", "enabled_plugins.tasks.task-plugins.default-for-task-types",
                                 "configuration.auth.internal.audience"})
    # Set on purpose although they may equal the chart's defaults: the database from the
    # inventory, and the S3 storage with credentials from the AWS SDK's chain (the Secret's env).
    inventory_values = frozenset({"configuration.database", "configuration.storage.provider",
                                  "configuration.storage.providerConfig.s3.authType",
                                  "ingress.separateGrpcIngress"})  # the gRPC routes need their own Ingress
    Settings = FlyteSettings
    # The chart's Secret of Flyte's cookie and token keys, filled by its init container (forge.components.flyte.auth).
    ignore_differences = auth.IGNORE_DIFFERENCES

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        return (*super().namespaces(cluster), *self.facts(cluster).namespaces)

    def owned_namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        return self.namespaces(cluster)  # Flyte's own and the project-domain namespaces it writes

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # Task pods (project namespaces) call Admin and DataProxy; people come through the
        # ingress controller; KubeRay's operator calls the Ray heads Flyte starts in the projects.
        return (network.Allow("flyte-api", API_PORTS, from_components=(self.name,),
                              from_namespaces=(cluster.settings.ingress_namespace,)),
                network.scrape([METRICS_PORT]),
                network.webhook([WEBHOOK_PORT]),
                network.Allow("kuberay-operator", RAY_HEAD_PORTS, from_components=(KuberayOperator.name,),
                              into=self.facts(cluster).namespaces))

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        s: FlyteSettings = self.settings(cluster)
        # One credential per consumer (docs/security.md): Flyte's control plane (metadata, signed
        # URLs) and the task pods of each project, in all of that project's namespaces.
        secret = cluster.settings.s3.credentials_secret
        tasks = [SecretUse("s3", secret, tuple(q.namespace for q in self.facts(cluster).quotas if q.project == p.name),
                           role=f"{TASKS_S3_ROLE_PREFIX}{p.name}") for p in s.projects]
        return [SecretUse("s3", secret, (self.namespace,), role=CONTROL_PLANE_S3_ROLE), *tasks,
                SecretUse("flyte-db", s.database.password_secret, (self.namespace,)),
                *access.tls_secret_uses(s.ingress, self.namespace), *auth.secret_uses(s.auth, self.namespace)]

    def produced_secrets(self, cluster: ClusterModel) -> dict[str, str]:
        s: FlyteSettings = self.settings(cluster)
        return {**access.produced_by_issuer(s.ingress), **auth.produced(s.auth)}

    def local_files(self, cluster: ClusterModel) -> dict[str, Any]:
        ingress = self.settings(cluster).ingress
        return {access.CLIENT_CONFIG: access.client_config(ingress)} if ingress else {}

    def check(self, loaded, settings: FlyteSettings, given) -> Iterator:
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
        # Another component's settings, typed; a block that is not valid reports its own problems,
        # and guessing from it would add misleading ones here.
        scheduling = given.get(Scheduling.name)
        classes = priority_class_names(scheduling)
        known = ", ".join(classes) or "none: add components.scheduling.priority_classes"
        checked = not (Scheduling.name in given and scheduling is None)
        if checked and settings.default_priority_class not in classes:
            yield loaded.problem(at + ("default_priority_class",), f"unknown priority class '{settings.default_priority_class}' (expected one of: {known})")
        for i, p in enumerate(settings.projects):
            if checked and p.priority_class not in classes:
                yield loaded.problem(at + ("projects", i, "priority_class"), f"unknown priority class '{p.priority_class}' (expected one of: {known})")
            for d in settings.domains:
                if len(namespace_for(p.name, d.name)) > 63:
                    yield loaded.problem(at + ("projects", i, "name"), f"namespace '{namespace_for(p.name, d.name)}' would exceed 63 characters")
        if settings.ingress is not None and settings.auth is None:
            yield loaded.problem(at + ("ingress",), "the Ingress publishes Flyte's console and APIs: add components.flyte.auth "
                                 "(the identity provider's issuer and client_id), so that only people who log in can run workflows")
        if settings.ingress is not None and settings.ingress.class_name != access.NGINX:
            yield loaded.problem(at + ("ingress", "class_name"), f"source_ranges are enforced with ingress-nginx's annotation only: "
                                 f"class_name must be '{access.NGINX}'")
        s3 = loaded.inventory.cluster.s3
        if "flyte" not in s3.buckets:
            yield loaded.problem(("cluster", "s3", "buckets"), "Flyte needs a bucket under the key 'flyte'")
        cache = given.get(alluxio.Alluxio.name)
        on_premises = loaded.inventory.cluster.cloud is None  # a cloud cluster reads S3 directly (no Alluxio by default)
        if (on_premises and alluxio.Alluxio.name not in given) or (cache is not None and "flyte" not in cache.buckets):
            yield loaded.problem(at, "Flyte's storage goes through Alluxio's S3 endpoint: list 'flyte' in components.alluxio.buckets")

    # ---- values ---------------------------------------------------------------------------------

    def derive_facts(self, cluster: ClusterModel) -> FlyteFacts:
        return plan.derive_facts(cluster, self.settings(cluster))

    def guarded_values(self, cluster: ClusterModel) -> dict[str, str]:
        return auth.guarded(self.settings(cluster).auth)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        s: FlyteSettings = self.settings(cluster)
        s3 = cluster.settings.s3
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
            "configuration": _configuration(cluster, s, self.facts(cluster)),
            "enabled_plugins": {"tasks": {"task-plugins": {"enabled-plugins": PLUGINS, "default-for-task-types": TASK_TYPES}}},
            "deployment": {
                "image": {"repository": versions.image(IMAGE).repository, "tag": versions.image(IMAGE).tag},
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
            **({"ingress": access.ingress_values(s.ingress)} if s.ingress else {}),
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """What the chart must have made of our values: Flyte's configuration files (storage
        through Alluxio, plugins, log links, task defaults, database), and the pinned image,
        credentials by Secret reference and placement of its Deployment."""
        s: FlyteSettings = self.settings(cluster)
        s3 = cluster.settings.s3
        endpoint = storage_endpoint(cluster)
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
            Expected(*config, (*inline, "plugins", "k8s", "default-env-from-configmaps"), [cloud_storage.CONFIGMAP]),
            *(Expected(*config, (*inline, "plugins", "k8s", k), v) for k, v in default_labels(cluster).items()),
            Expected(*config, (*database, "host"), s.database.host),
            Expected(*config, (*database, "passwordPath"), f"{DB_PASSWORD_DIR}/password"),
            Expected(*config, (*database, "dbname"), s.database.dbname),
            Expected(*deployment, (*flyte, "image"), versions.image(IMAGE).ref),
            Expected(*deployment, (*flyte, "env"), Contains(*(
                {"name": key, "valueFrom": {"secretKeyRef": {"key": key, "name": s3.credentials_secret}}}
                for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")))),
            Expected(*deployment, (*pod, "volumes"), Contains({"name": "db-password", "secret": {"secretName": s.database.password_secret}})),
            Expected(*deployment, (*flyte, "volumeMounts"), Contains({"mountPath": DB_PASSWORD_DIR, "name": "db-password", "readOnly": True})),
            Expected(*deployment, (*pod, "priorityClassName"), SYSTEM_CLUSTER_CRITICAL),
            Expected(*deployment, (*pod, "nodeSelector"), cluster.system_node_selector),
            Expected(*deployment, (*pod, "tolerations"), cluster.system_tolerations),
            Expected("ClusterRole", f"{FULLNAME}-cluster-role", "rules", Contains(*OPERATOR_RULES)),
            *access.expected_routes(s.ingress, access.signed_url_endpoint(cluster, s.signed_url_endpoint)),
            *auth.expected(s.auth, s.ingress.host if s.ingress else None),
        ]

    # ---- per project-domain objects ---------------------------------------------------------------

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        s: FlyteSettings = self.settings(cluster)
        image, defaults = versions.image(TEMPLATE_IMAGE).ref, s.task_defaults
        objs: list[dict[str, Any]] = [metrics_service(), pod_template(NAMESPACE, s.default_priority_class, image, defaults)]
        classes = {p.name: p.priority_class for p in s.projects}
        levels, fenced = rdma.project_psa_levels(cluster, PSA_LEVEL), rdma.fence_labels(cluster)
        objs += rdma.fence_objects(cluster) + efa.cloud_policy_objects(cluster) + workload_label.objects(cluster)
        if s.auth:  # the login, proven after each sync (forge.components.flyte.smoke)
            objs.append(smoke.smoke_job(cluster, s.auth, s.ingress.host if s.ingress else None, NAMESPACE,
                                        f"http://{FULLNAME}-http.{NAMESPACE}.svc.cluster.local:8088"))
        # Tasks read the endpoint of the cluster they run on, also those a MultiKueue manager sends here.
        objs += cloud_storage.objects((q.namespace for q in self.facts(cluster).quotas), storage_endpoint(cluster))
        for q in self.facts(cluster).quotas:
            objs += [project_namespace(q, levels, fenced), resource_quota(q), limit_range(q.namespace, s.task_defaults),
                     pod_template(q.namespace, classes[q.project], image, defaults)]
            if rdma.has_fabric(cluster):  # multi-node training over the rails
                objs.append(rdma.rdma_pod_template(cluster, pod_template(q.namespace, classes[q.project], image, defaults)))
            if efa.efa_per_pod(cluster):  # multi-node training over the cloud cluster's EFA (its own, or its manager's jobs)
                objs.append(efa.efa_pod_template(cluster, pod_template(q.namespace, classes[q.project], image, defaults)))
            objs += [custom_resource(lq) for lq in local_queues(cluster, q.namespace, q.project)]
        return objs


def local_queues(cluster: ClusterModel, namespace: str, project: str) -> list[dict[str, Any]]:
    """The namespace's LocalQueues: `default` feeds its project's ClusterQueue; `cloud` feeds the
    project's cloud queue on a MultiKueue manager (components.kueue.burst), and on a cloud cluster
    its own queue, where MultiKueue creates the jobs it dispatches (forge.components.multikueue)."""
    settings = kueue_settings(cluster)
    if not settings:
        return []
    out = [local_queue(namespace, project)]
    if settings.burst:
        out.append(local_queue(namespace, multikueue.queue_name(project), CLOUD_QUEUE))
    elif cluster.cloud:
        out.append(local_queue(namespace, project, CLOUD_QUEUE))
    return out


def storage_endpoint(cluster: ClusterModel) -> str:
    """Where Flyte and its tasks reach S3: Alluxio's S3 endpoint where the cluster caches, else
    S3 itself (a cloud cluster in the buckets' region: cluster.s3.endpoint)."""
    return alluxio.s3_endpoint() if alluxio.Alluxio.name in cluster.component_settings else cluster.settings.s3.endpoint


def default_labels(cluster: ClusterModel) -> dict[str, Any]:
    """Every object Flyte creates (pods, PyTorchJobs, MPIJobs, RayJobs) carries forge's workload
    label, which driver upgrades wait for on a cordoned node (driver_upgrades.WORKLOAD_LABEL: plain-pod
    tasks and RayJobs too, not only Kubeflow jobs); with Kueue it also names its namespace's
    LocalQueue. A task's own labels win over these, so a task can name another queue."""
    labels = {WORKLOAD_LABEL: WORKLOAD_FLYTE}
    if kueue_settings(cluster):
        labels[QUEUE_NAME_LABEL] = LOCAL_QUEUE
    return {"default-labels": labels}


def _configuration(cluster: ClusterModel, s: FlyteSettings, facts: FlyteFacts) -> dict[str, Any]:
    """The chart's `configuration`: database, storage through Alluxio, log links, Flyte's own
    inline configuration (domains, task resources, plugin defaults)."""
    s3 = cluster.settings.s3
    bucket = s3.buckets["flyte"]
    endpoint = storage_endpoint(cluster)
    out: dict[str, Any] = {
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
            "storage": access.signed_url_config(access.signed_url_endpoint(cluster, s.signed_url_endpoint)),
            "domains": [{"id": d.name, "name": d.name} for d in s.domains],
            "task_resources": {
                "defaults": {"cpu": str(s.task_defaults.cpu), "memory": f"{s.task_defaults.memory_gib}Gi"},
                "limits": {"cpu": str(facts.limits.cpus), "memory": f"{facts.limits.memory_gib}Gi", "gpu": str(facts.limits.gpus)},
            },
            "plugins": {
                "k8s": {
                    "default-pod-template-name": POD_TEMPLATE,
                    # Every worker node is a GPU node with a taint; CPU tasks run there too.
                    "default-tolerations": cluster.gpu_tolerations,
                    "default-cpus": str(s.task_defaults.cpu),
                    "default-memory": f"{s.task_defaults.memory_gib}Gi",
                    # Task code (flytekit) reads and writes raw data through Alluxio as well.
                    # (from each project namespace's ConfigMap: its own cluster's, forge.components.flyte.cloud_storage).
                    "default-env-from-configmaps": [cloud_storage.CONFIGMAP],
                    "default-env-from-secrets": [s3.credentials_secret], **default_labels(cluster),
                },
                # The Ray plugin does not read plugins.logs (configuration.logging above).
                # The chart passes `inline` through Helm's tpl: Flyte's placeholders escaped.
                "ray": {"logs": {"templates": [escape_for_tpl(ray_log_link(s))]}},
            },
        },
    }
    if s.auth:  # OIDC (forge.components.flyte.auth)
        out["auth"] = auth.chart_values(s.auth, s.ingress.host if s.ingress else None)
        out["inline"]["auth"] = auth.inline(s.auth, s.ingress.host if s.ingress else None)
    return out

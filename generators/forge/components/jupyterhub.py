"""Developer pods: one JupyterHub per Flyte project, its server profiles from the inventory.

Each project of components.flyte (or those listed in `projects`) gets a hub (release
`jupyterhub-<project>`, chart jupyterhub, all in namespace `jupyterhub`) whose KubeSpawner starts
a user's server in the project's `development` namespace, so it is queued like the project's
tasks: it carries the namespace LocalQueue's label and the `interactive` WorkloadPriorityClass
(Kueue's pod integration gates it until its project's ClusterQueue admits it), runs at the
`interactive` PriorityClass (ahead of training, pre-empting nobody) and is culled when idle.

Profiles, as the cluster has them (forge.model.capacity): a MIG slice (the smallest slice of each MIG
profile in use), one whole GPU, CPU only. S3 as tasks see it: the same environment as Flyte's
task pods (FLYTE_AWS_ENDPOINT and the credentials Secret). Login: OpenID Connect against the
identity provider of `oidc` (the one Flyte's auth uses); the client secret comes from the
secret store as OAUTH_CLIENT_SECRET, never from git.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from forge.model.capacity import GPU, capacity
from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WAVE_WORKLOADS, WORKLOAD_KINDS, Component, Expected, storage_class
from forge.components.flyte import Flyte, storage_endpoint
from forge.components.flyte.access import SOURCE_RANGE
from forge.components.flyte.plan import namespace_for
from forge.inventory.schema import Name, Strict
from forge.model.cluster import ClusterModel
from forge.model.queues import LOCAL_QUEUE, QUEUE_NAME_LABEL
from forge.model.secrets import SecretUse

PRIORITY_CLASS = "interactive"  # components.scheduling's class for interactive work
WORKLOAD_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
DOMAIN = "development"  # the project-domain namespace developer pods run in
HUB_API_PORT = 8081
# The hub Secret's keys the chart generates at render time (random unless set in values, which would put them in Git).
GENERATED_TOKENS = ("hub.config.ConfigurableHTTPProxy.auth_token", "hub.config.JupyterHub.cookie_secret",
                    "hub.config.CryptKeeper.keys")
SERVER_PORT = 8888  # a user server's port (KubeSpawner's default)
# How chart 4.4.0 labels the pods of a release: the hub and proxy (templates/hub|proxy/deployment.yaml:
# the legacy and modern match labels, plus the network-access labels its own NetworkPolicies read)
# and a user server (KubeSpawner's common labels, files/hub/jupyterhub_config.py, component
# singleuser-server, then singleuser.extraLabels). SINGLEUSER_ACCESS marks the pods that call user
# servers (the hub and the proxy); the box's flows (forge.twin.flows) stand these pods in.
SINGLEUSER_ACCESS = "hub.jupyter.org/network-access-singleuser"
USER_SERVER = "singleuser-server"
CHART_POD_LABELS = {
    "hub": {"hub.jupyter.org/network-access-proxy-api": "true", "hub.jupyter.org/network-access-proxy-http": "true",
            SINGLEUSER_ACCESS: "true"},
    "proxy": {"hub.jupyter.org/network-access-hub": "true", SINGLEUSER_ACCESS: "true"},
    USER_SERVER: {"hub.jupyter.org/network-access-hub": "true"},  # the chart's default singleuser.extraLabels
}


def chart_pod_labels(role: str, release: str) -> dict[str, str]:
    """The labels chart 4.4.0 gives a `role` pod (hub, proxy, singleuser-server) of `release`."""
    match = {"app": "jupyterhub", "release": release, "component": role}
    modern = {"app.kubernetes.io/name": "jupyterhub", "app.kubernetes.io/instance": release, "app.kubernetes.io/component": role}
    return {**match, **(modern if role != USER_SERVER else {k: v for k, v in modern.items() if not k.endswith("component")}),
            **CHART_POD_LABELS[role]}


class Oidc(Strict):
    issuer_url: Annotated[str, Field(pattern=r"^https://[^\s/]+(/\S*)?$")]  # the identity provider Flyte uses
    client_id: Annotated[str, Field(min_length=1)]
    credentials_secret: Name  # Secret with OAUTH_CLIENT_SECRET, made from the secret store (remote role oidc)


_CIDR = r"^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$"
NODE_LOCAL_CLASSES = frozenset({"local-path"})  # rancher's local-path: a PV pinned to the node that first held it


class Settings(Strict):
    oidc: Oidc
    host_suffix: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")]  # hub of project p: p.<host_suffix>
    ingress_class: Name = "nginx"
    # Client addresses allowed to reach the hubs (ingress-nginx's whitelist-source-range); default:
    # components.flyte.ingress.source_ranges, as Flyte's console.
    source_ranges: Annotated[list[Annotated[str, Field(pattern=_CIDR)]], Field(min_length=1)] | None = None
    # The hubs' certificate (a wildcard *.<host_suffix>), from the secret store (remote role jupyterhub-tls).
    tls_secret: Name = "jupyterhub-tls"
    # Who may use project p's hub: members of the identity provider's group <group_prefix><p> (the
    # token's `groups` claim); nobody else, whatever else they may log in to.
    group_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_./-]*$")] = ""
    # The users' homes: a network StorageClass, so a home follows its user to whichever node Kueue
    # places the next server on (default: cluster.storage_class, refused when it is node-local).
    home_storage_class: Name | None = None
    projects: list[Name] | None = None  # default: every Flyte project
    idle_minutes: Annotated[int, Field(ge=5, le=7 * 24 * 60)] = 60  # a server idle this long is stopped
    cpu: Annotated[int, Field(ge=1, le=256)] = 4
    memory_gib: Annotated[int, Field(ge=1, le=2048)] = 32


def hub_name(project: str) -> str:
    return f"jupyterhub-{project}"


class JupyterHub(Component):
    name = "jupyterhub"
    namespace = "jupyterhub"
    sync_wave = WAVE_WORKLOADS + 5  # after Flyte's project namespaces and LocalQueues
    chart = "jupyterhub"
    Settings = Settings
    cluster_kinds = ()
    # What each hub's chart 4.4.0 renders with our values: hub and proxy (Deployments, Services,
    # the hub's Role and ConfigMap, its Secret and database PVC), the Ingress, the PodDisruptionBudgets.
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("", "Secret"), ("", "PersistentVolumeClaim"),
                        ("networking.k8s.io", "Ingress"), ("policy", "PodDisruptionBudget"))
    # The chart names only PriorityClasses it creates itself (scheduling.podPriority, one pair per
    # release); the hub and proxy get a system class from forge's admission policy instead.
    priority_exception = "the jupyterhub chart can name only the PriorityClasses it creates itself (scheduling.podPriority)"
    # Each hub's Secret (chart 4.4.0 templates/hub/secret.yaml): a copy of our values (no credential
    # in them: the OAuth client secret comes from the secret store) and three tokens the chart
    # generates when it renders (`lookup` finds no live Secret under Argo CD, so every render makes
    # new ones). Argo CD keeps the live tokens and ignores the checksums of them in the hub's and
    # proxy's pod annotations: otherwise every refresh would rotate the proxy token and the cookie
    # secret, restart both and log every user out. Changing our values still updates values.yaml.
    rendered_secret_keys = frozenset({"values.yaml", *GENERATED_TOKENS})
    ignore_differences = (
        {"group": "", "kind": "Secret", "jsonPointers": [f"/data/{key}" for key in GENERATED_TOKENS]},
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/template/metadata/annotations/checksum~1secret",
                                                                "/spec/template/metadata/annotations/checksum~1auth-token"]},
    )
    inventory_values = frozenset({"cull.enabled", "proxy.service.type"})
    # hub.config is free-form (the schema allows any traitlets class); the chart's default shows only JupyterHub.
    declared_values = frozenset({"hub.config.GenericOAuthenticator", "hub.config.KubeSpawner"})

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings and Flyte.name in cluster.component_settings

    def check(self, loaded, settings: Settings, given) -> Any:
        flyte = given.get(Flyte.name)
        at = ("components", self.name)
        if Flyte.name not in given:
            yield loaded.problem(at, "developer pods run in Flyte's project namespaces: add components.flyte")
        elif flyte is not None:
            known = [p.name for p in flyte.projects]
            for i, p in enumerate(settings.projects or []):
                if p not in known:
                    yield loaded.problem(at + ("projects", i), f"unknown Flyte project '{p}' (expected one of: {', '.join(known)})")
            if DOMAIN not in [d.name for d in flyte.domains]:
                yield loaded.problem(at, f"developer pods run in each project's '{DOMAIN}' domain: add it to components.flyte.domains")
        if settings.source_ranges is None and flyte is not None and flyte.ingress is None:
            yield loaded.problem(at, "the hubs need source_ranges (client CIDRs ingress-nginx admits): set "
                                 "components.jupyterhub.source_ranges or components.flyte.ingress.source_ranges")
        homes = settings.home_storage_class or loaded.inventory.cluster.storage_class
        if homes in NODE_LOCAL_CLASSES:
            yield loaded.problem(at + (("home_storage_class",) if settings.home_storage_class else ()),
                                 f"users' homes on StorageClass '{homes}' stay on the node of the first spawn (a GPU node's "
                                 "root disk), while Kueue places the next server anywhere: set "
                                 "components.jupyterhub.home_storage_class to a network StorageClass")
        scheduling = given.get("scheduling")
        if scheduling is not None and PRIORITY_CLASS not in [c.name for c in scheduling.priority_classes]:
            yield loaded.problem(at, f"developer pods run at priority class '{PRIORITY_CLASS}': add it to components.scheduling.priority_classes")

    def projects(self, cluster: ClusterModel) -> list[str]:
        s: Settings = self.settings(cluster)
        return s.projects or [p.name for p in cluster.component_settings[Flyte.name].projects]

    def namespaces(self, cluster: ClusterModel) -> tuple[str, ...]:
        return (*super().namespaces(cluster), *(namespace_for(p, DOMAIN) for p in self.projects(cluster)))

    def secrets(self, cluster: ClusterModel) -> list[SecretUse]:
        s: Settings = self.settings(cluster)
        return [SecretUse("oidc", s.oidc.credentials_secret, (self.namespace,)),
                SecretUse("tls", s.tls_secret, (self.namespace,), role="jupyterhub-tls")]

    def release_of(self, cluster: ClusterModel, project: str) -> str:
        """The Helm release of `project`'s hub: the first is the Application's main release (forge.argocd.bootstrap)."""
        return self.release if project == self.projects(cluster)[0] else hub_name(project)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # The ingress controller reaches each hub's proxy; user servers (in project namespaces) call the hub API.
        # Each hub's proxy (the user's traffic) and hub (spawn checks, activity) reach that project's user
        # servers on 8888: the project namespace denies all else, and a spawn would time out. Only the
        # pods the chart marks for it (SINGLEUSER_ACCESS), of that project's release.
        to_servers = tuple(network.Allow("jupyterhub-to-user-servers", (SERVER_PORT,), from_namespaces=(self.namespace,),
                                         from_pods={"release": self.release_of(cluster, p), SINGLEUSER_ACCESS: "true"},
                                         to_pods={"component": USER_SERVER}, into=(namespace_for(p, DOMAIN),))
                           for p in self.projects(cluster))
        return (network.Allow("from-ingress", (8000,), from_namespaces=(cluster.settings.ingress_namespace,)),
                network.Allow("from-user-servers", (HUB_API_PORT,), from_namespaces=tuple(namespace_for(p, DOMAIN) for p in self.projects(cluster))),
                *to_servers)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        return hub_values(cluster, self.settings(cluster), self.projects(cluster)[0])

    def extra_releases(self, cluster: ClusterModel) -> dict[str, dict[str, Any]]:
        return {hub_name(p): hub_values(cluster, self.settings(cluster), p) for p in self.projects(cluster)[1:]}

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return [obj for p in self.projects(cluster) for obj in spawner_rbac(p)]

    def guarded_values(self, cluster: ClusterModel) -> dict[str, str]:
        # The login, and that only the project's group gets in (a hub hands out its S3 key and GPU quota).
        why = "a hub's login through components.jupyterhub.oidc, for the project's group only, is the inventory's"
        return dict.fromkeys((f"hub.config.{key}" for key in (
            "JupyterHub.authenticator_class", "Authenticator.allow_all", "GenericOAuthenticator.allow_all",
            "GenericOAuthenticator.allowed_groups", "GenericOAuthenticator.claim_groups_key", "GenericOAuthenticator.client_id",
            "GenericOAuthenticator.authorize_url", "GenericOAuthenticator.token_url", "GenericOAuthenticator.userdata_url")), why)

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        first = self.projects(cluster)[0]
        return [Expected("Deployment", f"{hub_name(first)}-hub", ("spec", "template", "spec", "nodeSelector"), cluster.system_node_selector)]


def profiles(cluster: ClusterModel, s: Settings) -> list[dict[str, Any]]:
    """The servers a developer may start, as the cluster has them: each MIG slice, one GPU, CPU only."""
    base = {"cpu_guarantee": s.cpu, "cpu_limit": s.cpu, "mem_guarantee": f"{s.memory_gib}G", "mem_limit": f"{s.memory_gib}G"}
    out = []
    pools = capacity(cluster).pools
    slices = sorted({(r, unit) for p in pools for r, (unit, _) in p.slices.items()})
    for resource, profile in slices:
        out.append({"display_name": f"MIG slice ({profile})", "slug": f"mig-{profile.replace('.', '-')}",
                    "description": f"One {profile} MIG slice, {s.cpu} CPUs, {s.memory_gib} GiB",
                    "kubespawner_override": {**base, "extra_resource_limits": {resource: "1"}}})
    if any(GPU in p.resources for p in pools):
        out.append({"display_name": "One GPU", "slug": "gpu", "description": f"One whole GPU, {s.cpu} CPUs, {s.memory_gib} GiB",
                    "kubespawner_override": {**base, "extra_resource_limits": {GPU: "1"}}})
    out.append({"display_name": "CPU only", "slug": "cpu", "description": f"{s.cpu} CPUs, {s.memory_gib} GiB, no GPU",
                "kubespawner_override": base})
    out[-1 if len(out) == 1 else 0]["default"] = True
    return out


def hub_values(cluster: ClusterModel, s: Settings, project: str) -> dict[str, Any]:
    host = f"{project}.{s.host_suffix}"
    issuer = s.oidc.issuer_url.rstrip("/")
    return {
        "fullnameOverride": hub_name(project),
        "hub": {
            "nodeSelector": cluster.system_node_selector,
            "tolerations": cluster.system_tolerations,
            "db": {"pvc": {"storageClassName": storage_class(cluster, None)}},
            "extraEnv": {"OAUTH_CLIENT_SECRET": {"valueFrom": {"secretKeyRef": {"name": s.oidc.credentials_secret, "key": "OAUTH_CLIENT_SECRET"}}}},
            "config": {
                "JupyterHub": {"authenticator_class": "generic-oauth"},
                "GenericOAuthenticator": {
                    "client_id": s.oidc.client_id, "oauth_callback_url": f"https://{host}/hub/oauth_callback",
                    # Keycloak-style endpoints under the issuer (the identity provider Flyte's auth uses).
                    "authorize_url": f"{issuer}/protocol/openid-connect/auth",
                    "token_url": f"{issuer}/protocol/openid-connect/token",
                    "userdata_url": f"{issuer}/protocol/openid-connect/userinfo",
                    "scope": ["openid", "profile", "email"], "username_claim": "preferred_username",
                    # Only the project's group: a hub hands out its project's S3 key and GPU quota.
                    "allow_all": False, "claim_groups_key": "groups", "allowed_groups": [f"{s.group_prefix}{project}"],
                },
                # S3 as Flyte's task pods get it: the endpoint, and the credentials Secret of the
                # project namespace (made there for Flyte's tasks) as environment variables.
                "KubeSpawner": {"namespace": namespace_for(project, DOMAIN), "priority_class_name": PRIORITY_CLASS,
                                "environment": {"FLYTE_AWS_ENDPOINT": storage_endpoint(cluster)},
                                "extra_container_config": {"envFrom": [{"secretRef": {"name": cluster.settings.s3.credentials_secret}}]}},
            },
        },
        "proxy": {"service": {"type": "ClusterIP"}, "chp": {"nodeSelector": cluster.system_node_selector,
                                                            "tolerations": cluster.system_tolerations}},
        "ingress": {"enabled": True, "ingressClassName": s.ingress_class, "hosts": [host],
                    "tls": [{"hosts": [host], "secretName": s.tls_secret}],
                    **({"annotations": {SOURCE_RANGE: ",".join(source_ranges(cluster, s))}} if s.ingress_class == "nginx" else {})},
        "singleuser": {
            # Queued through the project's LocalQueue, admitted at the interactive priority.
            "extraLabels": {QUEUE_NAME_LABEL: LOCAL_QUEUE, WORKLOAD_PRIORITY_LABEL: PRIORITY_CLASS},
            "extraTolerations": cluster.gpu_tolerations,
            "storage": {"dynamic": {"storageClass": s.home_storage_class or storage_class(cluster, None)}},
            "profileList": profiles(cluster, s),
            "networkPolicy": {"enabled": False},  # the project namespace's own policies apply
            # The chart's default adds a privileged init container (iptables, NET_ADMIN, root) to
            # every server: the project namespaces admit none (forge's baseline fence,
            # forge.components.flyte.fence), so every spawn would be refused. No pod needs the
            # block: on premises there is no metadata server, and in the cloud forge's
            # EC2NodeClasses require IMDSv2 with a hop limit of 1, which a pod cannot reach.
            "cloudMetadata": {"blockWithIptables": False},
        },
        "cull": {"enabled": True, "timeout": s.idle_minutes * 60, "every": 300},
        # No user placeholders: user servers run in the project namespaces, queued by Kueue, so
        # placeholders in the hub's namespace would reserve nothing (and would get the
        # infrastructure class there, forge.components.infra_priority).
        "scheduling": {"userScheduler": {"enabled": False}, "podPriority": {"enabled": False},
                       "userPlaceholder": {"enabled": False}},
        "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
    }


def source_ranges(cluster: ClusterModel, s: Settings) -> list[str]:
    flyte = cluster.component_settings[Flyte.name]
    return list(s.source_ranges or (flyte.ingress.source_ranges if flyte.ingress else []))


def spawner_rbac(project: str) -> list[dict[str, Any]]:
    """What the hub needs in the project namespace its servers run in (the chart grants it only its own)."""
    ns, name = namespace_for(project, DOMAIN), f"{hub_name(project)}-spawner"
    rules = [{"apiGroups": [""], "resources": ["pods", "persistentvolumeclaims", "secrets", "services"],
              "verbs": ["get", "watch", "list", "create", "delete"]},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "watch", "list"]}]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": f"{hub_name(project)}-hub", "namespace": "jupyterhub"}]},
    ]

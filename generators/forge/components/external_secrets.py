"""External Secrets Operator (chart external-secrets 2.9.0): every Secret forge's workloads read
comes from the cluster's secret store, so nothing is created by hand before the first sync.

From the inventory (`components.external-secrets`):
- `store`: the one ClusterSecretStore `forge`, either AWS Secrets Manager (`provider: aws`,
  `region`, optional `role` to assume) or HashiCorp Vault (`provider: vault`, `server`, KV `path`
  and `version`, Kubernetes auth `auth_mount` and `role`);
- `remote_keys`: the remote secret of each role (s3-alluxio, s3-loki, s3-flyte, s3-tasks-<project>,
  flyte-db, grafana-admin, alertmanager, flyte-tls, flyte-oidc, multikueue), by default `forge/<cluster>/<role>`; its properties are fixed per kind
  (forge.model.secrets.SECRET_KINDS).

The bootstrap credential: Vault's Kubernetes auth needs none (the controller's service account
token is its login). AWS Secrets Manager from a cluster outside AWS needs an access key: the
Secret `store.credentials_secret` in this namespace (keys `access-key-id`, `secret-access-key`)
is then the one Secret of the cluster created by hand.

Each consumer's ExternalSecrets (one per Secret and namespace, `Component.secrets`) are written
into the consumer's own overlay: they sync with the namespace they live in (Flyte's project
namespaces come with Flyte), after this Application installed the CRDs and the store.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Sequence

from pydantic import AfterValidator, Field

from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_SECRETS, Component, Expected, Scrape, custom_resource
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.inventory.schema import Name, Strict
from forge.inventory.strings import HttpsUrl, Region
from forge.model.cluster import ClusterModel
from forge.model.secrets import SECRET_KINDS, SecretUse

NAMESPACE = "external-secrets"
STORE = "forge"  # the ClusterSecretStore every ExternalSecret names
CONTROLLER_SA = "external-secrets"  # the chart's fullname for release external-secrets
WEBHOOK_SECRET = "external-secrets-webhook"  # written by the chart's cert-controller at run time
# The chart's Deployments for release external-secrets: controller, webhook, cert-controller.
DEPLOYMENTS = ("external-secrets", "external-secrets-webhook", "external-secrets-cert-controller")
ACCESS_KEY_KEYS = ("access-key-id", "secret-access-key")
# One S3 credential per consumer: Alluxio, Loki, Flyte's control plane, and the task pods of each
# Flyte project (s3-tasks-<project>).
FIXED_ROLES = ("s3-alluxio", "s3-loki", "s3-flyte", "flyte-db", "grafana-admin", "alertmanager", "flyte-tls", "flyte-oidc",
               "multikueue")
_TASKS_ROLE = re.compile(r"^s3-tasks-[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _remote_role(value: str) -> str:
    # One check, so a bad key is one problem on its line (a union of a Literal and a pattern
    # would report it once per member).
    if value in FIXED_ROLES or _TASKS_ROLE.match(value):
        return value
    raise ValueError(f"{value!r} is not a role: expected one of {', '.join(FIXED_ROLES)} or s3-tasks-<project>")


RemoteRole = Annotated[str, AfterValidator(_remote_role)]
_DURATION = r"^[0-9]+(s|m|h)$"


class AwsStore(Strict):
    provider: Literal["aws"]
    region: Region
    role: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/\S+$")] | None = None
    # The bootstrap credential: an existing Secret in namespace external-secrets with an access key
    # allowed to read the cluster's remote secrets (keys access-key-id, secret-access-key).
    credentials_secret: Name = "external-secrets-aws"


class VaultStore(Strict):
    provider: Literal["vault"]
    server: HttpsUrl
    path: Annotated[str, Field(min_length=1)] = "secret"  # the KV engine's mount
    version: Literal["v1", "v2"] = "v2"
    auth_mount: Annotated[str, Field(min_length=1)] = "kubernetes"  # Vault's Kubernetes auth method for this cluster
    role: Name  # the Vault role bound to service account external-secrets/external-secrets


class ExternalSecretsSettings(Strict):
    store: Annotated[AwsStore | VaultStore, Field(discriminator="provider")]
    remote_keys: dict[RemoteRole, Annotated[str, Field(min_length=1)]] = {}
    refresh_interval: Annotated[str, Field(pattern=_DURATION)] = "1h"


WEBHOOK_PORT = 10250  # the chart's webhook.port
# The controller's metrics (externalsecret_status_condition: the ExternalSecretNotSynced alert),
# scraped by a PodMonitor (the prometheus component): the chart's own ServiceMonitor would sync in
# this wave, before the monitoring CRDs exist.
SCRAPES = (Scrape("forge-external-secrets", "external-secrets",
                  {"matchLabels": {"app.kubernetes.io/name": "external-secrets", "app.kubernetes.io/instance": "external-secrets"}},
                  8080, "/metrics"),)
METRICS_PORTS = (8080, 8081)  # the controller's metrics.listen.port; the webhook's and cert-controller's


class ExternalSecrets(Component):
    name = "external-secrets"
    namespace = NAMESPACE
    sync_wave = WAVE_SECRETS
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("", "Secret"), ("policy", "PodDisruptionBudget"))
    chart = "external-secrets"
    server_side_apply = True  # its CRDs exceed client-side apply's annotation limit
    crd_groups = ("external-secrets.io", "generators.external-secrets.io")
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("external-secrets.io", "ClusterSecretStore"),
    )
    Settings = ExternalSecretsSettings
    # The cert-controller writes the webhooks' CA bundle at run time (and renews it).
    ignore_differences = ({"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
                           "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},)

    def enabled(self, cluster: ClusterModel) -> bool:
        return self.name in cluster.component_settings

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # The API server calls the webhook when ExternalSecrets and stores are written.
        return (network.webhook([WEBHOOK_PORT]), network.scrape(METRICS_PORTS))

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        where = {"priorityClassName": SYSTEM_CLUSTER_CRITICAL}
        return {
            # Placement of the controller, webhook and cert-controller alike.
            "global": {"nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations},
            **where,
            "webhook": dict(where),
            "certController": dict(where),
            # A CRD that leaves a chart release must be removed by a person: pruning it would
            # delete every ExternalSecret, and with them (creationPolicy Owner) the Secrets.
            "crds": {"annotations": {"argocd.argoproj.io/sync-options": "Prune=false"}},
            # The chart aggregates write rights on ExternalSecrets and SecretStores to the edit and
            # admin ClusterRoles by default: whoever may edit a namespace could then write an
            # ExternalSecret that reads any remote key the store's credential reads. Only Git
            # (Argo CD) writes them; reading them (view) stays, to see why a Secret is not synced.
            "rbac": {"aggregateToEdit": False, "aggregateToAdmin": False},
        }

    def guarded_values(self, cluster: ClusterModel) -> dict[str, str]:
        why = ("External Secrets' write rights stay out of the edit and admin roles (whoever edits a namespace could read "
               "any remote key the store reads)")
        return dict.fromkeys(("rbac.aggregateToEdit", "rbac.aggregateToAdmin"), why)

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        """All three Deployments on the control plane at system-cluster-critical."""
        pod = ("spec", "template", "spec")
        return [Expected("Deployment", name, (*pod, field), value) for name in DEPLOYMENTS for field, value in (
            ("priorityClassName", SYSTEM_CLUSTER_CRITICAL), ("nodeSelector", cluster.system_node_selector),
            ("tolerations", cluster.system_tolerations))]

    def produced_secrets(self, cluster: ClusterModel) -> dict[str, str]:
        return {WEBHOOK_SECRET: "the cert-controller writes the webhook's serving certificate at run time"}

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        return self.fleet_manifests(cluster, ())

    def fleet_manifests(self, cluster: ClusterModel, components: Sequence[Component]) -> list[dict[str, Any]]:
        return [custom_resource(cluster_secret_store(self.settings(cluster), consumer_namespaces(cluster, components)))]

    def bootstrap_secret(self, cluster: ClusterModel) -> tuple[str, str] | None:
        """(namespace, name) of the one Secret created by hand (a prerequisite, forge.argocd.prereqs),
        or None when the store needs none."""
        return bootstrap_secret_of(self.settings(cluster))

    def settings_namespaces(self, settings: ExternalSecretsSettings) -> dict[str, str]:
        boot = bootstrap_secret_of(settings)
        return {boot[0]: "store.credentials_secret, the bootstrap Secret"} if boot else {}


def bootstrap_secret_of(s: ExternalSecretsSettings) -> tuple[str, str] | None:
    return (NAMESPACE, s.store.credentials_secret) if isinstance(s.store, AwsStore) else None


def consumer_namespaces(cluster: ClusterModel, components: Sequence[Component]) -> list[str]:
    """Every namespace where a component reads a Secret from the store, sorted."""
    return sorted({ns for c in components if c.name != ExternalSecrets.name for use in c.secrets(cluster) for ns in use.namespaces})


def cluster_secret_store(s: ExternalSecretsSettings, namespaces: Sequence[str] = ()) -> dict[str, Any]:
    """The store, served only to ExternalSecrets in `namespaces` (spec.conditions): an
    ExternalSecret anywhere else is refused by the controller, whatever remote key it names."""
    store = s.store
    if isinstance(store, AwsStore):
        refs = {f"{field}SecretRef": {"name": store.credentials_secret, "key": key, "namespace": NAMESPACE}
                for field, key in zip(("accessKeyID", "secretAccessKey"), ACCESS_KEY_KEYS)}
        provider: dict[str, Any] = {"aws": {"service": "SecretsManager", "region": store.region,
                                            **({"role": store.role} if store.role else {}),
                                            "auth": {"secretRef": refs}}}
    else:
        provider = {"vault": {"server": store.server, "path": store.path, "version": store.version, "auth": {"kubernetes": {
            "mountPath": store.auth_mount, "role": store.role,
            "serviceAccountRef": {"name": CONTROLLER_SA, "namespace": NAMESPACE}}}}}
    return {"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore",
            "metadata": {"name": STORE}, "spec": {"provider": provider, "conditions": [{"namespaces": list(namespaces)}]}}


def remote_key(cluster: ClusterModel, s: ExternalSecretsSettings, role: str) -> str:
    return s.remote_keys.get(role, f"forge/{cluster.name}/{role}")  # type: ignore[call-overload]


def external_secret(cluster: ClusterModel, s: ExternalSecretsSettings, use: SecretUse, namespace: str) -> dict[str, Any]:
    """The ExternalSecret that makes Secret `use.name` in `namespace`, with exactly the keys its
    consumers read. The Secret stays when the remote secret goes (deletionPolicy Retain): a
    mistake in the store must not take credentials away from running pods; it belongs to its
    ExternalSecret (creationPolicy Owner) and goes with it."""
    kind = SECRET_KINDS[use.kind]
    key = remote_key(cluster, s, use.remote_role)
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": use.name, "namespace": namespace},
        "spec": {
            "refreshInterval": s.refresh_interval,
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": STORE},
            "target": {"name": use.name, "creationPolicy": "Owner", "deletionPolicy": "Retain",
                       "template": {"engineVersion": "v2", "type": kind.type, "data": dict(use.data or kind.data)}},
            "data": [{"secretKey": p, "remoteRef": {"key": key, "property": p}} for p in kind.properties],
        },
    }


def external_secrets_for(cluster: ClusterModel, component: Component) -> list[dict[str, Any]]:
    """The ExternalSecrets of what `component` reads (none when the cluster runs no ESO)."""
    eso = ExternalSecrets()
    if component is eso or not eso.enabled(cluster):
        return []
    s = eso.settings(cluster)
    return [external_secret(cluster, s, use, ns) for use in component.secrets(cluster) for ns in use.namespaces]

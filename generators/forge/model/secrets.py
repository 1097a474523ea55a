"""The Secrets forge's workloads read, and how each is assembled from the cluster's secret store.

A component declares what it reads (`Component.secrets(cluster)`: a `SecretUse` per Secret: its
kind, name and namespaces); the external-secrets component turns each into one ExternalSecret
per namespace, written into the consumer's own overlay (so it syncs with the namespace it lives
in). A kind fixes the Secret's keys, exactly as its consumers read them, and the properties of
the remote secret they come from.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SecretKindName = Literal["s3", "flyte-db", "grafana-admin", "alertmanager", "alertmanager-keys", "tls", "oidc", "flyte-oidc", "grafana-oidc", "kubeconfig"]


@dataclass(frozen=True)
class SecretKind:
    properties: tuple[str, ...]  # of the remote secret (JSON keys in AWS Secrets Manager, fields in Vault KV)
    # Key of the Kubernetes Secret -> its content, an ESO template over the properties ({{ .prop }}).
    data: tuple[tuple[str, str], ...]
    type: str = "Opaque"
    why: str = ""


def _same(*keys: str) -> tuple[tuple[str, str], ...]:
    # index, not .key: property names may hold dots and dashes, which Go templates cannot address.
    return tuple((k, f'{{{{ index . "{k}" }}}}') for k in keys)


SECRET_KINDS: dict[str, SecretKind] = {
    # One access key, three shapes: environment variables (Flyte, Loki, task pods) and an AWS
    # shared-credentials file (Alluxio's JVMs read AWS_CREDENTIAL_PROFILES_FILE).
    "s3": SecretKind(
        properties=("access_key_id", "secret_access_key"),
        data=(("AWS_ACCESS_KEY_ID", '{{ index . "access_key_id" }}'),
              ("AWS_SECRET_ACCESS_KEY", '{{ index . "secret_access_key" }}'),
              ("credentials", '[default]\naws_access_key_id = {{ index . "access_key_id" }}\n'
                              'aws_secret_access_key = {{ index . "secret_access_key" }}\n')),
        why="S3 access key of the cluster's buckets"),
    "flyte-db": SecretKind(properties=("password",), data=_same("password"), why="Flyte's PostgreSQL password"),
    "grafana-admin": SecretKind(properties=("admin-user", "admin-password"), data=_same("admin-user", "admin-password"),
                                why="Grafana's admin login"),
    "alertmanager": SecretKind(properties=("alertmanager.yaml",), data=_same("alertmanager.yaml"),
                               why="Alertmanager's configuration (receivers and their keys)"),
    # With the configuration generated (forge.observability.alerting): only each receiver's key in
    # the store; the Secret's alertmanager.yaml is the generated configuration (SecretUse.data).
    "alertmanager-keys": SecretKind(properties=("critical", "warning", "heartbeat"), data=_same("critical", "warning", "heartbeat"),
                                    why="the keys of Alertmanager's receivers (routing key, webhook URL, heartbeat key)"),
    "oidc": SecretKind(properties=("client_secret",), data=(("OAUTH_CLIENT_SECRET", '{{ index . "client_secret" }}'),),
                       why="the OpenID Connect client secret of a developer-pod hub"),
    # Flyte's OIDC clients (forge.components.flyte.auth): propeller's client credentials and the
    # console's client secret, under the names the flyte-binary chart mounts them.
    "flyte-oidc": SecretKind(properties=("client_secret", "oidc_client_secret"), data=_same("client_secret", "oidc_client_secret"),
                             why="Flyte's OIDC client secrets"),
    # Grafana's OIDC client (forge.components.grafana_access), read as GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET.
    "grafana-oidc": SecretKind(properties=("client_secret",), data=_same("client_secret"), why="Grafana's OIDC client secret"),
    # MultiKueue's worker cluster (forge.components.multikueue): a kubeconfig of its multikueue
    # ServiceAccount, under the key Kueue reads.
    "kubeconfig": SecretKind(properties=("kubeconfig",), data=_same("kubeconfig"),
                             why="the kubeconfig MultiKueue reaches a worker cluster with"),
    "tls": SecretKind(properties=("tls.crt", "tls.key"), data=_same("tls.crt", "tls.key"), type="kubernetes.io/tls",
                      why="a TLS certificate and key"),
}


@dataclass(frozen=True)
class SecretUse:
    """A Secret a component's pods (or chart values) read: `name` in each of `namespaces`."""

    kind: SecretKindName
    name: str
    namespaces: tuple[str, ...]
    role: str = ""  # the remote secret, when one kind serves several (defaults to the kind)
    # The Secret's keys and their ESO templates, when this use's differ from its kind's (the
    # generated Alertmanager configuration around its receivers' keys).
    data: tuple[tuple[str, str], ...] = ()

    @property
    def remote_role(self) -> str:
        return self.role or self.kind

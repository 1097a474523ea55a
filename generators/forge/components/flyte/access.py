"""Flyte from an engineer's laptop: TLS routes, signed URLs that resolve outside the cluster, and
the client configuration `pyflyte run --remote` reads.

- Routes: the flyte-binary chart's own Ingresses (`ingress.*` values of v1.16.8): `flyte-http`
  (console, REST API, health) and `flyte-grpc` (the Admin, DataProxy, Auth and Signal gRPC
  services) on one host from the inventory. They are two objects because ingress-nginx switches
  a whole Ingress to gRPC with `backend-protocol: GRPC`. TLS with the certificate in Secret
  `tls_secret`, issued by cert-manager when `cluster_issuer` is set, else from the secret store
  (remote role `flyte-tls`, forge.components.external_secrets).
- Signed URLs: Flyte Admin signs upload and download URLs (fast registration's code bundle,
  outputs) with its storage configuration, whose endpoint is Alluxio's in-cluster S3 service that
  no laptop resolves. flytestdlib's `storage.signedUrl.stowConfigOverride` signs with another
  endpoint: the real S3 endpoint (`signed_url_endpoint`, default `cluster.s3.endpoint`), which
  checks the signature (Alluxio's proxy checks none) and holds the same bucket under the same
  name. Alluxio sees the uploaded object at its next metadata sync of the path
  (`components.alluxio.metadata_sync_interval`).
- Client configuration: `overlays/<cluster>/flyte/client/config.yaml`, to copy to
  `~/.flyte/config.yaml` (or pass with `--config`); generated, never synced.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from forge.components.base import Expected
from forge.inventory.schema import Name, Strict
from forge.model.cluster import ClusterModel
from forge.model.secrets import SecretUse

HTTP_INGRESS = "flyte-http"  # the chart's names for fullname `flyte`
GRPC_INGRESS = "flyte-grpc"
CLIENT_CONFIG = "client/config.yaml"
NGINX = "nginx"
NGINX_GRPC = {"nginx.ingress.kubernetes.io/backend-protocol": "GRPC"}
ISSUER_ANNOTATION = "cert-manager.io/cluster-issuer"
SOURCE_RANGE = "nginx.ingress.kubernetes.io/whitelist-source-range"
_CIDR = r"^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$"
_HOST = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$"


class FlyteIngress(Strict):
    host: Annotated[str, Field(pattern=_HOST, max_length=253)]  # as laptops resolve it
    class_name: Name = NGINX  # the IngressClass; `nginx` also gets ingress-nginx's gRPC annotation
    tls_secret: Name = "flyte-tls"
    cluster_issuer: Name | None = None  # cert-manager ClusterIssuer; none: the certificate comes from the secret store
    # How pyflyte authenticates (flytekit's admin.authType) with the identity provider of components.flyte.auth.
    auth_type: Literal["Pkce", "ClientSecret", "DeviceFlow", "ExternalCommand"] = "Pkce"
    # Who may reach the routes at all (client addresses as the ingress controller sees them): the
    # office and VPN ranges. ingress-nginx's whitelist-source-range; other classes: not supported.
    source_ranges: Annotated[list[Annotated[str, Field(pattern=_CIDR)]], Field(min_length=1)]


def signed_url_endpoint(cluster: ClusterModel, configured: str | None) -> str:
    return configured or cluster.settings.s3.endpoint


def ingress_values(ing: FlyteIngress) -> dict[str, Any]:
    values: dict[str, Any] = {
        "create": True,
        "host": ing.host,
        "ingressClassName": ing.class_name,
        "separateGrpcIngress": True,
        "tls": [{"hosts": [ing.host], "secretName": ing.tls_secret}],
    }
    common = {SOURCE_RANGE: ",".join(ing.source_ranges)} if ing.class_name == NGINX else {}
    if ing.cluster_issuer:
        common[ISSUER_ANNOTATION] = ing.cluster_issuer
    if common:
        values["commonAnnotations"] = dict(sorted(common.items()))
    if ing.class_name == NGINX:
        values["grpcAnnotations"] = dict(NGINX_GRPC)
    return values


def signed_url_config(endpoint: str) -> dict[str, Any]:
    """Flyte's `storage.signedUrl` (merged into its storage section): stow's S3 config keys."""
    return {"signedUrl": {"stowConfigOverride": {"endpoint": endpoint, "disable_ssl": str(endpoint.startswith("http://")).lower()}}}


def client_config(ing: FlyteIngress) -> dict[str, Any]:
    """~/.flyte/config.yaml for flytekit and flytectl: gRPC over TLS through the Ingress."""
    return {
        "admin": {"endpoint": f"dns:///{ing.host}", "insecure": False, "authType": ing.auth_type},
        "console": {"endpoint": f"https://{ing.host}"},
        "logger": {"show-source": True, "level": 0},
    }


def tls_secret_uses(ing: FlyteIngress | None, namespace: str) -> list[SecretUse]:
    if ing is None or ing.cluster_issuer:
        return []
    return [SecretUse("tls", ing.tls_secret, (namespace,), role="flyte-tls")]


def produced_by_issuer(ing: FlyteIngress | None) -> dict[str, str]:
    if ing is None or not ing.cluster_issuer:
        return {}
    return {ing.tls_secret: f"cert-manager issues it for the Ingress (annotation {ISSUER_ANNOTATION}: {ing.cluster_issuer})"}


def expected_routes(ing: FlyteIngress | None, endpoint: str) -> list[Expected]:
    """The chart's Ingresses on our host with TLS, and the signed-URL override in Flyte's config."""
    out = [Expected("ConfigMap", "flyte-config", ("data", "100-inline-config.yaml", "storage", "signedUrl"),
                    signed_url_config(endpoint)["signedUrl"])]
    if ing is None:
        return out
    tls = [{"hosts": [ing.host], "secretName": ing.tls_secret}]
    for name in (HTTP_INGRESS, GRPC_INGRESS):
        out += [Expected("Ingress", name, "spec.rules.0.host", ing.host),
                Expected("Ingress", name, "spec.ingressClassName", ing.class_name)]
    out.append(Expected("Ingress", HTTP_INGRESS, "spec.tls", tls))
    if ing.class_name == NGINX:
        out += [Expected("Ingress", name, ("metadata", "annotations", SOURCE_RANGE), ",".join(ing.source_ranges))
                for name in (HTTP_INGRESS, GRPC_INGRESS)]
        out.append(Expected("Ingress", GRPC_INGRESS, ("metadata", "annotations", *NGINX_GRPC), NGINX_GRPC[next(iter(NGINX_GRPC))]))
    return out

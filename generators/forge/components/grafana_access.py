"""Grafana from a browser, behind the team's login; Prometheus never published.

`components.prometheus.grafana` (kube-prometheus-stack 88.5.3, its grafana 12.11.1 subchart):

- Route: the subchart's own Ingress (`grafana.ingress.*`) on `host` (default: the host of
  `components.flyte.grafana_url`, where Flyte's log links point), ingress class `nginx`, TLS with
  the certificate in Secret `tls_secret` (issued by cert-manager when `cluster_issuer` is set, else
  from the secret store, remote role `grafana-tls`), and ingress-nginx's whitelist-source-range
  (default: Flyte's `ingress.source_ranges`), as Flyte's routes (forge.components.flyte.access).
- Login: OpenID Connect against the identity provider Flyte uses (`components.flyte.auth.issuer`
  unless `login.issuer` is set), Grafana's `auth.generic_oauth` with PKCE. Grafana reads no OIDC
  discovery document, so the authorize, token and userinfo URLs are derived from a Keycloak realm
  issuer (`.../realms/<realm>`), or given. Roles from the groups claim: `admin_groups` -> Admin,
  every other login -> Viewer (`allowed_groups`, when set, who may log in at all). The login form
  is off (`auth.disable_login_form`), anonymous access off; the admin password of
  `grafana_admin_secret` stays for the HTTP API only (break glass through a port-forward).
- The client secret comes only from the Secret `login.secret` (key `client_secret`, remote role
  `grafana-oidc`, made by External Secrets), as GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET
  (`grafana.envValueFrom`): never in values or Git.
- Prometheus gets no Ingress. Its pods admit only Grafana and the other Prometheus replicas
  (forge.components.prometheus, Prometheus.isolated_pods / ingress); `forge promote` reads
  Prometheus through Grafana's data-source proxy (docs/rollout.md).
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Iterator
from urllib.parse import urlsplit

from pydantic import Field

from forge.components.base import Expected
from forge.components.flyte.access import ISSUER_ANNOTATION, NGINX, SOURCE_RANGE
from forge.inventory.schema import Name, Strict
from forge.model.secrets import SecretUse

TLS_ROLE = "grafana-tls"  # the remote secrets' roles in the secret store
OIDC_ROLE = "grafana-oidc"
SECRET_KEY = "client_secret"
SECRET_ENV = "GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"  # Grafana's env override of [auth.generic_oauth] client_secret
PORT = 3000  # the grafana container's port (the subchart's service.targetPort)
INGRESS = "prometheus-grafana"  # the subchart's fullname for release `prometheus`
DATASOURCE_UID = "prometheus"  # kube-prometheus-stack's default Prometheus data source (grafana.sidecar.datasources.uid)
_CIDR = r"^([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])$"
_HOST = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$"
_HTTPS = r"^https://[^\s/]+(/\S*)?$"
# Group names go into a JMESPath string literal: no quotes or backslashes.
Group = Annotated[str, Field(pattern=r"^[A-Za-z0-9/][-A-Za-z0-9_./ ]*$", max_length=200)]
_KEYCLOAK_REALM = re.compile(r"^https://[^\s/]+(/[^\s/]+)*/realms/[^\s/]+/?$")


class GrafanaLogin(Strict):
    issuer: Annotated[str, Field(pattern=_HTTPS)] | None = None  # default components.flyte.auth.issuer
    client_id: Annotated[str, Field(min_length=1)] = "grafana"  # confidential client; redirect https://<host>/login/generic_oauth
    secret: Name = "grafana-oidc"  # key client_secret, from the secret store (remote role grafana-oidc)
    groups_claim: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = "groups"  # of the userinfo answer
    admin_groups: Annotated[list[Group], Field(min_length=1)]  # these get Admin; every other login Viewer
    allowed_groups: list[Group] = []  # who may log in at all; empty: anyone the identity provider authenticates
    # Grafana reads no discovery document: derived from a Keycloak realm issuer, else all three given.
    auth_url: Annotated[str, Field(pattern=_HTTPS)] | None = None
    token_url: Annotated[str, Field(pattern=_HTTPS)] | None = None
    api_url: Annotated[str, Field(pattern=_HTTPS)] | None = None


class GrafanaAccess(Strict):
    host: Annotated[str, Field(pattern=_HOST, max_length=253)] | None = None  # default: components.flyte.grafana_url's host
    class_name: Name = NGINX
    tls_secret: Name = "grafana-tls"
    cluster_issuer: Name | None = None  # cert-manager ClusterIssuer; none: the certificate comes from the secret store
    # Client addresses ingress-nginx admits (whitelist-source-range); default components.flyte.ingress.source_ranges.
    source_ranges: Annotated[list[Annotated[str, Field(pattern=_CIDR)]], Field(min_length=1)] | None = None
    login: GrafanaLogin


def host_of(access: GrafanaAccess, flyte: Any) -> str | None:
    url = getattr(flyte, "grafana_url", None)
    return access.host or (urlsplit(str(url)).hostname if url else None)


def issuer_of(access: GrafanaAccess, flyte: Any) -> str | None:
    auth = getattr(flyte, "auth", None)
    return access.login.issuer or (auth.issuer if auth else None)


def ranges_of(access: GrafanaAccess, flyte: Any) -> list[str]:
    ingress = getattr(flyte, "ingress", None)
    return list(access.source_ranges or (ingress.source_ranges if ingress else []))


def endpoints(login: GrafanaLogin, issuer: str) -> dict[str, str]:
    """auth_url, token_url and api_url: the inventory's, else a Keycloak realm's."""
    base = f"{issuer.rstrip('/')}/protocol/openid-connect"
    derived = {"auth_url": f"{base}/auth", "token_url": f"{base}/token", "api_url": f"{base}/userinfo"}
    return {k: getattr(login, k) or v for k, v in derived.items()}


def problems(access: GrafanaAccess, flyte: Any, problem: Any, at: tuple) -> Iterator:
    """The inventory's contradictions, each at its field (`problem(path, message)`)."""
    url = getattr(flyte, "grafana_url", None)
    if host_of(access, flyte) is None:
        yield problem(at + ("host",), "Grafana's Ingress needs a host: set it (or components.flyte.grafana_url)")
    elif access.host and url and urlsplit(str(url)).hostname != access.host:
        yield problem(at + ("host",), f"'{access.host}' is not the host of components.flyte.grafana_url ({url}): "
                      "Flyte's log links would lead elsewhere")
    if not ranges_of(access, flyte):
        yield problem(at + ("source_ranges",), "who may reach Grafana: set source_ranges (or components.flyte.ingress.source_ranges)")
    if access.class_name != NGINX:
        yield problem(at + ("class_name",), f"source_ranges are enforced with ingress-nginx's annotation only: class_name must be '{NGINX}'")
    issuer = issuer_of(access, flyte)
    if issuer is None:
        yield problem(at + ("login", "issuer"), "Grafana's login needs the identity provider: set login.issuer (or components.flyte.auth)")
    elif not _KEYCLOAK_REALM.match(issuer) and not all((access.login.auth_url, access.login.token_url, access.login.api_url)):
        yield problem(at + ("login",), f"issuer {issuer} is not a Keycloak realm (…/realms/<realm>): set auth_url, token_url "
                      "and api_url (the provider's authorize, token and userinfo endpoints)")


def role_path(login: GrafanaLogin) -> str:
    """JMESPath over the userinfo answer: Admin for a member of an admin group, else Viewer."""
    claim = login.groups_claim
    member = " || ".join(f"contains({claim}[*], '{g}')" for g in login.admin_groups)
    return f"({member}) && 'Admin' || 'Viewer'"


def chart_values(access: GrafanaAccess, flyte: Any) -> dict[str, Any]:
    """The grafana subchart's `ingress`, `grafana.ini` and `envValueFrom` (merged into `grafana`)."""
    host, issuer, login = host_of(access, flyte), issuer_of(access, flyte), access.login
    annotations = {SOURCE_RANGE: ",".join(ranges_of(access, flyte))}
    if access.cluster_issuer:
        annotations[ISSUER_ANNOTATION] = access.cluster_issuer
    oauth: dict[str, Any] = {
        "enabled": True, "name": "SSO", "client_id": login.client_id, "scopes": "openid profile email",
        **endpoints(login, issuer or ""), "use_pkce": True, "allow_sign_up": True, "auto_login": True,
        "role_attribute_path": role_path(login), "role_attribute_strict": False,
    }
    if login.allowed_groups:
        oauth |= {"groups_attribute_path": login.groups_claim,
                  "allowed_groups": ",".join(sorted({*login.allowed_groups, *login.admin_groups}))}
    return {
        "ingress": {"enabled": True, "ingressClassName": access.class_name, "annotations": dict(sorted(annotations.items())),
                    "hosts": [host], "tls": [{"secretName": access.tls_secret, "hosts": [host]}]},  # path: the chart's "/"
        "grafana.ini": {
            "server": {"root_url": f"https://{host}/"},
            "auth": {"disable_login_form": True},
            "auth.anonymous": {"enabled": False},
            "auth.generic_oauth": oauth,
        },
        "envValueFrom": {SECRET_ENV: {"secretKeyRef": {"name": login.secret, "key": SECRET_KEY}}},
    }


def kinds(access: GrafanaAccess | None) -> tuple[tuple[str, str], ...]:
    """What the subchart renders for it that the AppProject of `prometheus` must admit: its Ingress
    (without it Argo CD refuses the whole Application, as the real chart's hydration showed)."""
    return () if access is None else (("networking.k8s.io", "Ingress"),)


def secret_uses(access: GrafanaAccess | None, namespace: str) -> list[SecretUse]:
    if access is None:
        return []
    out = [SecretUse("grafana-oidc", access.login.secret, (namespace,), role=OIDC_ROLE)]
    if not access.cluster_issuer:
        out.append(SecretUse("tls", access.tls_secret, (namespace,), role=TLS_ROLE))
    return out


def produced_by_issuer(access: GrafanaAccess | None) -> dict[str, str]:
    if access is None or not access.cluster_issuer:
        return {}
    return {access.tls_secret: f"cert-manager issues it for the Ingress (annotation {ISSUER_ANNOTATION}: {access.cluster_issuer})"}


def expected(access: GrafanaAccess | None, flyte: Any, fullname: str, pods: dict[str, str]) -> list[Expected]:
    """What the subchart must render (its Deployment and ConfigMap are named `fullname`): the pod
    labels the NetworkPolicies select (`pods`) and the port they open; with `access`, the Ingress on
    our host with TLS and the source range, the login in grafana.ini, and the client secret as an
    environment variable from our Secret."""
    template = ("spec", "template")
    out = [*(Expected("Deployment", fullname, (*template, "metadata", "labels", k), v) for k, v in pods.items()),
           Expected("Deployment", fullname, (*template, "spec", "containers", "name=grafana", "ports", "name=grafana",
                                             "containerPort"), PORT)]
    if access is None:
        return out
    host, login = host_of(access, flyte), access.login
    env = (*template, "spec", "containers", "name=grafana", "env", f"name={SECRET_ENV}")
    ini = {("auth.generic_oauth", "enabled"): "true", ("auth.generic_oauth", "use_pkce"): "true",
           ("auth.generic_oauth", "client_id"): login.client_id, ("auth", "disable_login_form"): "true",
           ("auth.anonymous", "enabled"): "false", ("server", "root_url"): f"https://{host}/"}
    return [
        *out,
        Expected("Ingress", INGRESS, "spec.rules.0.host", host),
        Expected("Ingress", INGRESS, "spec.rules.0.http.paths.0.path", "/"),  # every path, from the chart's default
        Expected("Ingress", INGRESS, "spec.ingressClassName", access.class_name),
        Expected("Ingress", INGRESS, "spec.tls", [{"hosts": [host], "secretName": access.tls_secret}]),
        Expected("Ingress", INGRESS, ("metadata", "annotations", SOURCE_RANGE), ",".join(ranges_of(access, flyte))),
        Expected("Deployment", fullname, env,
                 {"name": SECRET_ENV, "valueFrom": {"secretKeyRef": {"name": login.secret, "key": SECRET_KEY}}}),
        # The chart writes grafana.ini as INI (values as text: `use_pkce = true`).
        *(Expected("ConfigMap", fullname, ("data", "grafana.ini", *at), v) for at, v in ini.items()),
    ]

"""Who may use Flyte: OpenID Connect against the team's identity provider (chart flyte-binary
v1.16.8, `configuration.auth`), from the inventory's `components.flyte.auth`.

- People: the console logs in with the confidential client `client_id` (Flyte's
  `userAuth.openId`); pyflyte and flytectl use the public client `cli_client_id` with PKCE (the
  `authType: Pkce` of the generated client configuration), through Flyte's `/config` endpoint.
- Flyte's own calls (propeller to Admin, in the same binary): client credentials of
  `propeller_client_id` at the identity provider.
- The identity provider is the authorization server too (`appAuth.authServerType: External`):
  Flyte's built-in server (the chart's `enableAuthServer: true`) would issue tokens itself, to a
  propeller client whose secret hash is Flyte's built-in default unless overridden, and keeps its
  signing keys in a Secret an init container writes at first start.
- Both client secrets come from the secret store (remote role `flyte-oidc`, properties
  `client_secret`: propeller's, `oidc_client_secret`: the console's) into the Secret `secret`,
  which the chart mounts at /etc/secrets (`clientSecretsExternalSecretRef`); the chart then
  renders no Secret of its own with secrets in values.
- The chart's empty Secret `flyte-admin-auth` (cookie and token keys) is filled at start by its
  init container `gen-admin-auth-secret` (`flyte secrets create`): Argo CD must not put it back
  to empty, so its `data` is ignored in diffs.

The tokens' audience (flyteadmin v1.16.8 auth/authzserver/resource_server.go: a token is accepted
only if its `aud` is Flyte's public URL or one of `appAuth.externalAuthServer.allowedAudience`;
claims_verifier.go): `audience` in the inventory, default `https://<ingress.host>`. forge sets it as
allowedAudience, as the audience pyflyte asks for (`flyteClient.audience`) and the one propeller's
client-credentials calls ask for (`internal.audience`), so an identity provider that mints tokens
for `account` by default (Keycloak) is told to mint them for Flyte (docs/security.md, the identity
provider's side). flyteadmin also wants scope `all` in a token's `scp` claim when the token names
a client (`client_id`: client-credentials tokens; interceptor.go, BlanketAuthorization).

Per-project authorization: Flyte 1.16 (open source) authenticates but does not authorize: any
authenticated identity may use any project (project-level RBAC is not in flyteadmin 1.16). The
fence between projects is Kubernetes': namespaces, quotas and queues per project, S3 credentials
per project (docs/security.md).
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from forge.components.base import Expected
from forge.inventory.schema import Name, Strict
from forge.model.secrets import SecretUse

ROLE = "flyte-oidc"  # the remote secret's role in the secret store
ADMIN_AUTH_SECRET = "flyte-admin-auth"  # the chart's name for fullname `flyte`
CLI_REDIRECT = "http://localhost:53593/callback"  # flytekit's PKCE callback
_ISSUER = r"^https://[^\s/]+(/\S*)?$"


class FlyteAuth(Strict):
    issuer: Annotated[str, Field(pattern=_ISSUER)]  # the OIDC issuer URL (…/.well-known/openid-configuration under it)
    client_id: Annotated[str, Field(min_length=1)]  # confidential client of the console login
    cli_client_id: Annotated[str, Field(min_length=1)] = "flytectl"  # public client (PKCE) of pyflyte and flytectl
    propeller_client_id: Annotated[str, Field(min_length=1)] = "flytepropeller"  # client credentials of Flyte's own calls
    # The access tokens' audience; default https://<ingress.host>, what flyteadmin accepts without allowedAudience.
    audience: Annotated[str, Field(min_length=1)] | None = None
    scopes: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)] = ["all"]  # that pyflyte asks for
    secret: Name = "flyte-client-secrets"  # keys client_secret, oidc_client_secret


def audience(auth: FlyteAuth, host: str | None) -> str | None:
    """The audience every Flyte token must carry: the inventory's, else Flyte's public URL."""
    return auth.audience or (f"https://{host}" if host else None)


def chart_values(auth: FlyteAuth, host: str | None) -> dict[str, Any]:
    """The chart's `configuration.auth`."""
    aud = audience(auth, host)
    internal: dict[str, Any] = {"clientId": auth.propeller_client_id}
    client: dict[str, Any] = {"clientId": auth.cli_client_id, "redirectUri": CLI_REDIRECT, "scopes": list(auth.scopes),
                              "audience": aud or ""}
    if aud:
        internal["audience"] = aud
    return {
        "enabled": True,
        "enableAuthServer": False,
        "oidc": {"baseUrl": auth.issuer, "clientId": auth.client_id},
        "internal": internal,
        "flyteClient": client,
        "authorizedUris": [f"https://{host}"] if host else [],
        "clientSecretsExternalSecretRef": auth.secret,
    }


def inline(auth: FlyteAuth, host: str | None) -> dict[str, Any]:
    """Flyte's own `auth` configuration beyond the chart's: the identity provider as the
    authorization server."""
    # OIDC discovery, which every provider serves (Flyte's default, oauth-authorization-server,
    # is not served by all of them).
    external: dict[str, Any] = {"baseUrl": auth.issuer, "metadataUrl": ".well-known/openid-configuration"}
    aud = audience(auth, host)
    if aud:
        external["allowedAudience"] = [aud]
    return {"appAuth": {"authServerType": "External", "externalAuthServer": external}}


def secret_uses(auth: FlyteAuth | None, namespace: str) -> list[SecretUse]:
    return [SecretUse("flyte-oidc", auth.secret, (namespace,), role=ROLE)] if auth else []


def produced(auth: FlyteAuth | None) -> dict[str, str]:
    return {ADMIN_AUTH_SECRET: "the chart's init container gen-admin-auth-secret writes it at start"} if auth else {}


# Argo CD's ignoreDifferences of the Application (harmless where auth is off: the Secret is not rendered).
IGNORE_DIFFERENCES = ({"group": "", "kind": "Secret", "name": ADMIN_AUTH_SECRET, "jsonPointers": ["/data"]},)


WHY_GUARDED = "Flyte's login (components.flyte.auth) is on wherever the inventory asks for it"


def guarded(auth: FlyteAuth | None) -> dict[str, str]:
    """The values an override may not change while the inventory asks for a login
    (forge.generate.overrides.check_merged): the chart's switch and identity provider, Flyte's own
    `server.security.useAuth` (absent: the chart's auth file sets it) and the authorization server."""
    if auth is None:
        return {}
    paths = ("configuration.auth.enabled", "configuration.auth.enableAuthServer", "configuration.auth.oidc.baseUrl",
             "configuration.auth.oidc.clientId", "configuration.auth.clientSecretsExternalSecretRef",
             "configuration.inline.server.security.useAuth", "configuration.inline.auth.appAuth.authServerType",
             "configuration.inline.auth.appAuth.externalAuthServer.baseUrl")
    return dict.fromkeys(paths, WHY_GUARDED)


def expected(auth: FlyteAuth | None, host: str | None = None) -> list[Expected]:
    """What the chart must render: Flyte's auth file with our issuer and clients, and the
    Deployment mounting our Secret."""
    if auth is None:
        return []
    config, auth_file = ("ConfigMap", "flyte-config"), ("data", "004-auth.yaml")
    inline_file = ("data", "100-inline-config.yaml", "auth", "appAuth")
    aud = audience(auth, host)
    return [
        *([Expected(*config, (*inline_file, "externalAuthServer", "allowedAudience"), [aud]),
           Expected(*config, (*auth_file, "auth", "appAuth", "thirdPartyConfig", "flyteClient", "audience"), aud),
           Expected(*config, ("data", "000-core.yaml", "admin", "audience"), aud)] if aud else []),
        Expected(*config, (*auth_file, "server", "security", "useAuth"), True),
        Expected(*config, (*auth_file, "auth", "userAuth", "openId", "baseUrl"), auth.issuer),
        Expected(*config, (*auth_file, "auth", "userAuth", "openId", "clientId"), auth.client_id),
        Expected(*config, (*auth_file, "auth", "appAuth", "thirdPartyConfig", "flyteClient", "clientId"), auth.cli_client_id),
        Expected(*config, (*inline_file, "authServerType"), "External"),
        Expected(*config, ("data", "000-core.yaml", "admin", "clientId"), auth.propeller_client_id),
    ]

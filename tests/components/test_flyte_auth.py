"""Issue 21 item 1: Flyte asks who you are. OIDC against the identity provider of the inventory
(issuer, clients), client secrets from the secret store, and the Ingress open only to the
inventory's source ranges (forge.components.flyte.auth, forge.components.flyte.access)."""
from __future__ import annotations

import pytest
import yaml

from forge.components.flyte import Flyte
from tests.helpers import CLUSTERS, edit, generated, inventory_text, line_of, model, problems_of

SOURCE_RANGE = "nginx.ingress.kubernetes.io/whitelist-source-range"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_flyte_turns_on_oidc_with_the_inventorys_issuer_and_clients(cluster):
    v = generated(f"overlays/{cluster}/flyte/values.yaml")
    auth = v["configuration"]["auth"]
    assert auth["enabled"] is True
    assert auth["oidc"] == {"baseUrl": "https://sso.exa.internal/realms/exa", "clientId": "flyte-console"}  # no secret in values
    # Every token's audience is Flyte's public URL, which flyteadmin v1.16.8 accepts (allowedAudience),
    # pyflyte asks for (flyteClient) and propeller's client credentials ask for (internal): a provider
    # minting `aud: account` by default would otherwise have every call refused.
    public = f"https://flyte.{cluster}.exa.internal"
    assert auth["internal"] == {"clientId": "flytepropeller", "audience": public}
    assert auth["flyteClient"]["clientId"] == "flytectl"
    assert auth["flyteClient"]["audience"] == public
    assert auth["authorizedUris"] == [f"https://flyte.{cluster}.exa.internal"]
    # the identity provider issues the tokens, not Flyte's built-in server with its default client secret hash
    assert auth["enableAuthServer"] is False
    assert v["configuration"]["inline"]["auth"]["appAuth"] == {
        "authServerType": "External", "externalAuthServer": {"baseUrl": "https://sso.exa.internal/realms/exa",
                                                              "metadataUrl": ".well-known/openid-configuration",
                                                              "allowedAudience": [public]}}
    # both client secrets from the store, mounted by the chart from our Secret
    assert auth["clientSecretsExternalSecretRef"] == "flyte-client-secrets"
    es = generated(f"overlays/{cluster}/flyte/externalsecret-flyte-client-secrets.yaml")
    assert es["metadata"]["namespace"] == "flyte"
    assert {(d["secretKey"], d["remoteRef"]["key"], d["remoteRef"]["property"]) for d in es["spec"]["data"]} == {
        ("client_secret", f"forge/{cluster}/flyte-oidc", "client_secret"),
        ("oidc_client_secret", f"forge/{cluster}/flyte-oidc", "oidc_client_secret")}
    assert "clientSecret:" not in yaml.safe_dump(v) and "clientSecretHash" not in yaml.safe_dump(v)
    # the chart's cookie/token key Secret, filled at start by its init container, is not reverted by Argo CD
    app = generated(f"clusters/{cluster}/argocd/apps/application-flyte.yaml")
    assert {"group": "", "kind": "Secret", "name": "flyte-admin-auth", "jsonPointers": ["/data"]} in app["spec"]["ignoreDifferences"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_ingress_admits_only_the_inventorys_source_ranges(cluster):
    v = generated(f"overlays/{cluster}/flyte/values.yaml")
    assert v["ingress"]["commonAnnotations"][SOURCE_RANGE] == "10.0.0.0/8"  # both Ingresses (http and grpc)
    checks = {(e.kind, e.name, ".".join(e.path) if not isinstance(e.path, str) else e.path): e.value
              for e in Flyte().expected_in_hydrated(model(cluster))}
    for name in ("flyte-http", "flyte-grpc"):
        assert checks[("Ingress", name, f"metadata.annotations.{SOURCE_RANGE}")] == "10.0.0.0/8"
    assert checks[("ConfigMap", "flyte-config", "data.004-auth.yaml.server.security.useAuth")] is True
    two = edit(inventory_text(cluster), "      source_ranges: [10.0.0.0/8]\n", "      source_ranges: [10.8.0.0/16, 192.168.10.0/24]\n")
    assert Flyte().values(model(cluster, two))["ingress"]["commonAnnotations"][SOURCE_RANGE] == "10.8.0.0/16,192.168.10.0/24"


AUTH_BLOCK = """    auth:
      issuer: https://sso.exa.internal/realms/exa
      client_id: flyte-console
      cli_client_id: flytectl
      propeller_client_id: flytepropeller
"""


def test_an_ingress_without_auth_or_source_ranges_is_refused_with_file_and_line():
    base = inventory_text("h200")
    text = edit(base, AUTH_BLOCK, "")
    # Grafana's login takes its issuer from Flyte's auth when it names none: it is refused too
    problem, grafana = problems_of("h200", text)
    assert (problem.line, problem.path) == (line_of(text, "    ingress:"), "components.flyte.ingress")
    assert "add components.flyte.auth" in problem.message
    assert grafana.path == "components.prometheus.grafana.login.issuer" and "set login.issuer" in grafana.message
    text = edit(base, "      source_ranges: [10.0.0.0/8]\n", "")
    [problem] = problems_of("h200", text)
    assert problem.path == "components.flyte.ingress.source_ranges"
    text = edit(base, "      source_ranges: [10.0.0.0/8]\n", "      source_ranges: [10.0.0.0/33]\n")
    [problem] = problems_of("h200", text)
    assert problem.line == line_of(text, "source_ranges: [10.0.0.0/33]") and problem.path.startswith("components.flyte.ingress.source_ranges")
    text = edit(base, "      issuer: https://sso.exa.internal/realms/exa\n", "      issuer: http://sso.exa.internal\n")
    [problem] = problems_of("h200", text)
    assert (problem.line, problem.path) == (line_of(text, "issuer: http://sso.exa.internal"), "components.flyte.auth.issuer")
    text = edit(base, "      class_name: nginx\n", "      class_name: traefik\n")
    [problem] = problems_of("h200", text)
    assert problem.path == "components.flyte.ingress.class_name" and "'nginx'" in problem.message

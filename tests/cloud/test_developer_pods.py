"""Developer pods (forge.components.jupyterhub): one hub per Flyte project, profiles as the
cluster has them, queued through the project's Kueue queue at the interactive priority, culled,
OIDC login, S3 as tasks get it; and every settings field refused with its file:line."""
from __future__ import annotations

import pytest

from tests.helpers import edit, generated, generated_dir, inventory_text, line_of, problems

FILE = "clusters/h200/inventory.yaml"
TEXT = inventory_text("h200")


def test_a_hub_per_project_with_the_clusters_profiles():
    main = generated("overlays/h200/jupyterhub/values.yaml")
    research = generated("overlays/h200/jupyterhub/values-jupyterhub-research.yaml")
    assert main["fullnameOverride"] == "jupyterhub-training" and research["fullnameOverride"] == "jupyterhub-research"
    profiles = {p["slug"]: p for p in research["singleuser"]["profileList"]}
    assert list(profiles) == ["mig-1g-18gb", "gpu", "cpu"]  # h200 has the all-1g MIG pool
    assert profiles["mig-1g-18gb"]["kubespawner_override"]["extra_resource_limits"] == {"nvidia.com/mig-1g.18gb": "1"}
    assert profiles["gpu"]["kubespawner_override"]["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    burst = generated("overlays/h200-burst/jupyterhub/values.yaml")
    assert [p["slug"] for p in burst["singleuser"]["profileList"]] == ["gpu", "cpu"]  # no MIG pool in the cloud


def test_servers_are_queued_in_the_project_namespace_at_interactive_priority_and_culled():
    v = generated("overlays/h200/jupyterhub/values-jupyterhub-research.yaml")
    spawner = v["hub"]["config"]["KubeSpawner"]
    assert spawner["namespace"] == "research-development" and spawner["priority_class_name"] == "interactive"
    assert v["singleuser"]["extraLabels"] == {"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "interactive"}
    assert v["cull"] == {"enabled": True, "timeout": 3600, "every": 300}
    assert spawner["extra_container_config"] == {"envFrom": [{"secretRef": {"name": "s3-credentials"}}]}
    assert spawner["environment"]["FLYTE_AWS_ENDPOINT"] == generated("overlays/h200/flyte/values.yaml")[
        "configuration"]["storage"]["providerConfig"]["s3"]["endpoint"]
    auth = v["hub"]["config"]["GenericOAuthenticator"]
    assert auth["authorize_url"].startswith("https://sso.exa.internal/realms/exa/") and "client_secret" not in auth
    assert v["hub"]["extraEnv"]["OAUTH_CLIENT_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "jupyterhub-oidc"
    bindings = {o["metadata"]["namespace"] for o in generated_dir("overlays/h200/jupyterhub", "rolebinding")}
    assert bindings == {f"{p}-development" for p in ("training", "finetune", "embeddings", "research")}



CASES = [
    ("issuer_url", "issuer_url: https://sso.exa.internal/realms/exa", "issuer_url: http://login", "http://login",
     "components.jupyterhub.oidc.issuer_url", "https://"),
    ("client_id", "client_id: jupyterhub-h200", "client_id: ''", "client_id: ''", "components.jupyterhub.oidc.client_id", "at least 1"),
    ("credentials_secret", "credentials_secret: jupyterhub-oidc", "credentials_secret: oidc-", "credentials_secret: oidc-",
     "components.jupyterhub.oidc.credentials_secret", "DNS labels"),
    ("host_suffix", "host_suffix: jupyter.h200.exa.internal", "host_suffix: https://x", "https://x",
     "components.jupyterhub.host_suffix", "host_suffix"),
    ("idle_minutes", "    idle_minutes: 60\n", "    idle_minutes: 1\n", "idle_minutes: 1", "components.jupyterhub.idle_minutes", "5"),
    ("projects", "    idle_minutes: 60\n", "    idle_minutes: 60\n    projects: [nope]\n", "projects: [nope]",
     "components.jupyterhub.projects[0]", "unknown Flyte project 'nope'"),
    ("cpu", "    idle_minutes: 60\n", "    idle_minutes: 60\n    cpu: 0\n", "cpu: 0", "components.jupyterhub.cpu", "greater than or equal to 1"),
    ("memory_gib", "    idle_minutes: 60\n", "    idle_minutes: 60\n    memory_gib: 9999\n", "memory_gib: 9999",
     "components.jupyterhub.memory_gib", "2048"),
    ("ingress_class", "    idle_minutes: 60\n", "    idle_minutes: 60\n    ingress_class: NGINX\n", "ingress_class: NGINX",
     "components.jupyterhub.ingress_class", "DNS labels"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_developer_pod_setting_names_its_line(case):
    _, old, new, needle, path, words = case
    text = edit(TEXT, old, new)
    found = [p for p in problems(text, FILE) if f": {path}: " in p]
    assert found and found[0].startswith(f"{FILE}:{line_of(text, needle)}: {path}: "), problems(text, FILE)
    assert words in found[0], found[0]


def test_a_secret_the_spawner_names_is_looked_for_where_servers_run():
    from forge.validate.secretrefs import spawner_namespace, value_refs
    values = {"hub": {"config": {"KubeSpawner": {"namespace": "research-development",
                                                 "extra_container_config": {"envFrom": [{"secretRef": {"name": "s3-credentials"}}]}}}}}
    [(name, path)] = list(value_refs(values))
    assert name == "s3-credentials"
    assert spawner_namespace(path) == ("research-development", "hub.config.KubeSpawner.extra_container_config.envFrom[0].secretRef.name")


def _hub_secret(**extra):
    # As jupyterhub 4.4.0 renders it under Argo CD (templates/hub/secret.yaml): our values and three
    # tokens made at render time; the real chart's hydrated output failed "credentials in Git" on it.
    data = {"values.yaml": "e30=", "hub.config.ConfigurableHTTPProxy.auth_token": "YQ==",
            "hub.config.JupyterHub.cookie_secret": "Yg==", "hub.config.CryptKeeper.keys": "Yw==", **extra}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "jupyterhub-research-hub"}, "type": "Opaque", "data": data}


def test_the_hub_secret_the_chart_renders_is_not_a_credential_from_git_and_argo_cd_keeps_its_tokens():
    from forge.argocd.bootstrap import component_application
    from forge.components.jupyterhub import GENERATED_TOKENS, JupyterHub
    from forge.fleet import components_of
    from forge.upstream.check import _rendered_secret
    from forge.validate.policies import check_policies
    from forge.facts.versions import chart_pins
    from tests.helpers import REPO, model
    keys = JupyterHub.rendered_secret_keys
    assert [p for p in check_policies(_hub_secret(), required_labels={}) if not _rendered_secret(_hub_secret(), p[0], keys)] == []
    # any other key is what a credential in Git looks like: still a failure
    other = _hub_secret(**{"hub.db.password": "cA=="})
    assert [p[0] for p in check_policies(other, required_labels={}) if not _rendered_secret(other, p[0], keys)] == ["data"]
    # Argo CD keeps the live tokens: a refresh renders new ones, which must neither rotate them nor
    # restart the hub and proxy through the checksums of them
    cluster = model("h200-burst")
    hub = next(c for c in components_of(cluster) if c.name == "jupyterhub")
    app = component_application(cluster, hub, chart_pins(REPO).get("jupyterhub"), list(components_of(cluster)))
    ignored = {(d["kind"], p) for d in app["spec"]["ignoreDifferences"] for p in d["jsonPointers"]}
    assert {("Secret", f"/data/{k}") for k in GENERATED_TOKENS} <= ignored
    assert {("Deployment", "/spec/template/metadata/annotations/checksum~1secret"),
            ("Deployment", "/spec/template/metadata/annotations/checksum~1auth-token")} <= ignored
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]

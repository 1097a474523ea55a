"""Overrides are held to what the generated output is held to, after merging (issue 36): an
override that turns a component's login off, inlines a credential or puts a manifest outside its
component's AppProject is refused; a deliberate exception is a reviewed entry of
clusters/<c>/overrides/exceptions.yaml that `forge validate` reports every run, and a stale one
is refused. Real generate, render (kustomize) and validate."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.generate.test_generate import snapshot
from tests.generate.test_overrides import put
from tests.helpers import forge

FLYTE = "clusters/h200/overrides/flyte/values.yaml"
AUTH_OFF = "configuration:\n  auth:\n    enabled: false\n"
EXCEPTIONS = "clusters/h200/overrides/exceptions.yaml"


def refused(root: Path, message: str) -> None:
    """generate: exit 2, one `error:` line starting with `message`, nothing written."""
    before = snapshot(root / "overlays")
    result = forge(root, "generate")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.output
    assert snapshot(root / "overlays") == before


@pytest.mark.parametrize(("text", "message"), [
    (AUTH_OFF, f"{FLYTE}:3: configuration.auth.enabled: Flyte's login (components.flyte.auth) is on wherever the "
               "inventory asks for it: the override changes it to False (generated: True): remove the key"),
    # Flyte's own switch, under the chart's pass-through `inline`: absent from the generated values.
    ("configuration:\n  inline:\n    server:\n      security:\n        useAuth: false\n",
     f"{FLYTE}:5: configuration.inline.server.security.useAuth: Flyte's login"),
    # A null removes the whole block (Helm's rule): reported at the key that did it.
    ("configuration:\n  auth: null\n", f"{FLYTE}:2: configuration.auth.clientSecretsExternalSecretRef: Flyte's login"),
])
def test_an_override_turning_the_login_off_is_refused(repo_inputs: Path, text: str, message: str):
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, FLYTE, text)
    refused(repo_inputs, message)


@pytest.mark.parametrize(("text", "message"), [
    ("hub:\n  config:\n    JupyterHub:\n      authenticator_class: dummy\n",
     "clusters/h200/overrides/jupyterhub/values.yaml:4: hub.config.JupyterHub.authenticator_class: a hub's login"),
    ("hub:\n  config:\n    Authenticator:\n      allow_all: true\n",
     "clusters/h200/overrides/jupyterhub/values.yaml:4: hub.config.Authenticator.allow_all: a hub's login"),
])
def test_an_override_opening_a_hub_to_everyone_is_refused(repo_inputs: Path, text: str, message: str):
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, "clusters/h200/overrides/jupyterhub/values.yaml", text)
    refused(repo_inputs, message)


@pytest.mark.parametrize(("text", "message"), [
    # Short, and under a camelCase key: the inventory's scan (12 characters, snake_case) let it by.
    ("loki:\n  storage:\n    s3:\n      secretAccessKey: hunter2\n",
     "clusters/h200/overrides/loki/values.yaml:4: loki.storage.s3.secretAccessKey: looks like a literal credential "
     "under the key 'secretAccessKey': an override is committed"),
    ("minio:\n  rootPassword: admin123\n",
     "clusters/h200/overrides/loki/values.yaml:2: minio.rootPassword: looks like a literal credential"),
])
def test_an_override_inlining_a_credential_is_refused(repo_inputs: Path, text: str, message: str):
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, "clusters/h200/overrides/loki/values.yaml", text)
    refused(repo_inputs, message)


def test_names_of_secrets_and_templates_are_not_credentials(repo_inputs: Path):
    put(repo_inputs, "clusters/h200/overrides/loki/values.yaml",
        "loki:\n  storage:\n    s3:\n      existingSecretKey: secret-access-key\n"
        "      secretAccessKey: ${AWS_SECRET_ACCESS_KEY}\n      accessKeySecretName: loki-s3\n")
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 0, result.output


def test_an_exception_lets_exactly_its_path_through_and_validate_reports_it(repo_inputs: Path, kustomize):
    put(repo_inputs, FLYTE, AUTH_OFF + "    enableAuthServer: true\n")
    put(repo_inputs, EXCEPTIONS, "exceptions:\n"
        "  - component: flyte\n    path: configuration.auth.enabled\n"
        "    reason: lab cluster behind the VPN until the IdP is up (INC-123)\n    reviewed_by: alice\n")
    # Its one path only: the other guarded key in the same file is still refused.
    refused(repo_inputs, f"{FLYTE}:4: configuration.auth.enableAuthServer: Flyte's login")
    put(repo_inputs, FLYTE, AUTH_OFF)
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 0, result.output
    assert "enabled: false" in (repo_inputs / "overlays/h200/flyte/values.yaml").read_text()
    assert forge(repo_inputs, "render").exit_code == 0
    for _ in range(2):  # every run, the second replayed from validate's cache
        result = forge(repo_inputs, "validate", "--cluster", "h200")
        assert ("warning: h200 / flyte / clusters/h200/overrides/flyte/values.yaml / configuration.auth.enabled / "
                f"excepted by {EXCEPTIONS}:2: lab cluster behind the VPN until the IdP is up (INC-123) (reviewed by alice)"
                ) in result.output, result.output


@pytest.mark.parametrize(("text", "message"), [
    ("exceptions:\n  - component: loki\n    path: loki.limits_config\n    reason: r\n    reviewed_by: bob\n",
     f"{EXCEPTIONS}:2: [loki]: stale exception: clusters/h200/overrides/loki/ holds no override: delete the entry"),
    ("exceptions:\n  - component: flyte\n    path: configuration.auth.oidc.baseUrl\n    reason: r\n    reviewed_by: bob\n",
     f"{EXCEPTIONS}:2: [flyte] values.yaml configuration.auth.oidc.baseUrl: stale exception: no check refuses"),
    ("exceptions:\n  - component: flyte\n    path: configuration.auth.enabled\n    reason: r\n",
     f"{EXCEPTIONS}:2: exceptions[0]: needs reviewed_by: an exception names component, path"),
])
def test_a_stale_or_unreviewed_exception_is_refused(repo_inputs: Path, text: str, message: str):
    put(repo_inputs, FLYTE, "configuration:\n  auth:\n    authorizedUris: [https://flyte.h200.exa.internal]\n")
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, EXCEPTIONS, text)
    refused(repo_inputs, message)


def test_a_manifest_outside_the_component_s_appproject_fails_validate_at_its_line(repo_inputs: Path, kustomize):
    """The AppProject fence is forge validate's (forge.validate.fences), on the rendered objects an
    override's manifests are part of: it names the override's file and line. No exception applies:
    Argo CD would refuse the sync whatever the file says."""
    put(repo_inputs, "clusters/h200/overrides/loki/runbook.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loki-runbook\n  namespace: kube-system\ndata:\n  a: b\n")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render", "--cluster", "h200").exit_code == 0
    result = forge(repo_inputs, "validate", "--cluster", "h200")
    assert result.exit_code == 1, result.output
    assert ("FAIL h200 / loki / ConfigMap/kube-system/loki-runbook / metadata.namespace / namespace 'kube-system' is not "
            "a destination of AppProject forge-h200-loki") in result.output
    assert "(from clusters/h200/overrides/loki/runbook.yaml:5)" in result.output


def test_an_exception_lets_a_credential_finding_through_at_its_path_only(repo_inputs: Path):
    """A false positive of the scan (a chart's key that holds no secret): excepted by its path."""
    rel = "clusters/h200/overrides/loki/values.yaml"
    put(repo_inputs, rel, "minio:\n  rootPassword: not-a-secret-see-chart-docs\n")
    put(repo_inputs, EXCEPTIONS, "exceptions:\n  - {component: loki, path: minio.rootPassword, reason: the chart's "
        "placeholder, reviewed_by: bob}\n")
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 0, result.output
    put(repo_inputs, rel, "minio:\n  rootPassword: not-a-secret-see-chart-docs\n  rootUser: x\n  secretKey: abc\n")
    refused(repo_inputs, f"{rel}:4: minio.secretKey: looks like a literal credential")

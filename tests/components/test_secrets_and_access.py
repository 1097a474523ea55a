"""Day one access (issue 11, items 5-7): Secrets from External Secrets, Flyte reachable from a
laptop, RDMA pods admitted, on the shipped inventories and edited copies of them."""
from __future__ import annotations

from itertools import product
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from forge.commands.main import main
from forge.components.external_secrets import ExternalSecrets, external_secrets_for
from forge.components.flyte import Flyte
from forge.components.flyte.access import expected_routes
from forge.components.loki import Loki
from forge.fleet import components_of
from forge.render.overlays import render_all
from forge.validate.admission import secret_references
from forge.validate.crd import CrdSchemas
from tests.helpers import (
    CLUSTERS, REPO, edit, generated, generated_dir, inventory_text, line_of, model, needs_upstream, problems_of, upstream_data,
)
from tests.validate.test_render_validate import generate

S3_KEYS = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "credentials"]


def external_secrets(cluster: str) -> dict[tuple[str, str], dict]:
    out = {}
    for obj in (o for c in sorted((REPO / "overlays" / cluster).iterdir()) if c.is_dir() for o in generated_dir(f"overlays/{cluster}/{c.name}", "externalsecret-")):
        out[(obj["metadata"]["namespace"], obj["spec"]["target"]["name"])] = obj
    return out


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_secret_a_consumer_reads_is_an_externalsecret_with_its_keys(cluster):
    m = model(cluster)
    found = external_secrets(cluster)
    flyte = Flyte().settings(m)
    projects = [f"{p.name}-{d.name}" for p, d in product(flyte.projects, flyte.domains)]
    s3 = m.settings.s3.credentials_secret
    expected = {
        # one S3 credential per consumer (issue 21 item 3)
        **{(ns, s3): (S3_KEYS, f"forge/{cluster}/s3-{ns}") for ns in ["alluxio", "loki", "flyte"]},
        **{(f"{p.name}-{d.name}", s3): (S3_KEYS, f"forge/{cluster}/s3-tasks-{p.name}") for p, d in product(flyte.projects, flyte.domains)},
        ("flyte", flyte.database.password_secret): (["password"], f"forge/{cluster}/flyte-db"),
        ("flyte", "flyte-tls"): (["tls.crt", "tls.key"], f"forge/{cluster}/flyte-tls"),
        ("flyte", "flyte-client-secrets"): (["client_secret", "oidc_client_secret"], f"forge/{cluster}/flyte-oidc"),
        ("monitoring", "grafana-admin"): (["admin-user", "admin-password"], f"forge/{cluster}/grafana-admin"),
        ("monitoring", "alertmanager-config"): (["alertmanager.yaml"], f"forge/{cluster}/alertmanager"),
        # Grafana's Ingress certificate and OIDC client secret (forge.components.grafana_access)
        ("monitoring", "grafana-tls"): (["tls.crt", "tls.key"], f"forge/{cluster}/grafana-tls"),
        ("monitoring", "grafana-oidc"): (["client_secret"], f"forge/{cluster}/grafana-oidc"),
    }
    if cluster == "h200":  # developer pods (forge.components.jupyterhub): the OIDC client secret
        expected[("jupyterhub", "jupyterhub-oidc")] = (["OAUTH_CLIENT_SECRET"], "forge/h200/oidc")
        expected[("jupyterhub", "jupyterhub-tls")] = (["tls.crt", "tls.key"], "forge/h200/jupyterhub-tls")  # the hubs' TLS
        # MultiKueue's kubeconfig of the burst cluster (forge.components.multikueue)
        expected[("kueue-system", "multikueue-h200-burst")] = (["kubeconfig"], "forge/h200/multikueue")
    assert {k: (list(v["spec"]["target"]["template"]["data"]), v["spec"]["data"][0]["remoteRef"]["key"])
            for k, v in found.items()} == expected
    assert len([k for k in found if k[1] == s3]) == 3 + len(projects)  # 15 on both fleets
    assert found[("flyte", "flyte-tls")]["spec"]["target"]["template"]["type"] == "kubernetes.io/tls"
    # the keys are the ones the consumers read
    grafana = generated(f"overlays/{cluster}/prometheus/values.yaml")["grafana"]["admin"]
    assert {grafana["userKey"], grafana["passwordKey"]} == {"admin-user", "admin-password"}
    assert generated(f"overlays/{cluster}/flyte/values.yaml")["configuration"]["database"]["passwordPath"].endswith("/password")
    assert generated(f"overlays/{cluster}/alluxio/values.yaml")["master"]["env"]["AWS_CREDENTIAL_PROFILES_FILE"].endswith("/credentials")
    credentials = found[("alluxio", s3)]["spec"]["target"]["template"]["data"]["credentials"]
    assert credentials.splitlines()[0] == "[default]" and "aws_secret_access_key = " in credentials


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_store_and_externalsecrets_pass_the_real_eso_crds(cluster):
    crds = CrdSchemas()
    crds.add_objects(_eso_crds())
    store = generated(f"overlays/{cluster}/external-secrets/clustersecretstore-forge.yaml")
    assert store["apiVersion"] == "external-secrets.io/v1"
    assert crds.validate(store) == []
    for obj in external_secrets(cluster).values():
        assert crds.validate(obj) == [], obj["metadata"]
    broken = dict(store, spec={"provider": {"aws": {"service": "SecretsManager", "regoin": "us-west-2"}}})
    assert crds.validate(broken)  # an unknown field is caught


def _eso_crds() -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted((upstream_data("external-secrets-2.9.0") / "crds").glob("*.yaml"))]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_at_most_one_secret_per_cluster_does_not_come_from_git(cluster):
    """Without the bootstrap allowance, the check names exactly one Secret: the store's key."""
    m = model(cluster)
    objects = {c.name: [o for o in generated_dir(f"overlays/{cluster}/{c.name}")] for c in components_of(m)}
    values = {c.name: generated(f"overlays/{cluster}/{c.name}/values.yaml") for c in components_of(m) if c.chart}
    args = ({c.name: c.namespace for c in components_of(m)}, {c.name: c.namespaces(m) for c in components_of(m)},
            {c.name: c.produced_secrets(m) for c in components_of(m)})
    problems = secret_references(objects, values, *args, bootstrap=None)
    assert {(p.component, p.where, p.reason.split(" is ")[0]) for p in problems} == {
        ("external-secrets", "ClusterSecretStore/forge", "Secret 'external-secrets-aws' in namespace 'external-secrets'")}
    assert ExternalSecrets().bootstrap_secret(m) == ("external-secrets", "external-secrets-aws")
    assert secret_references(objects, values, *args, bootstrap=("external-secrets", "external-secrets-aws")) == []


def test_vault_needs_no_bootstrap_credential_and_remote_keys_override():
    text = edit(inventory_text("a100"), """    store:
      provider: aws
      region: us-west-2
      credentials_secret: external-secrets-aws
""", """    store:
      provider: vault
      server: https://vault.exa.internal
      role: forge-a100
    remote_keys:
      s3-loki: teams/ml/s3
""")
    m = model("a100", text)
    eso = ExternalSecrets()
    assert eso.bootstrap_secret(m) is None
    [store] = eso.manifests(m)
    assert store["spec"]["provider"] == {"vault": {"server": "https://vault.exa.internal", "path": "secret", "version": "v2", "auth": {
        "kubernetes": {"mountPath": "kubernetes", "role": "forge-a100",
                       "serviceAccountRef": {"name": "external-secrets", "namespace": "external-secrets"}}}}}
    [loki] = external_secrets_for(m, Loki())
    assert {d["remoteRef"]["key"] for d in loki["spec"]["data"]} == {"teams/ml/s3"}


def test_store_settings_are_rejected_with_file_and_line():
    base = inventory_text("h200")
    text = edit(base, "      provider: aws\n", "      provider: azure\n")
    [problem] = problems_of("h200", text)
    assert str(problem) == (f"clusters/h200/inventory.yaml:{line_of(text, 'provider: azure') - 1}: components.external-secrets.store: "
                            "input tag 'azure' found using 'provider' does not match any of the expected tags: 'aws', 'vault'")
    text = edit(base, "      credentials_secret: external-secrets-aws\n",
                "      credentials_secret: external-secrets-aws\n    remote_keys: {s3-creds: x}\n")
    [problem] = problems_of("h200", text)
    assert problem.line == line_of(text, "remote_keys:") and "s3-creds" in str(problem)


# ---- Flyte from a laptop -------------------------------------------------------------------------

@pytest.mark.parametrize("cluster", CLUSTERS)
def test_flyte_routes_signed_urls_and_client_config(cluster):
    m = model(cluster)
    host = f"flyte.{cluster}.exa.internal"
    v = generated(f"overlays/{cluster}/flyte/values.yaml")
    assert v["ingress"] == {
        "create": True, "host": host, "ingressClassName": "nginx", "separateGrpcIngress": True,
        "tls": [{"hosts": [host], "secretName": "flyte-tls"}],
        "commonAnnotations": {"nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8"},
        "grpcAnnotations": {"nginx.ingress.kubernetes.io/backend-protocol": "GRPC"},
    }
    override = v["configuration"]["inline"]["storage"]["signedUrl"]["stowConfigOverride"]
    assert override == {"endpoint": m.settings.s3.endpoint, "disable_ssl": "false"}
    assert "svc.cluster.local" not in override["endpoint"]
    client = generated(f"overlays/{cluster}/flyte/client/config.yaml")
    assert client["admin"] == {"endpoint": f"dns:///{host}", "insecure": False, "authType": "Pkce"}
    # a file for people: not in the kustomization, so never synced
    assert "client/config.yaml" not in (REPO / f"overlays/{cluster}/flyte/kustomization.yaml").read_text()
    checks = {(e.kind, e.name, e.path if isinstance(e.path, str) else ".".join(e.path)): e.value
              for e in Flyte().expected_in_hydrated(m)}
    assert checks[("Ingress", "flyte-grpc", "spec.rules.0.host")] == host
    assert checks[("Ingress", "flyte-http", "spec.tls")] == [{"hosts": [host], "secretName": "flyte-tls"}]


def test_a_cert_manager_issuer_replaces_the_certificate_from_the_store():
    text = edit(inventory_text("a100"), "      class_name: nginx\n", "      class_name: nginx\n      cluster_issuer: internal-ca\n")
    m = model("a100", text)
    flyte = Flyte()
    assert flyte.values(m)["ingress"]["commonAnnotations"] == {"cert-manager.io/cluster-issuer": "internal-ca",
                                                               "nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8"}
    # read, not produced: no flyte-tls from the store (one S3 credential per consumer: Flyte's, each project's tasks')
    assert [(u.name, u.role) for u in flyte.secrets(m)] == [
        ("s3-credentials", "s3-flyte"), *[("s3-credentials", f"s3-tasks-{p.name}") for p in flyte.settings(m).projects],
        ("flyte-db", ""), ("flyte-client-secrets", "flyte-oidc")]
    assert list(flyte.produced_secrets(m)) == ["flyte-tls", "flyte-admin-auth"]
    assert expected_routes(None, "https://s3")[0].path[-1] == "signedUrl"  # no ingress: still the signed URLs


# ---- RDMA pods admitted ----------------------------------------------------------------------------

def test_fabric_projects_get_an_rdma_template_and_a_namespace_that_admits_it():
    m = model("h200")
    rails = ",".join(f"default/rail-{i}" for i in range(8))
    flyte = Flyte().settings(m)
    for p, d in product(flyte.projects, flyte.domains):
        ns = f"{p.name}-{d.name}"
        t = generated(f"overlays/h200/flyte/podtemplate-{ns}-forge-rdma.yaml")
        assert t["template"]["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": rails}
        [c] = t["template"]["spec"]["containers"]
        # the task defaults (as in the default template), plus the compute fabric's RDMA resource
        amounts = {"cpu": str(flyte.task_defaults.cpu), "memory": f"{flyte.task_defaults.memory_gib}Gi", "rdma/rdma_network": 1}
        assert c["resources"] == {"requests": amounts, "limits": amounts}
        assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
        assert t["template"]["spec"]["priorityClassName"] == p.priority_class
        labels = generated(f"overlays/h200/flyte/namespace-{ns}.yaml")["metadata"]["labels"]
        assert [labels[f"pod-security.kubernetes.io/{m}"] for m in ("enforce", "warn", "audit")] == ["privileged", "baseline", "baseline"]
    assert not list((REPO / "overlays/a100/flyte").glob("podtemplate-*-forge-rdma.yaml"))  # no fabric, no template


def test_validate_fails_on_a_pod_its_namespace_refuses_and_a_secret_nothing_produces(repo_inputs: Path, upstream: Path):
    generate(repo_inputs)
    flyte = repo_inputs / "overlays/a100/flyte"
    # a PodTemplate that adds IPC_LOCK where baseline is enforced (a100 has no fabric)
    (flyte / "podtemplate-extra.yaml").write_text(
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: extra, namespace: training-development}\n"
        "template: {spec: {containers: [{name: default, image: 'pause:3.10', securityContext: {capabilities: {add: [IPC_LOCK]}}}]}}\n")
    kustomization = flyte / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - podtemplate-extra.yaml\n"))
    # Grafana's admin Secret no longer made by External Secrets
    prometheus = repo_inputs / "overlays/h200/prometheus/kustomization.yaml"
    prometheus.write_text(prometheus.read_text().replace("  - externalsecret-grafana-admin.yaml\n", ""))
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--allow-stale", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1
    assert sorted(line for line in result.output.splitlines() if line.startswith("FAIL ")) == [
        "FAIL a100 / flyte / PodTemplate/training-development/extra / template.spec.containers[0].securityContext.capabilities.add / "
        "Pod Security 'baseline' (enforced in namespace training-development) forbids capabilities: IPC_LOCK",
        "FAIL h200 / prometheus / values.yaml / grafana.admin.existingSecret / Secret 'grafana-admin' in namespace 'monitoring' is "
        "produced by nothing in Git (no ExternalSecret targets it, no chart creates it) and is not the bootstrap credential: "
        "declare it in the component's secrets() or, if its chart makes it at run time, in produced_secrets() with the reason",
    ]


def test_flyte_access_settings_are_rejected_with_file_and_line():
    base = inventory_text("h200")
    text = edit(base, "      host: flyte.h200.exa.internal\n", "      host: Flyte_H200\n")
    [problem] = problems_of("h200", text)
    assert (problem.line, problem.path) == (line_of(text, "host: Flyte_H200"), "components.flyte.ingress.host")
    text = edit(base, "      class_name: nginx\n", "      class_name: nginx\n      auth_type: Password\n")
    [problem] = problems_of("h200", text)
    assert problem.line == line_of(text, "auth_type: Password") and "Pkce" in problem.message

"""Every Secret read is produced from Git or is the bootstrap credential
(forge.validate.secretrefs, forge.validate.admission.secret_references)."""
from __future__ import annotations

from forge.validate.admission import secret_references
from forge.validate.secretrefs import object_refs, value_refs

POD = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "team"},
       "spec": {"template": {"spec": {
           "imagePullSecrets": [{"name": "registry"}],
           "containers": [{"name": "app", "image": "app:1",
                           "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-one", "key": "k"}}},
                                   {"name": "B", "valueFrom": {"secretKeyRef": {"name": "maybe", "key": "k", "optional": True}}}],
                           "envFrom": [{"secretRef": {"name": "env-all"}}, {"configMapRef": {"name": "cm"}}]}],
           "volumes": [{"name": "v", "secret": {"secretName": "files"}},
                       {"name": "p", "projected": {"sources": [{"secret": {"name": "projected"}}, {"configMap": {"name": "cm"}}]}}]}}}}


def external_secret(namespace: str, target: str) -> dict:
    return {"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": {"name": f"es-{target}", "namespace": namespace},
            "spec": {"target": {"name": target}}}


def test_every_kind_of_pod_reference_is_found_and_optional_ones_are_not():
    refs = sorted((r.name, r.path) for r in object_refs(POD, "team"))
    at = "spec.template.spec"
    assert refs == sorted([
        ("env-one", f"{at}.containers[0].env[0].valueFrom.secretKeyRef"),
        ("env-all", f"{at}.containers[0].envFrom[0].secretRef"),
        ("files", f"{at}.volumes[0].secret"),
        ("projected", f"{at}.volumes[1].projected.sources[0].secret"),
        ("registry", f"{at}.imagePullSecrets[0]"),
    ])


def test_values_references_and_flytes_per_namespace_list():
    values = {"admin": {"existingSecret": "grafana-admin"}, "alertmanagerSpec": {"configSecret": "am"},
              "extraEnvFrom": [{"secretRef": {"name": "s3"}}], "ingress": {"tls": [{"secretName": "tls"}]},
              "secrets": {"master": {"s3": "s3dir"}},
              "inline": {"plugins": {"k8s": {"default-env-from-secrets": ["s3"]}}}}
    assert sorted(value_refs(values)) == sorted([
        ("grafana-admin", "admin.existingSecret"), ("am", "alertmanagerSpec.configSecret"),
        ("s3", "extraEnvFrom[0].secretRef.name"), ("tls", "ingress.tls[0].secretName"),
        ("s3", "secrets.master.s3"), ("s3", "*inline.plugins.k8s.default-env-from-secrets"),
    ])


def test_a_secret_nothing_produces_fails():
    problems = secret_references({"app": [POD]}, {}, {"app": "team"}, {"app": ("team",)}, {}, None)
    assert sorted(p.path.rsplit(".", 1)[-1] for p in problems) == sorted(
        ["secretKeyRef", "secretRef", "secret", "secret", "imagePullSecrets[0]"])
    assert problems[0].reason.startswith("Secret '")


def test_produced_by_externalsecret_chart_runtime_or_the_bootstrap_credential():
    objects = {"app": [POD, external_secret("team", "env-one"), external_secret("team", "env-all"),
                       {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "files", "namespace": "team"}}]}
    runtime = {"app": {"projected": "the operator writes its certificate"}}
    problems = secret_references(objects, {}, {"app": "team"}, {"app": ("team",)}, runtime, ("team", "registry"))
    assert problems == []
    # an ExternalSecret in another namespace does not count
    objects["app"][1] = external_secret("elsewhere", "env-one")
    [problem] = secret_references(objects, {}, {"app": "team"}, {"app": ("team",)}, runtime, ("team", "registry"))
    assert (problem.where, problem.reason.split(" is ")[0]) == ("Deployment/team/app", "Secret 'env-one' in namespace 'team'")


def test_values_spread_over_all_namespaces_and_the_store_credential_is_a_reference():
    values = {"flyte": {"inline": {"plugins": {"k8s": {"default-env-from-secrets": ["s3"]}}}}}
    ns = {"flyte": ("flyte", "team-a", "team-b")}
    made = {"flyte": [external_secret("flyte", "s3"), external_secret("team-a", "s3")]}
    [problem] = secret_references(made, values, {"flyte": "flyte"}, ns, {}, None)
    assert (problem.where, problem.path) == ("values.yaml", "inline.plugins.k8s.default-env-from-secrets")
    assert "namespace 'team-b'" in problem.reason
    store = {"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore", "metadata": {"name": "forge"},
             "spec": {"provider": {"aws": {"auth": {"secretRef": {"accessKeyIDSecretRef": {"name": "boot", "key": "a", "namespace": "eso"}}}}}}}
    [problem] = secret_references({"eso": [store]}, {}, {"eso": "eso"}, {"eso": ("eso",)}, {}, None)
    assert problem.path == "spec.provider.aws.auth.secretRef.accessKeyIDSecretRef"
    assert secret_references({"eso": [store]}, {}, {"eso": "eso"}, {"eso": ("eso",)}, {}, ("eso", "boot")) == []

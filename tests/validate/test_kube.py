from __future__ import annotations

import pytest

from forge.validate.kube import KubeSchemas, available_versions


def test_valid_deployment_passes(kube, deployment):
    assert kube.validate(deployment) == []


def test_unknown_field_reported_at_its_path(kube, deployment):
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    assert kube.validate(deployment) == [
        ("spec.template.spec.containers[0].imagePullPolicyy", "unknown field")
    ]


def test_unknown_top_level_and_metadata_fields(kube, deployment):
    deployment["specs"] = {}
    deployment["metadata"]["label"] = {"a": "b"}
    assert sorted(kube.validate(deployment)) == [("metadata.label", "unknown field"), ("specs", "unknown field")]


def test_wrong_type_reported(kube, deployment):
    deployment["spec"]["replicas"] = "2"
    assert kube.validate(deployment) == [("spec.replicas", "expected integer, got string")]


def test_int_or_string_and_quantity(kube):
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "targetPort": "http"}, {"port": 81, "targetPort": 8081}]},
    }
    assert kube.validate(svc) == []
    svc["spec"]["ports"][0]["targetPort"] = [1]
    assert kube.validate(svc) == [("spec.ports[0].targetPort", "expected string or integer, got array")]


def test_missing_required_field(kube):
    cm = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "x"}}
    assert kube.validate(cm) == [("roleRef", "required field missing")]


def test_configmap_and_rbac_kinds_found(kube):
    assert kube.validate({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}) == []
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    assert kube.validate(role) == []
    assert ("rbac.authorization.k8s.io/v1", "ClusterRole") in kube.kinds()


def test_custom_kind_is_not_ours(kube):
    assert kube.validate({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "x"}}) is None
    # CRDs in a *.k8s.io group that is not built in (Gateway API, NFD topology) are not ours either.
    assert kube.validate({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway"}) is None


def test_removed_api_version_is_an_error(kube):
    problems = kube.validate({"apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler"})
    assert problems and problems[0][0] == "apiVersion"
    assert "autoscaling/v2" in problems[0][1]


def test_non_kind_schema_files_are_not_kinds(kube):
    # container-v1.json exists in the schema directory but Container is not an API kind.
    assert kube.validate({"apiVersion": "v1", "kind": "Container", "name": "x"})[0][0] == "apiVersion"


def test_recursive_crd_schema_is_checked(kube):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "as.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "A", "plural": "as"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"typo": 1}}}}}}}],
        },
    }
    assert kube.validate(crd) == [
        ("spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.x.typo", "unknown field")
    ]


def test_missing_kind(kube):
    assert kube.validate({"apiVersion": "v1", "metadata": {"name": "x"}}) == [("kind", "required field missing")]


def test_version_forms_and_unknown_version():
    assert KubeSchemas("v1.34.2").version == "1.34"
    with pytest.raises(ValueError) as err:
        KubeSchemas("1.99")
    assert "1.99" in str(err.value) and "1.34" in str(err.value)
    assert "1.34" in available_versions()


def test_validator_compiled_once(kube, deployment):
    kube.validate(deployment)
    first = kube._validators[("apps/v1", "Deployment")]
    kube.validate(deployment)
    assert kube._validators[("apps/v1", "Deployment")] is first

"""Against the real upstream CRDs and chart defaults (read-only; path from FORGE_UPSTREAM)."""
from __future__ import annotations

import pytest

from forge.validate.crd import CrdSchemas
from forge.validate.values import check_values


@pytest.fixture(scope="module")
def crds(upstream) -> CrdSchemas:
    c = CrdSchemas()
    for chart in ("gpu-operator-v26.7.0", "network-operator-26.4.1", "argo-cd-crds-v3.4.4", "kube-prometheus-stack-88.5.3"):
        assert c.add_dir(upstream / chart / "crds") > 0
    return c


def test_every_upstream_crd_compiles(upstream):
    c = CrdSchemas()
    assert c.add_dir(upstream) > 50  # every chart's crds/ (values.yaml files hold no CRDs)
    for api_version, kind in sorted(c.kinds()):
        result = c.validate({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}})
        assert isinstance(result, list), (api_version, kind)


def test_node_feature_rule(crds):
    rule = {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": "gpu"},
        "spec": {"rules": [{"name": "nvidia", "labels": {"forge/gpu": "true"},
                            "matchFeatures": [{"feature": "pci.device",
                                               "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}}}]}]},
    }
    assert crds.validate(rule) == []
    rule["spec"]["rules"][0]["matchFeatures"][0]["matchExpressions"]["vendor"]["operator"] = "In"
    assert crds.validate(rule) == [("spec.rules[0].matchFeatures[0].matchExpressions.vendor.operator", "unknown field")]
    assert crds.is_namespaced("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule") is False


def test_service_monitor(crds):
    sm = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "dcgm", "namespace": "gpu-operator"},
        "spec": {"selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
                 "endpoints": [{"port": "gpu-metrics", "interval": "15s", "targetPort": 9400}]},
    }
    assert crds.validate(sm) == []
    sm["spec"]["endpoints"][0]["scrapeInterval"] = "15s"
    assert crds.validate(sm) == [("spec.endpoints[0].scrapeInterval", "unknown field")]


def test_nic_cluster_policy_and_application(crds):
    ncp = {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"},
           "spec": {"ofedDriver": {"image": "doca-driver", "repository": "nvcr.io/nvidia/mellanox", "version": "25.04"}}}
    assert crds.validate(ncp) == []
    ncp["spec"]["ofedDriver"]["tag"] = "x"
    assert crds.validate(ncp) == [("spec.ofedDriver.tag", "unknown field")]
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": "a", "namespace": "argocd"},
           "spec": {"project": "default",
                    "source": {"repoURL": "https://example.com/r.git", "path": "p", "targetRevision": "main",
                               "helm": {"valuesObject": {"free": {"form": 1}}}},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "x"}}}
    assert crds.validate(app) == []  # valuesObject preserves unknown fields


def test_gpu_operator_values(upstream):
    chart = upstream / "gpu-operator-v26.7.0"
    ok = {"driver": {"enabled": False}, "migManager": {"config": {"name": "custom"}},
          "node-feature-discovery": {"worker": {"config": {"sources": {}}}}}
    assert check_values(ok, chart) == []
    bad = {"driver": {"enabeld": False}, "node-feature-discovery": {"wroker": {}}}
    problems = dict(check_values(bad, chart))
    assert "did you mean 'enabled'" in problems["driver.enabeld"]
    assert "node-feature-discovery.wroker" in problems  # checked against the subchart's defaults


def test_loki_schema(upstream):
    problems = check_values({"loki": {"rulerConfig": {"storage": "s3"}}}, upstream / "loki-7.3.0")
    assert any(p == "loki.rulerConfig.storage" and "values.schema.json" in r for p, r in problems)

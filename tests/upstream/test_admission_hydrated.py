"""forge validate --hydrated applies the admission policies to what the charts render: Pod
Security of every chart pod in its namespace, and Secrets nothing in Git produces."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import forge
from tests.upstream.conftest import Widget
from tests.upstream.test_validate_hydrated import hydrate

JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate"},
    # a forge-written Job in an infrastructure namespace: above the workload classes (cluster_policies)
    "spec": {"template": {"spec": {"restartPolicy": "Never", "priorityClassName": "system-cluster-critical", "containers": [{
        "name": "migrate", "image": "registry.example.com/team/migrate:1.0",
        "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "widget-db", "key": "password"}}}]}]}}},
}


def test_a_chart_pod_below_its_namespace_level_fails(widget_repo: Path, mirror: Path):
    namespace = widget_repo / "base/widget/namespace.yaml"
    namespace.write_text(namespace.read_text().replace("enforce: baseline", "enforce: restricted"))
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    failures = [line for line in result.stderr.splitlines() if "Pod Security" in line]
    at = ("FAIL a100 / widget / build/hydrated/a100/widget.yaml:79 Deployment/widget/wdg-widget / "
          "spec.template.spec.containers[0].securityContext")
    assert failures == [
        f"{at}.allowPrivilegeEscalation / Pod Security 'restricted' (enforced in namespace widget) forbids privilege escalation: widget",
        f"{at}.capabilities.drop / Pod Security 'restricted' (enforced in namespace widget) forbids capabilities: drop ALL",
        f"{at}.runAsNonRoot / Pod Security 'restricted' (enforced in namespace widget) forbids running as non-root: widget",
        f"{at}.seccompProfile.type / Pod Security 'restricted' (enforced in namespace widget) forbids seccomp: None",
    ]


def test_a_secret_nothing_produces_fails_unless_declared(widget_repo: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(Widget, "manifests", lambda self, cluster: [dict(JOB)], raising=False)
    assert forge(widget_repo, "generate").exit_code == 0
    hydrate(widget_repo, mirror)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "FAIL a100 / widget / build/hydrated/a100/widget.yaml:130 Job/migrate / spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef / "
        "Secret 'widget-db' in namespace 'widget' is produced by nothing in Git (no ExternalSecret targets it, no chart "
        "creates it) and is not the bootstrap credential: declare it in the component's secrets() or, if its chart makes "
        "it at run time, in produced_secrets() with the reason"]
    # a Secret the component's controller makes at run time, with its reason, is accepted
    monkeypatch.setattr(Widget, "produced_secrets", lambda self, cluster: {"widget-db": "the operator writes it"}, raising=False)
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 0, result.output

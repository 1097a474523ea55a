"""The least-exposure policies of `forge validate` (forge.validate.isolation), each with a fixture
that violates it, and end to end on a repo whose overlay lost its default deny."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from forge.commands.main import main
from forge.components.network import _policy
from forge.render.overlays import render_all
from forge.validate.isolation import application_projects, namespace_isolation


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def app(name: str, project: str) -> dict:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": name, "namespace": "argocd"},
            "spec": {"project": project}}


def test_a_namespace_without_a_default_deny_fails():
    objects = {"alluxio": [namespace("alluxio"), _policy("allow-s3", "alluxio", None, [{"from": [{"podSelector": {}}]}])],
               "loki": [namespace("loki"), _policy("default-deny-ingress", "loki", None, None)],
               "flyte": [namespace("research-staging"), _policy("default-deny-ingress", "flyte", {"app": "x"}, None)]}
    failures = namespace_isolation("h200", objects)
    assert [(f.component, f.object) for f in failures] == [("alluxio", "Namespace/alluxio"), ("flyte", "Namespace/research-staging")]
    assert "no default-deny ingress NetworkPolicy" in failures[0].reason


def test_an_application_outside_its_components_project_fails():
    objects = {"argocd": [app("h200-root", "forge-h200-bootstrap"), app("h200-loki", "forge-h200-loki"),
                          app("h200-alloy", "forge-h200-loki"), app("h200-evil", "default"),
                          app("h200-x", "forge-h200-bootstrap")]}
    projects = {"h200-loki": "forge-h200-loki", "h200-alloy": "forge-h200-alloy"}
    failures = application_projects("h200", objects, projects, "h200-root", "forge-h200-bootstrap")
    assert [(f.object, f.path) for f in failures] == [("Application/argocd/h200-alloy", "spec.project"),
                                                      ("Application/argocd/h200-evil", "spec.project"),
                                                      ("Application/argocd/h200-x", "spec.project")]
    assert "project is 'forge-h200-loki', want 'forge-h200-alloy'" in failures[0].reason
    assert "belongs to no component" in failures[1].reason
    assert application_projects("h200", {"argocd": [app("h200-root", "forge-h200-loki")]}, projects, "h200-root",
                                "forge-h200-bootstrap")  # the root in a component's project fails too


def test_validate_fails_when_an_overlay_drops_its_default_deny(repo_inputs: Path, upstream: Path):
    assert CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)]).exit_code == 0
    kustomization = repo_inputs / "overlays/a100/loki/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - networkpolicy-default-deny-ingress.yaml\n", ""))
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--allow-stale", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1, result.output
    assert "a100 / loki / Namespace/loki / - / namespace loki has no default-deny ingress NetworkPolicy" in result.output
    assert "h200 / loki" not in result.output


def test_validate_fails_on_a_kind_the_applications_project_does_not_allow(repo_inputs: Path, upstream: Path):
    """A config-only Application (scheduling: PriorityClasses) that gains a ClusterRoleBinding, and
    the AppProject of a component that gains a namespace its Application never renders into."""
    assert CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)]).exit_code == 0
    overlay = repo_inputs / "overlays/a100/scheduling"
    (overlay / "crb.yaml").write_text(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: escalate\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n"
        "subjects: [{kind: ServiceAccount, name: default, namespace: scheduling}]\n")
    kustomization = overlay / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - crb.yaml\n"))
    render_all(repo_inputs)
    result = CliRunner().invoke(main, ["validate", "--allow-stale", "--root", str(repo_inputs), "--upstream", str(upstream)])
    assert result.exit_code == 1, result.output
    assert ("a100 / scheduling / ClusterRoleBinding/escalate / kind / cluster-scoped rbac.authorization.k8s.io/ClusterRoleBinding "
            "is not in AppProject forge-a100-scheduling's clusterResourceWhitelist") in result.output
    assert "h200 / scheduling" not in result.output

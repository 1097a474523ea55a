"""The box's words for an Application that is not Synced and Healthy (forge twin argocd), from
its status as Argo CD writes it (no box needed)."""
from __future__ import annotations

from forge.twin.argocd.bootstrap import reason


def _app(kind: str, name: str, status: str, message: str | None = None) -> dict:
    health = {"status": status, **({"message": message} if message else {})}
    return {"kind": kind, "name": name, "health": health}


def test_the_resource_that_holds_the_wave_is_named_not_a_missing_later_one():
    """The root waits for a100-external-secrets (Progressing) while later waves' Applications are
    Missing: the reason names the Progressing one, in Argo CD's words."""
    status = {"sync": {"status": "OutOfSync"}, "health": {"status": "Progressing"},
              "operationState": {"phase": "Running", "message": "waiting for healthy state of "
                                 "argoproj.io/Application/a100-external-secrets"},
              "resources": [_app("Application", "a100-alloy", "Missing"),
                            _app("Application", "a100-external-secrets", "Progressing", "Waiting for ClusterSecretStore"),
                            _app("Application", "a100-scheduling", "Healthy")]}
    assert reason("a100-root", status) == (
        "a100-root: sync OutOfSync, health Progressing; operation Running: waiting for healthy state of "
        "argoproj.io/Application/a100-external-secrets; Application/a100-external-secrets Progressing: "
        "Waiting for ClusterSecretStore")


def test_a_missing_resource_is_named_when_nothing_else_is_unhealthy():
    status = {"sync": {"status": "OutOfSync"}, "health": {"status": "Missing"},
              "resources": [_app("Deployment", "kueue-controller-manager", "Missing")]}
    assert reason("a100-kueue", status) == "a100-kueue: sync OutOfSync, health Missing; Deployment/kueue-controller-manager Missing"

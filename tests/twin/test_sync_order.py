"""The box applies objects in Argo CD's order and sets aside what it cannot serve (no box needed)."""
from __future__ import annotations

from forge.twin.sources import Item
from forge.twin.sync import Wiring, ordered, phase_of


def item(kind: str, name: str, namespace: str | None = None, api: str = "v1", **annotations: str) -> Item:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    if annotations:
        meta["annotations"] = {k.replace("__", "/").replace("_", "-"): v for k, v in annotations.items()}
    return Item({"apiVersion": api, "kind": kind, "metadata": meta}, "f.yaml", 1)


def crd(group: str, kind: str) -> Item:
    return Item({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": f"{kind.lower()}s.{group}"},
                 "spec": {"group": group, "names": {"kind": kind}}}, "crd.yaml", 1)


def names(tasks) -> list[str]:
    return [f"{t.item.obj['kind']}/{t.item.obj['metadata']['name']}" for t in tasks]


def test_kinds_follow_argo_cds_order_and_waves_come_first():
    tasks, skipped = ordered([
        item("Deployment", "d", "ns"), item("ConfigMap", "c", "ns"), item("Namespace", "ns"),
        item("ClusterQueue", "q", api="kueue.x-k8s.io/v1beta2"), item("ServiceAccount", "sa", "ns"),
        item("ConfigMap", "late", "ns", **{"argocd.argoproj.io__sync_wave": "5"}),
    ])
    assert names(tasks) == ["Namespace/ns", "ServiceAccount/sa", "ConfigMap/c", "Deployment/d", "ClusterQueue/q",
                            "ConfigMap/late"]
    assert skipped == []


def test_a_crd_and_a_namespace_move_before_their_first_user_and_take_its_wave():
    # The custom resource sits in wave -1; its CRD (wave 0) must come before it, as gitops-engine's adjustDeps does.
    cr = item("Widget", "w", "apps", api="example.com/v1", **{"argocd.argoproj.io__sync_wave": "-1"})
    tasks, _ = ordered([crd("example.com", "Widget"), item("Namespace", "apps"), cr])
    assert names(tasks) == ["Namespace/apps", "CustomResourceDefinition/widgets.example.com", "Widget/w"]
    assert {t.wave for t in tasks} == {-1}


def test_hooks_run_in_their_phase_and_delete_hooks_never_on_a_sync():
    pre = item("Job", "check", "ns", **{"argocd.argoproj.io__hook": "PreSync"})
    post = item("Job", "smoke", "ns", **{"helm.sh__hook": "post-install,post-upgrade"})
    prune = item("Job", "prune", "ns", **{"helm.sh__hook": "post-delete"})
    test = item("Pod", "t", "ns", **{"helm.sh__hook": "test"})
    tasks, skipped = ordered([post, item("ConfigMap", "c", "ns"), pre, prune, test])
    assert names(tasks) == ["Job/check", "ConfigMap/c", "Job/smoke"]
    assert [t.phase for t in tasks] == ["PreSync", "Sync", "PostSync"]
    assert {i.obj["metadata"]["name"] for i in skipped} == {"prune", "t"}
    assert phase_of({"metadata": {"annotations": {"argocd.argoproj.io/hook": "Skip"}}}) is None


def test_webhooks_and_aggregated_apis_without_a_server_are_set_aside_with_the_reason():
    wiring = Wiring({}, {})
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        obj, why = wiring.for_box(item(kind, "x", api="admissionregistration.k8s.io/v1").obj)
        assert obj is None and "webhook server does not run in the box" in why
    api = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.x"},
           "spec": {"service": {"name": "s", "namespace": "n"}}}
    assert wiring.for_box(api)[0] is None
    plain = item("ConfigMap", "c", "ns").obj
    assert wiring.for_box(plain) == (plain, None)


def test_a_conversion_webhook_is_repointed_when_its_server_runs_in_the_box_else_turned_off():
    def conv(service: str) -> dict:
        obj = crd("kueue.x-k8s.io", "Workload").obj
        obj["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"clientConfig": {
            "service": {"name": service, "namespace": "kueue-system", "port": 443, "path": "/convert"}}}}
        return obj
    wiring = Wiring({("kueue-system", "kueue-webhook-service"): 40123}, {})
    served, why = wiring.for_box(conv("kueue-webhook-service"))
    assert why is None and served["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 40123
    original = conv("other")
    off, why = wiring.for_box(original)
    assert off["spec"]["conversion"] == {"strategy": "None"} and "strategy None" in why
    assert original["spec"]["conversion"]["strategy"] == "Webhook"  # the rendered object is left as it was


def test_one_run_per_phase_wave_and_kind_applied_at_once_in_argo_cds_order():
    from forge.twin.sync import runs

    tasks, _ = ordered([
        item("ConfigMap", "b", "ns"), item("Namespace", "ns"), item("ConfigMap", "a", "ns"),
        item("ServiceAccount", "sa", "ns"), item("ConfigMap", "late", "ns", **{"argocd.argoproj.io__sync_wave": "5"}),
        item("Job", "check", "ns", **{"argocd.argoproj.io__hook": "PreSync"}),
    ])
    # The Namespace moves before its first user, the PreSync hook, and takes its phase.
    assert [names(r) for r in runs(tasks)] == [["Namespace/ns"], ["Job/check"], ["ServiceAccount/sa"],
                                               ["ConfigMap/a", "ConfigMap/b"], ["ConfigMap/late"]]

"""Policies over a cluster's whole output (forge.validate.cluster_policies): infrastructure pods rank
above every workload class; no CRD can be pruned automatically. Each runs on a hydrated-like object
set that violates it, on the same set fixed, and on what the repo ships."""
from __future__ import annotations

import copy
from types import SimpleNamespace
from pathlib import Path

import pytest
import yaml

from forge.argocd.bootstrap import bootstrap_objects
from forge.components import COMPONENTS
from forge.files.emit import labels_for
from forge.fleet import components_of, load_plan_text
from forge.validate.cluster_policies import CrdPrune, PriorityFloor, cluster_plugins, prunes_automatically
from forge.validate.engine import Report
from forge.facts.versions import chart_pins
from tests.helpers import CLUSTERS, REPO, inventory_text, needs_upstream

OURS = labels_for("h200")
CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v, "globalDefault": d}
    for n, v, d in (("urgent-finetune", 100000, False), ("default-training", 10000, True), ("batch-preprocessing", 1000, False))
]


def workload(kind: str, name: str, namespace: str | None, priority: str | None = None, labels: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "image": "x:1"}]}
    if priority:
        spec["priorityClassName"] = priority
    meta: dict = {"name": name, "labels": dict(labels or {})}
    if namespace:
        meta["namespace"] = namespace
    if kind == "CronJob":
        return {"apiVersion": "batch/v1", "kind": kind, "metadata": meta, "spec": {"jobTemplate": {"spec": {"template": {"spec": spec}}}}}
    if kind == "Prometheus":
        return {"apiVersion": "monitoring.coreos.com/v1", "kind": kind, "metadata": meta, "spec": {k: v for k, v in spec.items() if k != "containers"}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": {"template": {"spec": spec}}}


def floor(**exceptions: str) -> PriorityFloor:
    return PriorityFloor({c["metadata"]["name"]: c["value"] for c in CLASSES}, frozenset({"monitoring", "alluxio", "kube-system"}),
                         {"prometheus": "monitoring", "alluxio": "alluxio"}, exceptions, OURS)


def run(plugin, component: str, objects: list[dict]) -> Report:
    report = Report()
    plugin(report, "h200", component, objects)
    return report


def test_infrastructure_pods_without_a_class_above_every_workload_class_fail():
    objects = [
        workload("Deployment", "grafana", "monitoring"),  # no class: the global default, pre-emptible
        workload("StatefulSet", "loki", "monitoring", "default-training"),
        workload("DaemonSet", "exporter", "monitoring", "urgent-finetune"),  # equal to the highest: still pre-emptible by peers
        workload("CronJob", "cleanup", None, "made-up"),  # no namespace: the Application's destination
        workload("Prometheus", "prom", "monitoring"),  # the operator's pods take the CR's class
    ]
    report = run(floor(), "prometheus", objects)
    assert [(f.object, f.path) for f in report.failures] == [
        ("Deployment/monitoring/grafana", "spec.template.spec.priorityClassName"),
        ("StatefulSet/monitoring/loki", "spec.template.spec.priorityClassName"),
        ("DaemonSet/monitoring/exporter", "spec.template.spec.priorityClassName"),
        ("CronJob/cleanup", "spec.jobTemplate.spec.template.spec.priorityClassName"),
        ("Prometheus/monitoring/prom", "spec.priorityClassName"),
    ]
    reasons = [f.reason for f in report.failures]
    assert "global default class, pre-emptible by workload classes up to urgent-finetune (100000)" in reasons[0]
    assert "'default-training' (10000) is not above every workload class (highest 100000)" in reasons[1]
    assert "'urgent-finetune' (100000) is not above" in reasons[2]
    assert "'made-up' is neither a system class nor one the cluster defines" in reasons[3]


def test_system_classes_and_workload_namespaces_pass():
    objects = [
        workload("Deployment", "grafana", "monitoring", "system-cluster-critical"),
        workload("DaemonSet", "exporter", "monitoring", "system-node-critical"),
        workload("Deployment", "trainer", "training-production"),  # a workload namespace: not infrastructure
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": "monitoring"},
         "template": {"spec": {"containers": []}}},  # runs nothing itself
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "monitoring"}},
    ]
    assert run(floor(), "prometheus", objects).failures == []


def test_a_priority_exception_is_a_warning_for_chart_pods_never_for_forges():
    chart_pod = workload("DaemonSet", "alluxio-worker", "alluxio")
    forge_job = workload("Job", "alluxio-mount-buckets", "alluxio", labels=OURS)
    report = run(floor(alluxio="the chart has no priorityClassName value"), "alluxio", [chart_pod, forge_job])
    assert [(f.object, f.reason) for f in report.warnings] == [
        ("DaemonSet/alluxio/alluxio-worker", "priority exception: the chart has no priorityClassName value")]
    assert [f.object for f in report.failures] == ["Job/alluxio/alluxio-mount-buckets"]
    # without the exception the chart's pod fails too
    assert len(run(floor(), "alluxio", [chart_pod]).failures) == 1


def crd(name: str, annotations: dict | None = None) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, **({"annotations": annotations} if annotations else {})}}


def app(prune: bool, options: tuple[str, ...] = ()) -> dict:
    return {"kind": "Application", "metadata": {"name": "h200-widget"},
            "spec": {"syncPolicy": {"automated": {"prune": prune, "selfHeal": True}, "syncOptions": list(options)}}}


def test_a_crd_in_an_automatically_pruning_application_fails():
    objects = [crd("widgets.example.com"), crd("gadgets.example.com", {"argocd.argoproj.io/sync-options": "ServerSideApply=true"}),
               crd("kept.example.com", {"argocd.argoproj.io/sync-options": "ServerSideApply=true, Prune=false"}),
               crd("asked.example.com", {"argocd.argoproj.io/sync-options": "Prune=confirm"})]
    report = run(CrdPrune({"widget": app(True)}), "widget", objects)
    assert [f.object for f in report.failures] == ["CustomResourceDefinition/widgets.example.com", "CustomResourceDefinition/gadgets.example.com"]
    assert all("h200-widget, which prunes automatically, without Prune=false" in f.reason for f in report.failures)
    # the Application never pruning automatically (either way) fixes it
    assert run(CrdPrune({"widget": app(False)}), "widget", objects).failures == []
    assert run(CrdPrune({"widget": app(True, ("Prune=false",))}), "widget", objects).failures == []
    assert not prunes_automatically(app(True, ("Prune=false",))) and prunes_automatically(app(True, ("ServerSideApply=true",)))


# Charts whose upstream data lists CRDs that our values never render.
NO_CRDS_RENDERED = {
    "prometheus": "crds.enabled: false (prometheus-crds ships them)",
    "loki": "its CRDs come with the rollout-operator and grafana-agent-operator subcharts, both off",
}


def _upstream_crds(upstream: Path, component, model, pins) -> list[dict]:
    """Every CRD a component's chart or upstream source can install (the upstream data)."""
    remote = component.remote_base(model)
    if component.name in NO_CRDS_RENDERED or not (component.chart or remote):
        return []
    folder = upstream / (pins[component.chart].data_dir_name if component.chart else f"{component.name}-{remote.revision}")
    # The policy reads kind and metadata only: parse the head of each file (its schema is large).
    return [yaml.safe_load(p.read_text().split("\nspec:", 1)[0]) for p in sorted((folder / "crds").glob("*.yaml"))]


def _patched(obj: dict, patches) -> dict:
    """A remote base's CRD patch (a strategic merge on metadata), as kustomize applies it
    (tests/components/test_training_kuberay.py runs the real kustomize on it)."""
    out = copy.deepcopy(obj)
    for patch in patches:
        if patch["target"].get("kind") == "CustomResourceDefinition":
            out["metadata"].setdefault("annotations", {}).update(yaml.safe_load(patch["patch"])["metadata"]["annotations"])
    return out


def _annotated(obj: dict, component, model) -> dict:
    """A chart that annotates its CRDs from values (external-secrets' `crds.annotations`), as it renders them."""
    extra = ((component.values(model) or {}).get("crds") or {}).get("annotations")
    if not extra:
        return obj
    out = copy.deepcopy(obj)
    out["metadata"].setdefault("annotations", {}).update(extra)
    return out


@needs_upstream
@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_crd_the_charts_and_sources_ship_sits_where_nothing_prunes_it(cluster, upstream: Path):
    """What can be checked here: each component's generated Application with every CRD its chart (or
    upstream source, as its patches leave them) can install."""
    model = load_plan_text(inventory_text(cluster), f"clusters/{cluster}/inventory.yaml").cluster
    components = components_of(model)
    pins = chart_pins(REPO)
    files = bootstrap_objects(model, components, pins)
    apps = {c.name: files[f"apps/application-{c.name}.yaml"] for c in components}
    raw = {c.name: _upstream_crds(upstream, c, model, pins) for c in components}
    shipped = {c.name: [_annotated(_patched(o, c.remote_base(model).patches) if c.remote_base(model) else o, c, model)
                        for o in raw[c.name]] for c in components}
    assert sum(len(v) for v in shipped.values()) > 30
    report = Report()
    for name, objs in shipped.items():
        CrdPrune(apps)(report, cluster, name, objs)
    assert report.failures == []
    # as before this policy: every Application pruning, CRDs as upstream ships them
    before = copy.deepcopy(apps)
    for a in before.values():
        a["spec"]["syncPolicy"]["automated"]["prune"] = True
    report = Report()
    for name, objs in raw.items():
        CrdPrune(before)(report, cluster, name, objs)
    want = {"gpu-operator", "node-feature-discovery", "kuberay-operator", "training-operator", "prometheus-crds", "flyte",
            "external-secrets", "kueue"}
    assert want | ({"network-operator"} if "network-operator" in apps else set()) == {f.component for f in report.failures}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_shipped_rendered_output_passes_both_policies(cluster):
    """forge's own objects of every component, with the generated Applications and PriorityClasses."""
    model = load_plan_text(inventory_text(cluster), f"clusters/{cluster}/inventory.yaml").cluster
    components = components_of(model)
    files = bootstrap_objects(model, components, chart_pins(REPO))
    objects = {c.name: c.manifests(model) for c in components}
    plugins = cluster_plugins(objects, {c.name: files[f"apps/application-{c.name}.yaml"] for c in components}, components, OURS)
    report = Report()
    for name, objs in objects.items():
        for plugin in plugins:
            plugin(report, cluster, name, [{**o, "metadata": {**o["metadata"], "labels": labels_for(cluster)}} for o in objs])
    assert report.failures == []
    floor_plugin = plugins[0]
    assert floor_plugin.classes == {"urgent-finetune": 100000, "interactive": 50000, "default-training": 10000, "batch-preprocessing": 1000}
    assert "flyte" in floor_plugin.infra_namespaces and "training-production" not in floor_plugin.infra_namespaces
    # the reviewed exceptions, and only those
    reviewed = ("alluxio", "network-operator", "gpu-operator", "jupyterhub")
    assert set(floor_plugin.exceptions) == {c.name for c in components if c.name in reviewed}


def test_priority_exceptions_are_reviewed_and_reasoned():
    excepted = {c.name: c.priority_exception for c in COMPONENTS if c.priority_exception}
    # gpu-operator: its hook Jobs; jupyterhub: its hub and proxy (both found hydrating the real charts).
    assert set(excepted) == {"alluxio", "network-operator", "efa-device-plugin", "gpu-operator", "jupyterhub"}
    assert all("priorityclass" in reason.lower() for reason in excepted.values()), excepted


def test_workload_classes_count_from_components_not_selected():
    """`forge validate --hydrated --component X` still knows the classes scheduling ships."""
    components = [SimpleNamespace(name="prometheus", namespace="monitoring", priority_exception="")]
    [floor_plugin, _, _] = cluster_plugins({"prometheus": [], "": CLASSES}, {}, components, OURS)
    pod = workload("Deployment", "grafana", "monitoring", "default-training")
    assert "(highest 100000)" in run(floor_plugin, "prometheus", [pod]).failures[0].reason
    [floor_plugin, _, _] = cluster_plugins({"prometheus": []}, {}, components, OURS)
    assert "neither a system class nor one the cluster defines" in run(floor_plugin, "prometheus", [pod]).failures[0].reason

"""Risk flags on crafted renders: each rule keys on object kinds, values paths and labels, so these
objects stand for what components being built elsewhere (network operator, Flyte quotas, charts
that ship CRDs) will render. Node counts come from this repo's real inventories."""
from __future__ import annotations

import copy

from forge.diff import compare_sides
from forge.diff.objects import identity_of, values_identity
from forge.diff.report import markdown, text
from forge.diff.revisions import Side
from forge.diff.risks import quantity


def side(label: str, clusters, objects=None, values=None) -> Side:
    s = Side(label, clusters=clusters)
    for (cluster, component), objs in (objects or {}).items():
        s.objects[(cluster, component)] = {identity_of(o): o for o in objs}
    s.values = dict(values or {})
    return s


def report_for(clusters, old_objects=None, new_objects=None, old_values=None, new_values=None):
    return compare_sides("main", side("main", clusters, old_objects, old_values), side("working tree", clusters, new_objects, new_values))


def messages(report, kind):
    return [(f.level, f.cluster, f.component, f.message) for f in report.flags if f.kind == kind]


def nic_policy(ofed_version: str, rdma_config: str) -> dict:
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy", "metadata": {"name": "nic-cluster-policy"},
            "spec": {"ofedDriver": {"image": "doca-driver", "version": ofed_version},
                     "rdmaSharedDevicePlugin": {"config": rdma_config},
                     "nvIpam": {"image": "nv-ipam", "version": "v0.3.0"}}}


def test_nic_cluster_policy_driver_change_counts_the_mellanox_nodes(clusters):
    old = nic_policy("25.04-0.6.1.0-2", '{"configList": []}')
    new = copy.deepcopy(old)
    new["spec"]["ofedDriver"]["version"] = "25.07-0.9.7.0-0"
    new["spec"]["nvIpam"]["version"] = "v0.3.1"  # a controller: no DaemonSet on GPU nodes restarts
    report = report_for(clusters, {("h200", "network-operator"): [old]}, {("h200", "network-operator"): [new]})
    assert messages(report, "restart") == [(
        "high", "h200", "network-operator",
        "NicClusterPolicy nic-cluster-policy (mellanox.com) change spec.ofedDriver.version: restarts the DOCA/OFED driver DaemonSet "
        "on 18 nodes with NVIDIA/Mellanox NICs (h200-gpu-01, h200-gpu-02, h200-gpu-03, h200-gpu-04, h200-gpu-05, "
        "h200-gpu-06 and 12 more); the NIC driver is reloaded: RDMA traffic on each node stops until it is back",
    )]


def test_network_operator_values_and_unknown_charts(clusters):
    app = lambda cluster, chart: {  # noqa: E731 - the Application that says which chart reads the values
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": f"{cluster}-x", "namespace": "argocd"},
        "spec": {"sources": [{"repoURL": "https://example.invalid", "chart": chart, "targetRevision": "1.0.0",
                              "helm": {"valueFiles": [f"$values/overlays/{cluster}/x/values.yaml"]}}]}}
    old_values = {("a100", "x"): {"rdmaSharedDevicePlugin": {"resources": 1}, "operator": {"replicas": 1}}}
    new_values = {("a100", "x"): {"rdmaSharedDevicePlugin": {"resources": 2}, "operator": {"replicas": 2}}}
    bootstrap = {("a100", "argocd"): [app("a100", "network-operator")]}
    report = report_for(clusters, bootstrap, bootstrap, old_values, new_values)
    # The A100 fleet has no NVIDIA/Mellanox NIC: the plugin restarts nowhere, and the flag says so.
    assert [m[3] for m in messages(report, "restart")] == [
        "Helm values of chart network-operator change rdmaSharedDevicePlugin.resources: restarts the RDMA shared device plugin "
        "DaemonSet on 0 nodes with NVIDIA/Mellanox NICs; rdma/* resources are re-registered on each node",
    ]
    other = {("a100", "argocd"): [app("a100", "some-chart")]}
    assert messages(report_for(clusters, other, other, old_values, new_values), "restart") == []


def test_daemonset_template_change_counts_nodes_by_selector(clusters):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "log-shipper", "namespace": "loki"},
          "spec": {"template": {"spec": {"nodeSelector": {"forge.exa.ai/role.gpu": "true"},
                                         "containers": [{"name": "alloy", "image": "grafana/alloy:v1.9.0"}]}}}}
    new = copy.deepcopy(ds)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "grafana/alloy:v1.9.1"
    report = report_for(clusters, {("a100", "loki"): [ds]}, {("a100", "loki"): [new]})
    assert messages(report, "restart") == [(
        "high", "a100", "loki",
        "DaemonSet loki/log-shipper (apps): its pod template changes (spec.template.spec.containers[name=alloy].image), "
        "so its pods restart on 10 nodes (a100-gpu-01, a100-gpu-02, a100-gpu-03, a100-gpu-04, a100-gpu-05, a100-gpu-06 and 4 more)",
    )]


def test_quota_reductions_in_resource_quotas_and_values(clusters):
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "team-a", "namespace": "team-a"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "32", "limits.memory": "2Ti", "pods": "100"}}}
    lowered = copy.deepcopy(quota)
    lowered["spec"]["hard"].update({"requests.nvidia.com/gpu": "16", "limits.memory": "1536Gi", "pods": "200"})
    old_values = {("h200", "flyte"): {"customData": {"production": {"projectQuotaGpu": {"value": "64"}, "cpu": {"value": "8"}}}}}
    new_values = {("h200", "flyte"): {"customData": {"production": {"projectQuotaGpu": {"value": "48"}, "cpu": {"value": "4"}}}}}
    report = report_for(clusters, {("h200", "flyte"): [quota]}, {("h200", "flyte"): [lowered]}, old_values, new_values)
    assert messages(report, "quota") == [
        ("medium", "h200", "flyte",
         "quota lowered in Helm values of flyte: customData.production.projectQuotaGpu.value 64 -> 48; running pods above "
         "it keep running, new pods are refused until usage falls below it"),
        ("medium", "h200", "flyte",
         'quota lowered in ResourceQuota team-a/team-a: spec.hard["requests.nvidia.com/gpu"] 32 -> 16, '
         'spec.hard["limits.memory"] 2Ti -> 1536Gi; running pods above it keep running, new pods are refused until usage falls below it'),
    ]


def test_quantities():
    assert quantity("500m") * 2 == 1
    assert quantity("2Ti") == quantity("2048Gi")
    assert quantity("1e3") == 1000
    assert quantity(True) is None and quantity("fast") is None


def test_prune_crd_and_application_removal(clusters):
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "flyte", "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"}}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "flyte-templates", "namespace": "flyte"}, "data": {}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "rayjobs.ray.io"},
           "spec": {"versions": [{"name": "v1", "served": True}]}}
    crd_changed = copy.deepcopy(crd)
    crd_changed["spec"]["versions"][0]["served"] = False
    gone_crd = {**crd, "metadata": {"name": "pytorchjobs.kubeflow.org"}}
    app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
           "metadata": {"name": "h200-flyte", "namespace": "argocd", "finalizers": ["resources-finalizer.argocd.argoproj.io"]}}
    report = report_for(clusters,
                        {("h200", "flyte"): [namespace, config, crd, gone_crd], ("h200", "argocd"): [app]},
                        {("h200", "flyte"): [crd_changed]})
    assert messages(report, "prune") == [
        ("high", "h200", "argocd", "Argo CD deletes Application argocd/h200-flyte (argoproj.io) and everything it deployed"),
        ("high", "h200", "flyte", "Argo CD prunes 1 object: ConfigMap flyte/flyte-templates"),
        ("medium", "h200", "flyte", "Namespace flyte is no longer in git but has Prune=false: Argo CD leaves it running; "
                                    "delete it by hand if that is the intent"),
    ]
    assert messages(report, "crd") == [
        ("high", "h200", "flyte", "CRD pytorchjobs.kubeflow.org is removed: deleting it deletes every custom resource of that kind"),
        ("high", "h200", "flyte", "CRD rayjobs.ray.io changes its schema or served versions (1 field): every custom resource "
                                  "of that kind is affected"),
    ]
    # Risks come first in both formats.
    out = text(report)
    assert out.index("risks (5):") < out.index("h200: 0 added, 1 changed, 4 removed")
    assert out.splitlines()[3].startswith("  HIGH   h200/argocd [prune]")


def test_secret_values_never_appear(clusters):
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s3", "namespace": "alluxio"},
              "data": {"AWS_SECRET_ACCESS_KEY": "c2VjcmV0LW9uZQ=="}, "stringData": {"token": "plain-one"}}
    changed = copy.deepcopy(secret)
    changed["data"]["AWS_SECRET_ACCESS_KEY"] = "c2VjcmV0LXR3bw=="
    changed["stringData"]["token"] = "plain-two"
    added = {**copy.deepcopy(secret), "metadata": {"name": "s3-new", "namespace": "alluxio"}}
    values_old = {("h200", "alluxio"): {"grafana": {"adminPassword": "hunter2", "replicas": 1}}}
    values_new = {("h200", "alluxio"): {"grafana": {"adminPassword": "hunter3", "replicas": 1}}}
    report = report_for(clusters, {("h200", "alluxio"): [secret]}, {("h200", "alluxio"): [changed, added]}, values_old, values_new)
    fields = {f.where for c in report.changes for f in c.fields}
    assert fields == {"data.AWS_SECRET_ACCESS_KEY", "stringData.token", "grafana.adminPassword"}
    for out in (text(report), markdown(report)):
        for leaked in ("c2VjcmV0", "plain-one", "plain-two", "hunter2", "hunter3"):
            assert leaked not in out
        assert "(value changed, not shown)" in out
    assert "AWS_SECRET_ACCESS_KEY: <redacted>" in markdown(report)  # the added Secret: keys shown, values not


def test_values_added_with_a_new_component_and_removed_with_an_old_one(clusters):
    report = report_for(clusters, old_values={("a100", "loki"): {"a": 1}}, new_values={("a100", "flyte"): {"b": 2}})
    assert [(c.component, c.action, c.ident) for c in report.changes] == [
        ("flyte", "added", values_identity("flyte")), ("loki", "removed", values_identity("loki")),
    ]
    assert messages(report, "prune") == []  # values are not objects: the Application's removal is what prunes


def test_upgrade_policy_rolls_nothing_but_tolerations_roll_every_nic_daemonset(clusters):
    old = nic_policy("25.04-0.6.1.0-2", '{"configList": []}')
    old["spec"]["ofedDriver"]["upgradePolicy"] = {"maxParallelUpgrades": 1}
    old["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    new = copy.deepcopy(old)
    new["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"] = 2
    report = report_for(clusters, {("h200", "network-operator"): [old]}, {("h200", "network-operator"): [new]})
    assert messages(report, "restart") == []  # the upgrade controller reads it; no DaemonSet changes
    new["spec"]["tolerations"].append({"key": "exa.ai/drain", "operator": "Exists", "effect": "NoExecute"})
    report = report_for(clusters, {("h200", "network-operator"): [old]}, {("h200", "network-operator"): [new]})
    assert [m[3].split(":")[0:2] for m in messages(report, "restart")] == [
        ["NicClusterPolicy nic-cluster-policy (mellanox.com) change spec.tolerations[1]",
         " restarts every Network Operator DaemonSet (placement or tolerations) on 18 nodes with NVIDIA/Mellanox NICs (h200-gpu-01, h200-gpu-02, h200-gpu-03, h200-gpu-04, h200-gpu-05, h200-gpu-06 and 12 more); every operand pod on each node is recreated, the DOCA/OFED driver included"],
    ]

"""The bootstrap converges from Git (issue 21, items 6-9): AppProjects as wide as their
Applications, Argo CD's own configuration, the PreSync prerequisites check, wave order and
retries that cannot run out before the CRDs exist."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from forge.pod_scripts import prereq_check
from forge.argocd.bootstrap import bootstrap_objects
from forge.argocd.config import health_checks
from forge.fleet import components_of as enabled_components
from forge.fleet import load_plan_text
from forge.validate.fences import rendered_fences, wave_order
from forge.validate.policies import check_policies
from forge.facts.versions import chart_pins
from tests.helpers import REPO, inventory_text


def bootstrap(name="h200"):
    cluster = load_plan_text(inventory_text(name), f"clusters/{name}/inventory.yaml").cluster
    components = list(enabled_components(cluster))
    return cluster, components, bootstrap_objects(cluster, components, chart_pins(REPO))


def kinds(spec, key):
    return {(k["group"], k["kind"]) for k in spec[key]}


# --- item 6: AppProjects as wide as their Applications ----------------------------------------

def test_config_only_projects_cannot_bind_cluster_roles_nor_touch_kube_system():
    _, components, files = bootstrap()
    scheduling = files["appproject-scheduling.yaml"]["spec"]
    # the infrastructure priority's MutatingAdmissionPolicy and its binding are scheduling's too
    assert kinds(scheduling, "clusterResourceWhitelist") == {
        ("", "Namespace"), ("scheduling.k8s.io", "PriorityClass"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding")}
    assert kinds(scheduling, "namespaceResourceWhitelist") == {("networking.k8s.io", "NetworkPolicy")}
    assert [d["namespace"] for d in scheduling["destinations"]] == ["scheduling"]
    # only the two charts that put objects there may deploy into kube-system
    assert {c.name for c in components if "kube-system" in {d["namespace"] for d in files[f"appproject-{c.name}.yaml"]["spec"]["destinations"]}} \
        == {"prometheus", "kueue"}
    crb = ("rbac.authorization.k8s.io", "ClusterRoleBinding")
    assert crb not in kinds(scheduling, "clusterResourceWhitelist")
    assert crb not in kinds(files["appproject-prometheus-crds.yaml"]["spec"], "clusterResourceWhitelist")
    # the charts' own objects forge's render cannot show are declared: Prometheus' Alertmanager
    # Secret and ServiceMonitors, Flyte's Ingress; not ESO's ServiceMonitor, which its chart
    # renders only with serviceMonitor.enabled (off in our values)
    monitor = ("monitoring.coreos.com", "ServiceMonitor")
    assert {("", "Secret"), monitor} <= kinds(files["appproject-prometheus.yaml"]["spec"], "namespaceResourceWhitelist")
    assert ("networking.k8s.io", "Ingress") in kinds(files["appproject-flyte.yaml"]["spec"], "namespaceResourceWhitelist")
    assert monitor not in kinds(files["appproject-external-secrets.yaml"]["spec"], "namespaceResourceWhitelist")


# What each chart renders with forge's values at the pinned version, read from the hydrated output
# of the real charts (docs/charts.md: `make charts MIRROR=DIR`, `make hydrate`): before these were
# declared, `forge validate --hydrated` failed on every one of them ("not in AppProject ...").
PDB, MONITOR = ("policy", "PodDisruptionBudget"), ("monitoring.coreos.com", "ServiceMonitor")
CHART_KINDS = {
    # kueue 0.19.2: enablePrometheus and controllerManager.podDisruptionBudget.enabled are on in our values
    "kueue": {PDB, MONITOR, ("", "Secret")},
    # karpenter 1.14.1: serviceMonitor.enabled in our values, its PodDisruptionBudget by default
    "karpenter": {PDB, MONITOR, ("", "ServiceAccount"), ("", "Service"), ("apps", "Deployment"),
                  ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding")},
    # aws-efa-k8s-device-plugin v0.5.30: one DaemonSet
    "efa-device-plugin": {("apps", "DaemonSet")},
    # jupyterhub 4.4.0 (per hub): hub and proxy, the hub's Secret, database PVC and Role, Ingress, PDBs
    "jupyterhub": {PDB, ("", "Secret"), ("", "PersistentVolumeClaim"), ("", "ConfigMap"), ("", "Service"),
                   ("", "ServiceAccount"), ("apps", "Deployment"), ("networking.k8s.io", "Ingress"),
                   ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding")},
}


@pytest.mark.parametrize("cluster_name", ["h200", "h200-burst", "a100"])
def test_projects_allow_every_kind_the_charts_render_with_our_values(cluster_name):
    _, components, files = bootstrap(cluster_name)
    names = {c.name for c in components}
    for name, want in CHART_KINDS.items():
        if name in names:
            have = kinds(files[f"appproject-{name}.yaml"]["spec"], "namespaceResourceWhitelist")
            assert want <= have, (cluster_name, name, sorted(want - have))


def test_karpenter_may_deploy_its_dns_role_into_kube_system():
    _, components, files = bootstrap("h200-burst")
    assert "karpenter" in {c.name for c in components}
    spec = files["appproject-karpenter.yaml"]["spec"]
    assert sorted(d["namespace"] for d in spec["destinations"]) == ["karpenter", "kube-system"]


def _rendered(files):
    """The bootstrap as `forge render` gives it (component "argocd")."""
    return [o for n, o in files.items() if not n.endswith("kustomization.yaml")]


def test_validate_fails_on_an_object_its_applications_project_does_not_allow():
    cluster, components, files = bootstrap()
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "escalate"}}
    in_kube_system = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}}
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "y"}}
    objects = {"argocd": _rendered(files), "scheduling": [crb, in_kube_system], "loki": [lease]}
    found = {(f.component, f.object, f.path) for f in rendered_fences(cluster, components, objects)}
    assert found == {("scheduling", "ClusterRoleBinding/escalate", "kind"),
                     ("scheduling", "ConfigMap/kube-system/x", "kind"),
                     ("scheduling", "ConfigMap/kube-system/x", "metadata.namespace"),
                     ("loki", "Lease/y", "kind")}
    ok = {"argocd": _rendered(files), "kueue": [dict(in_kube_system, kind="ConfigMap")]}
    assert rendered_fences(cluster, components, ok) == []


# --- item 7: Argo CD's own configuration in Git ----------------------------------------------

def test_repository_secrets_declare_every_source_and_kueues_oci_registry():
    _, _, files = bootstrap()
    repos = {o["stringData"]["url"]: o["stringData"] for n, o in files.items() if n.startswith("config/secret-")}
    assert repos["registry.k8s.io/kueue/charts"] == {"url": "registry.k8s.io/kueue/charts", "type": "helm",
                                                     "name": "registry-k8s-io-kueue-charts", "enableOCI": "true"}
    assert repos["https://github.com/exa-labs/forge.git"]["type"] == "git"
    assert repos["https://github.com/kubeflow/trainer.git"]["type"] == "git"
    every = {r for n, o in files.items() if n.startswith("appproject-") for r in o["spec"]["sourceRepos"]}
    assert set(repos) == every
    for n, o in files.items():
        if n.startswith("config/"):
            assert o["metadata"]["labels"]["app.kubernetes.io/part-of"] == "argocd"
            assert int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) < -90  # before the projects
    labels = {"app.kubernetes.io/part-of": "forge"}
    secret = files["config/secret-repo-registry-k8s-io-kueue-charts.yaml"]
    assert check_policies(secret, required_labels=labels) == []
    leaked = dict(secret, stringData={**secret["stringData"], "password": "hunter2"})
    assert [p for p, _ in check_policies(leaked, required_labels=labels)] == ["stringData.password"]
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": labels}, "stringData": {"url": "x"}}
    assert [p for p, _ in check_policies(plain, required_labels=labels)] == ["stringData"]


lupa = pytest.importorskip("lupa.lua51")  # Argo CD's gopher-lua is Lua 5.1


def health(key, obj):
    """Run an argocd-cm health script as Argo CD does: `obj` global, a table returned, Lua's
    libraries only where argocd-cm's useOpenLibs key for the kind says so."""
    checks = health_checks()
    kind = key.removeprefix("resource.customizations.health.")
    return run_health(checks[key], obj, open_libs=checks.get(f"resource.customizations.useOpenLibs.{kind}") == "true")


# What Argo CD v3.6.2 gives a health script without useOpenLibs (util/lua/lua.go): base, table, a
# safe os; no string, math, io, debug nor coroutine, nor string methods ("x"):sub().
SANDBOX = ('debug.setmetatable("", nil)\n'
           "string, math, io, debug, coroutine, utf8 = nil, nil, nil, nil, nil, nil")


def run_health(script, obj, open_libs=False):
    """Run a health script (forge's or Argo CD's built-in health.lua) on `obj`: (status, message)."""
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)
    to_lua = lua.eval("function(s) return s end")
    if not open_libs:
        lua.execute(SANDBOX)

    def table(value):
        if isinstance(value, dict):
            return lua.table_from({k: table(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([table(v) for v in value])
        return value

    lua.globals().obj = table(obj)
    result = lua.execute(script)
    assert to_lua is not None
    return result["status"], result["message"]


@pytest.mark.parametrize("kind", ["nvidia.com_ClusterPolicy", "nvidia.com_NVIDIADriver", "mellanox.com_NicClusterPolicy"])
def test_operator_policies_are_progressing_until_ready(kind):
    key = f"resource.customizations.health.{kind}"
    assert health(key, {"spec": {}})[0] == "Progressing"  # no status yet: the operator has not seen it
    assert health(key, {"status": {"state": "notReady"}})[0] == "Progressing"
    assert health(key, {"status": {"state": "ready"}})[0] == "Healthy"
    bad = {"nvidia.com_ClusterPolicy": "ignored", "nvidia.com_NVIDIADriver": "disabled", "mellanox.com_NicClusterPolicy": "error"}[kind]
    status, message = health(key, {"status": {"state": bad, "conditions": [
        {"type": "Ready", "status": "False", "message": "driver pods failing on node gpu-1"}]}})
    assert status == "Degraded" and "driver pods failing on node gpu-1" in message


APP = "resource.customizations.health.argoproj.io_Application"
SYNCED = {"sync": {"status": "Synced"}, "operationState": {"phase": "Succeeded"}}


def test_application_health_is_the_childs_own_once_synced():
    assert health(APP, {"status": {}})[0] == "Progressing"
    assert health(APP, {"status": {**SYNCED, "health": {"status": "Healthy"}}}) == ("Healthy", "")
    assert health(APP, {"status": {**SYNCED, "health": {"status": "Degraded", "message": "x"}}}) == ("Degraded", "x")
    # drift after a successful sync (a field a controller rewrites) is judged by health, not held
    drifted = {"sync": {"status": "OutOfSync"}, "operationState": {"phase": "Succeeded"}, "health": {"status": "Healthy"}}
    assert health(APP, {"status": drifted}) == ("Healthy", "")


def test_a_child_that_cannot_render_or_has_not_synced_holds_the_later_waves():
    # What the real Argo CD v3.6.2 reported in the box for a chart it could not pull: Healthy (no
    # resources), sync Unknown, a ComparisonError; the documented check let the root run every wave.
    unrendered = {"health": {"status": "Healthy"}, "sync": {"status": "Unknown"}, "conditions": [
        {"type": "ComparisonError", "message": "Failed to load target state: failed to generate manifest"}]}
    assert health(APP, {"status": unrendered}) == (
        "Progressing", "ComparisonError: Failed to load target state: failed to generate manifest")
    # created by the root, its first sync not yet run: no resources, so Healthy by its own account
    assert health(APP, {"status": {"health": {"status": "Healthy"}, "sync": {"status": "OutOfSync"}}}) == (
        "Progressing", "not yet synced")
    # a failed sync, retrying (alloy's PodMonitor before the CRD's wave)
    failing = {"health": {"status": "Healthy"}, "sync": {"status": "OutOfSync"}, "operationState": {
        "phase": "Running", "message": 'resource mapping not found: no matches for kind "PodMonitor"'}}
    assert health(APP, {"status": failing}) == (
        "Progressing", 'sync Running: resource mapping not found: no matches for kind "PodMonitor"')


def test_the_root_syncing_itself_does_not_wait_for_itself():
    # What the real Argo CD v3.6.2 showed in the box: the root's wave 0 holds root-application.yaml,
    # and its sync waited for its own health ("waiting for healthy state of .../a100-root") for ever.
    running = {"health": {"status": "Healthy"}, "sync": {"status": "OutOfSync"}, "operationState": {
        "phase": "Running", "message": "waiting for healthy state of argoproj.io/Application/a100-root"}}

    def app(name, tracked_by):
        return {"metadata": {"name": name, "namespace": "argocd", "annotations": {
            "argocd.argoproj.io/tracking-id": f"{tracked_by}:argoproj.io/Application:argocd/{name}"}}, "status": running}

    assert health(APP, app("a100-root", "a100-root"))[0] == "Healthy"
    assert health(APP, {"metadata": {"name": "a100-root", "labels": {"app.kubernetes.io/instance": "a100-root"}},
                        "status": running})[0] == "Healthy"
    # a child the root tracks, with the same status, still holds the wave (a name that only starts alike too)
    assert health(APP, app("a100-scheduling", "a100-root"))[0] == "Progressing"
    assert health(APP, app("a100-root", "a100-root-2"))[0] == "Progressing"


# --- item 8: the PreSync check ---------------------------------------------------------------

def test_root_runs_the_prerequisites_check_before_anything_else():
    _, _, files = bootstrap()
    job = files["prerequisites/job.yaml"]
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PreSync"
    for name in ("serviceaccount", "configmap", "clusterrole", "clusterrolebinding"):
        meta = files[f"prerequisites/{name}.yaml"]["metadata"]["annotations"]
        assert meta["argocd.argoproj.io/hook"] == "PreSync" and int(meta["argocd.argoproj.io/hook-weight"]) < 0
    spec = json.loads(files["prerequisites/configmap.yaml"]["data"]["prerequisites.json"])
    # the homes of developer pods on network storage (components.jupyterhub.home_storage_class) must exist too
    assert spec["storage_classes"] == ["local-path", "nfs-homes"] and spec["ingress_classes"] == ["nginx"]
    assert spec["secrets"] == [{"namespace": "external-secrets", "name": "external-secrets-aws",
                                "keys": ["access-key-id", "secret-access-key"]}]
    assert "calico-node" in spec["cni"] and "cilium" in spec["cni"]
    assert files["prerequisites/configmap.yaml"]["data"]["check.py"] == open(prereq_check.__file__, encoding="utf-8").read()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"].startswith("docker.io/library/python:3.")


class _Api(BaseHTTPRequestHandler):
    """A stand-in API server on 127.0.0.1 serving fixed objects (not Kubernetes: the check only GETs)."""

    objects: dict = {}

    def do_GET(self):  # noqa: N802
        body = self.objects.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body if body is not None else {"kind": "Status", "code": 404}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture()
def api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_prerequisites_check_prints_one_line_per_missing_prerequisite(api, tmp_path, capsys):
    _, _, files = bootstrap()
    spec = tmp_path / "prerequisites.json"
    spec.write_text(files["prerequisites/configmap.yaml"]["data"]["prerequisites.json"])
    served = discovery(json.loads(spec.read_text())["apis"])
    _Api.objects = {**served, "/apis/apps/v1/daemonsets": {"items": [{"metadata": {"name": "kube-flannel-ds"}, "status": {"numberReady": 3}}]}}
    assert prereq_check.main([str(spec), "--api", api]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(line.startswith("missing prerequisite: ") for line in lines)
    assert "NetworkPolicy" in lines[0] and "StorageClass local-path" in lines[1] and "StorageClass nfs-homes" in lines[2]
    assert "IngressClass nginx" in lines[3] and "Secret external-secrets/external-secrets-aws" in lines[4]
    _Api.objects = {
        **served,
        "/apis/apps/v1/daemonsets": {"items": [{"metadata": {"name": "calico-node"}, "status": {"numberReady": 3}}]},
        "/apis/storage.k8s.io/v1/storageclasses/local-path": {"kind": "StorageClass"},
        "/apis/storage.k8s.io/v1/storageclasses/nfs-homes": {"kind": "StorageClass"},
        "/apis/networking.k8s.io/v1/ingressclasses/nginx": {"kind": "IngressClass"},
        "/api/v1/namespaces/external-secrets/secrets/external-secrets-aws": {"data": {"access-key-id": "QQ=="}},
    }
    assert prereq_check.main([str(spec), "--api", api]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "missing prerequisite: Secret external-secrets/external-secrets-aws has no key secret-access-key: add it (docs/bootstrap.md)"]
    _Api.objects["/api/v1/namespaces/external-secrets/secrets/external-secrets-aws"]["data"]["secret-access-key"] = "QQ=="
    assert prereq_check.main([str(spec), "--api", api]) == 0


def discovery(apis: dict) -> dict:
    """The stand-in's discovery documents: each group/version serving the kinds listed."""
    return {("/api/v1" if gv == "v1" else f"/apis/{gv}"): {"resources": [{"kind": k} for k in kinds]} for gv, kinds in apis.items()}


def test_prerequisites_check_names_each_api_the_server_does_not_serve(api, tmp_path, capsys):
    # Issue 30: the API server built with default flags serves no MutatingAdmissionPolicy; h200's
    # scheduling wave carries one. One line per group/version; the beta one served without its gate too.
    _, _, files = bootstrap()
    spec = tmp_path / "prerequisites.json"
    spec.write_text(files["prerequisites/configmap.yaml"]["data"]["prerequisites.json"])
    apis = json.loads(spec.read_text())["apis"]
    assert apis["admissionregistration.k8s.io/v1beta1"] == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"]
    served = discovery({gv: kinds for gv, kinds in apis.items() if gv != "admissionregistration.k8s.io/v1beta1"})
    _Api.objects = served
    assert prereq_check.missing_apis(apis, prereq_check.api_getter(api, None, None)) == [
        "missing prerequisite: API admissionregistration.k8s.io/v1beta1 (forge's objects use it: MutatingAdmissionPolicy, "
        "MutatingAdmissionPolicyBinding): the API server does not serve it; turn it on (--runtime-config, docs/bootstrap.md) "
        "or state in cluster.api_server what the cluster serves and regenerate"]
    _Api.objects = {**served, **discovery({"admissionregistration.k8s.io/v1beta1": ["ValidatingAdmissionPolicy"]})}
    [line] = prereq_check.missing_apis(apis, prereq_check.api_getter(api, None, None))
    assert line.startswith("missing prerequisite: API admissionregistration.k8s.io/v1beta1 serves no MutatingAdmissionPolicy, "
                           "MutatingAdmissionPolicyBinding")
    _Api.objects = discovery(apis)
    assert prereq_check.missing_apis(apis, prereq_check.api_getter(api, None, None)) == []


# --- item 9: wave order and retries ----------------------------------------------------------

def test_applications_needing_anothers_crds_come_later_and_never_stop_retrying():
    cluster, components, files = bootstrap()
    apps = {n.removeprefix("apps/application-").removesuffix(".yaml"): o for n, o in files.items() if n.startswith("apps/")}
    limit = {n: a["spec"]["syncPolicy"]["retry"]["limit"] for n, a in apps.items()}
    wave = {n: int(a["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for n, a in apps.items()}
    # ExternalSecrets, ServiceMonitors, NodeFeatureRules, Kueue's own queues: unlimited, after their CRDs
    for name in ("external-secrets", "kueue", "flyte", "prometheus", "loki", "alluxio", "gpu-operator", "node-feature-discovery"):
        assert limit[name] == -1, name
    assert wave["external-secrets"] < wave["prometheus-crds"] < wave["kueue"] < wave["flyte"] < wave["prometheus"]
    assert {n for n, v in limit.items() if v == 10} == {"scheduling", "prometheus-crds", "training-operator", "kuberay-operator"}
    assert files["root-application.yaml"]["spec"]["syncPolicy"]["retry"]["limit"] == -1
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m"}}
    assert wave_order(cluster, components, {"argocd": _rendered(files), "kueue": [monitor]}) == []
    early = _rendered(files)
    for o in early:
        if o["kind"] == "Application" and o["metadata"]["name"] == "h200-scheduling":
            o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = "-20"
    found = [(f.path, f.reason) for f in wave_order(cluster, components, {"argocd": early, "scheduling": [monitor]})]
    assert [f for f, _ in found] == ["metadata.annotations.argocd.argoproj.io/sync-wave", "spec.syncPolicy.retry.limit"]
    assert "prometheus-crds" in found[0][1] and "want -1" in found[1][1]

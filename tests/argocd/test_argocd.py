"""The Argo CD bootstrap: project boundaries, multi-source Applications, ordering, and the
component shape every plug-in follows."""
from __future__ import annotations

import yaml

from forge.argocd.bootstrap import bootstrap_objects
from forge.facts.versions import chart_pins
from forge.components import COMPONENTS
from forge.fleet import components_of as enabled_components
from forge.fleet import load_plan_text
from tests.helpers import REPO, generated, inventory_text


def h200_bootstrap():
    cluster = load_plan_text(inventory_text("h200"), "clusters/h200/inventory.yaml").cluster
    components = enabled_components(cluster)
    return cluster, components, bootstrap_objects(cluster, components, chart_pins(REPO))


def test_app_projects_allow_only_this_repo_the_pinned_charts_and_the_cluster():
    cluster, components, files = h200_bootstrap()
    pins = chart_pins(REPO)
    remotes = {r.repo_url for c in components if (r := c.remote_base(cluster))}
    assert remotes == {"https://github.com/kubeflow/trainer.git"}
    for c in components:
        spec = files[f"appproject-{c.name}.yaml"]["spec"]
        # this repo, plus the component's own chart or kustomize source at a pinned tag
        own = {pins[c.chart].argocd_repo} if c.chart else set()
        own |= {r.repo_url} if (r := c.remote_base(cluster)) else set()
        assert spec["sourceRepos"] == sorted({"https://github.com/exa-labs/forge.git"} | own), c.name
        assert {d["server"] for d in spec["destinations"]} == {"https://kubernetes.default.svc"}
        assert sorted(d["namespace"] for d in spec["destinations"]) == sorted(set(c.namespaces(cluster)))
        kinds = {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"] + spec["namespaceResourceWhitelist"]}
        assert not {g for g, _ in kinds} & {"argoproj.io", "*"} and ("*", "*") not in kinds
    flyte = files["appproject-flyte.yaml"]["spec"]
    assert "training-production" in {d["namespace"] for d in flyte["destinations"]}
    nfd = {(k["group"], k["kind"]) for k in files["appproject-node-feature-discovery.yaml"]["spec"]["clusterResourceWhitelist"]}
    assert ("", "Namespace") in nfd and ("nfd.k8s-sigs.io", "NodeFeatureRule") in nfd


def test_component_application_is_multi_source_with_values_from_this_repo():
    _, _, files = h200_bootstrap()
    app = files["apps/application-gpu-operator.yaml"]
    chart, values_ref, overlay = app["spec"]["sources"]
    assert (chart["chart"], chart["targetRevision"]) == ("gpu-operator", chart_pins(REPO)["gpu-operator"].version)
    assert chart["helm"]["valueFiles"] == ["$values/overlays/h200/gpu-operator/values.yaml"]
    assert values_ref == {"repoURL": "https://github.com/exa-labs/forge.git", "targetRevision": "forge/ring/fleet", "ref": "values"}
    assert overlay["path"] == "overlays/h200/gpu-operator"
    assert "ServerSideApply=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert "resources-finalizer.argocd.argoproj.io" not in app["metadata"].get("finalizers", [])


def test_root_application_syncs_the_whole_bootstrap_in_its_own_project():
    cluster, components, files = h200_bootstrap()
    root = files["root-application.yaml"]
    # The whole folder, itself included: after the one `kubectl apply` everything comes from Git.
    assert root["spec"]["source"]["path"] == "clusters/h200/argocd"
    apps = generated("clusters/h200/argocd/apps/kustomization.yaml")["resources"]
    assert apps and all(r.startswith("application-") for r in apps)
    assert set(generated("clusters/h200/argocd/kustomization.yaml")["resources"]) == {
        "appproject-bootstrap.yaml", "root-application.yaml", *(f"appproject-{c.name}.yaml" for c in components),
        "apps", "config", "prerequisites"}
    assert root["spec"]["project"] == files["appproject-bootstrap.yaml"]["metadata"]["name"] == "forge-h200-bootstrap"
    boot = files["appproject-bootstrap.yaml"]["spec"]
    assert boot["sourceRepos"] == ["https://github.com/exa-labs/forge.git"]
    assert boot["destinations"] == [{"server": "https://kubernetes.default.svc", "namespace": "argocd"}]
    assert {(k["group"], k["kind"]) for k in boot["clusterResourceWhitelist"]} == {
        ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding")}
    assert {(k["group"], k["kind"]) for k in boot["namespaceResourceWhitelist"]} == {
        ("argoproj.io", "Application"), ("argoproj.io", "AppProject"), ("", "ConfigMap"), ("", "Secret"),
        ("", "ServiceAccount"), ("batch", "Job")}
    # Every child in its own component's project, none of which may deploy to Argo CD's namespace.
    for c in components:
        assert files[f"apps/application-{c.name}.yaml"]["spec"]["project"] == f"forge-h200-{c.name}"
        spec = files[f"appproject-{c.name}.yaml"]["spec"]
        assert "argocd" not in {d["namespace"] for d in spec["destinations"]}


def test_every_component_has_a_base_with_its_namespace_and_protection():
    # Each component's namespace is shipped by exactly one base (two Applications owning one
    # Namespace would fight over it): prometheus-crds, CRDs only, leaves `monitoring` to prometheus.
    shipped: dict[str, list[str]] = {}
    for component in COMPONENTS:
        base = REPO / "base" / component.name
        assert (base / "kustomization.yaml").is_file(), component.name
        docs = [yaml.safe_load(p.read_text()) for p in sorted(base.glob("*.yaml")) if p.name != "kustomization.yaml"]
        namespaces = [d for d in docs if d["kind"] == "Namespace"]
        assert [n["metadata"]["name"] for n in namespaces] in ([component.namespace], []), component.name
        for n in namespaces:
            shipped.setdefault(n["metadata"]["name"], []).append(component.name)
            ns = n["metadata"]
            assert ns["labels"]["pod-security.kubernetes.io/enforce"] in {"privileged", "baseline", "restricted"}
            assert ns["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false,Delete=false"
    for component in COMPONENTS:
        assert len(shipped.get(component.namespace, [])) == 1, (component.name, shipped.get(component.namespace))
        if component.chart:
            assert component.chart in chart_pins(REPO), f"{component.name}: chart '{component.chart}' not pinned"


def test_exactly_one_node_feature_discovery_per_cluster():
    """Only the node-feature-discovery component deploys NFD: every chart that bundles one has it off."""
    for cluster_name in ("a100", "h200"):
        cluster = load_plan_text(inventory_text(cluster_name), f"clusters/{cluster_name}/inventory.yaml").cluster
        bundling = {}
        for component in enabled_components(cluster):
            values = component.values(cluster) or {}
            for key in ("nfd", "node-feature-discovery"):
                if key in values:
                    bundling[component.name] = values[key]
        assert "node-feature-discovery" in {c.name for c in enabled_components(cluster)}
        assert bundling.get("gpu-operator") == {"enabled": False}
        if "network-operator" in {c.name for c in enabled_components(cluster)}:
            assert bundling["network-operator"]["enabled"] is False
        assert all(v.get("enabled") is False for v in bundling.values()), bundling


def test_crd_only_application_is_never_pruned_automatically():
    _, _, files = h200_bootstrap()
    assert files["apps/application-prometheus-crds.yaml"]["spec"]["syncPolicy"]["automated"] == {"prune": False, "selfHeal": True}
    # Operators whose charts ship CRDs that values cannot annotate Prune=false never prune automatically either
    # (forge.validate.cluster_policies); the rest keep pruning.
    for name in ("gpu-operator", "network-operator", "node-feature-discovery", "kuberay-operator", "flyte", "kueue"):
        assert files[f"apps/application-{name}.yaml"]["spec"]["syncPolicy"]["automated"] == {"prune": False, "selfHeal": True}, name
    for name in ("training-operator", "prometheus", "loki", "alluxio", "alloy", "scheduling"):
        assert files[f"apps/application-{name}.yaml"]["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}, name


# Fields controllers and hooks rewrite at run time, per Application: exactly these, nothing more.
PROMETHEUS_WEBHOOK_FIELDS = [".webhooks[]?.clientConfig.caBundle", ".webhooks[]?.failurePolicy"]
IGNORED = {
    # kube-prometheus-stack's admission patch Job writes its CA into both webhook configurations and
    # sets their failurePolicy (prometheus-community/helm-charts 4914, 2516)
    "prometheus": [
        {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
         "name": "prometheus-kube-prometheus-admission", "jqPathExpressions": PROMETHEUS_WEBHOOK_FIELDS},
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "name": "prometheus-kube-prometheus-admission", "jqPathExpressions": PROMETHEUS_WEBHOOK_FIELDS},
    ],
    # ESO's cert-controller writes (and renews) the CA of both of its ValidatingWebhookConfigurations
    "external-secrets": [
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    ],
    # Kueue's internal cert manager writes its serving certificate and every CA it serves: webhooks,
    # the CRDs' conversion webhook, the visibility APIService
    "kueue": [
        {"group": "", "kind": "Secret", "name": "kueue-webhook-server-cert", "namespace": "kueue-system", "jsonPointers": ["/data"]},
        {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
        {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
         "jqPathExpressions": [".spec.conversion.webhook.clientConfig.caBundle"]},
        {"group": "apiregistration.k8s.io", "kind": "APIService", "jsonPointers": ["/spec/caBundle"]},
    ],
    # flyte's init container fills the chart's cookie/token key Secret at first start (issue 21 item 1)
    "flyte": [{"group": "", "kind": "Secret", "name": "flyte-admin-auth", "jsonPointers": ["/data"]}],
    # the training-operator writes its own serving certificate and the webhook's CA
    "training-operator": [
        {"group": "", "kind": "Secret", "name": "training-operator-webhook-cert", "namespace": "kubeflow", "jsonPointers": ["/data"]},
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "name": "validator.training-operator.kubeflow.org", "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    ],
    # jupyterhub's chart generates the hub tokens at every render (no `lookup` under Argo CD):
    # the live ones are kept, and the hub's and proxy's checksums of them ignored
    "jupyterhub": [
        {"group": "", "kind": "Secret", "jsonPointers": ["/data/hub.config.ConfigurableHTTPProxy.auth_token",
                                                        "/data/hub.config.JupyterHub.cookie_secret",
                                                        "/data/hub.config.CryptKeeper.keys"]},
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/template/metadata/annotations/checksum~1secret",
                                                                "/spec/template/metadata/annotations/checksum~1auth-token"]},
    ],
}


def test_applications_ignore_exactly_the_fields_hooks_and_controllers_rewrite():
    """Audited: gpu-operator, network-operator (maintenance operator webhook off), NFD, kuberay,
    loki (rollout-operator off) and alluxio render no webhook, CA bundle or conversion webhook
    a controller rewrites; their Applications ignore nothing."""
    _, components, files = h200_bootstrap()
    assert {"gpu-operator", "network-operator", "node-feature-discovery", "kuberay-operator", "loki", "alluxio",
            "flyte", "prometheus", "training-operator", "external-secrets"} <= {c.name for c in components}
    for component in components:
        spec = files[f"apps/application-{component.name}.yaml"]["spec"]
        want = IGNORED.get(component.name)
        assert spec.get("ignoreDifferences") == want, component.name
        # RespectIgnoreDifferences: syncs leave those fields alone too, so self-heal never fights the Job
        assert ("RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"]) == bool(want), component.name


def test_generated_prometheus_application_carries_the_webhook_entries():
    for cluster in ("h200", "a100"):
        app = yaml.safe_load((REPO / f"clusters/{cluster}/argocd/apps/application-prometheus.yaml").read_text())
        assert app["spec"]["ignoreDifferences"] == IGNORED["prometheus"]
        assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]

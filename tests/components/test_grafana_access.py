"""Grafana reachable behind the login, Prometheus never public (issues 33 and 31: "no Ingress
serves Grafana or Prometheus, and Prometheus has no authentication"), on the generated overlays
of the shipped fleets and edited copies of their inventories (forge.components.grafana_access)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from forge.components.prometheus import GRAFANA_DEPLOYMENT, Prometheus
from forge.model.cluster import ClusterModel
from tests.helpers import CLUSTERS, REPO, edit, generated, generated_dir, inventory_text, line_of, model, problems_of, rendered
from tests.observability.test_hydrated import kps_render, problems

SOURCE_RANGE = "nginx.ingress.kubernetes.io/whitelist-source-range"
SECRET_ENV = "GF_AUTH_GENERIC_OAUTH_CLIENT_SECRET"
GRAFANA_PODS = {"app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "prometheus"}
PROMETHEUS_PODS = {"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/managed-by": "prometheus-operator"}


def values(cluster: str) -> dict[str, Any]:
    return generated(f"overlays/{cluster}/prometheus/values.yaml")


def flyte(cluster: str) -> Any:
    return model(cluster).component_settings["flyte"]


def host(cluster: str) -> str:
    return urlsplit(str(flyte(cluster).grafana_url)).hostname


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_grafana_ingress_has_tls_the_source_range_and_flytes_log_link_host(cluster):
    ing = values(cluster)["grafana"]["ingress"]
    assert ing["enabled"] is True and ing["ingressClassName"] == "nginx"
    assert ing["hosts"] == [host(cluster)] == [f"grafana.{cluster}.exa.internal"]
    assert ing["tls"] == [{"secretName": "grafana-tls", "hosts": [host(cluster)]}]
    assert ing["annotations"][SOURCE_RANGE] == ",".join(flyte(cluster).ingress.source_ranges)
    # The certificate comes from the secret store, as Flyte's (no cluster_issuer).
    tls = generated(f"overlays/{cluster}/prometheus/externalsecret-grafana-tls.yaml")
    assert tls["spec"]["target"]["name"] == "grafana-tls" and tls["spec"]["target"]["template"]["type"] == "kubernetes.io/tls"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_grafana_access_sets_no_key_to_the_subcharts_own_default(cluster, upstream):
    """The real hydration warned: `grafana.ingress.path: "/"` is already grafana 12.11.1's default."""
    from forge.components.grafana_access import chart_values
    from forge.upstream.chart import Chart
    from forge.upstream.reads import redundant_keys
    data = upstream / "kube-prometheus-stack-88.5.3"

    def chart(name: str, folder, subcharts=None) -> Chart:
        return Chart(name, "", "application", yaml.safe_load((folder / "values.yaml").read_text()), {}, {}, [], subcharts or {})
    kps = chart("kube-prometheus-stack", data, {"grafana": chart("grafana", data / "subcharts" / "grafana")})
    m = model(cluster)
    ours = {"grafana": chart_values(Prometheus().settings(m).grafana, m.component_settings["flyte"])}
    assert redundant_keys(kps, ours) == []


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_prometheus_and_alertmanager_get_no_ingress(cluster, upstream):
    ours = values(cluster)
    defaults = yaml.safe_load((upstream / "kube-prometheus-stack-88.5.3" / "values.yaml").read_text())
    for part in ("prometheus", "alertmanager"):
        assert "ingress" not in ours[part] and defaults[part]["ingress"]["enabled"] is False  # the chart's default: off
        assert "route" not in ours[part]
    assert [o["metadata"]["name"] for o in kps_render(ours) if o["kind"] == "Ingress"] == [GRAFANA_DEPLOYMENT]
    assert not [o for o in rendered(cluster, "prometheus") if o["kind"] == "Ingress"]  # none of forge's own either


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_login_is_the_clusters_oidc_issuer_only_with_the_secret_from_a_secret(cluster):
    grafana = values(cluster)["grafana"]
    ini = grafana["grafana.ini"]
    oauth = ini["auth.generic_oauth"]
    issuer = flyte(cluster).auth.issuer
    assert oauth["enabled"] is True and oauth["scopes"] == "openid profile email" and oauth["client_id"] == f"grafana-{cluster}"
    assert {oauth[k] for k in ("auth_url", "token_url", "api_url")} == {
        f"{issuer}/protocol/openid-connect/{e}" for e in ("auth", "token", "userinfo")}
    assert oauth["role_attribute_path"] == "(contains(groups[*], 'gpu-platform-admins')) && 'Admin' || 'Viewer'"
    assert ini["auth"]["disable_login_form"] is True and ini["auth.anonymous"]["enabled"] is False
    assert ini["server"]["root_url"] == f"https://{host(cluster)}/"
    # The client secret: never a literal, only a reference to the Secret External Secrets makes.
    assert "client_secret" not in oauth and "env" not in grafana
    assert grafana["envValueFrom"] == {SECRET_ENV: {"secretKeyRef": {"name": "grafana-oidc", "key": "client_secret"}}}
    made = generated(f"overlays/{cluster}/prometheus/externalsecret-grafana-oidc.yaml")
    assert made["spec"]["target"]["name"] == "grafana-oidc" and list(made["spec"]["target"]["template"]["data"]) == ["client_secret"]
    assert made["spec"]["data"] == [{"secretKey": "client_secret",
                                     "remoteRef": {"key": f"forge/{cluster}/grafana-oidc", "property": "client_secret"}}]


def test_the_hydrated_check_catches_a_chart_that_drops_tls_source_range_or_secret():
    cluster: ClusterModel = model("a100")
    ours = Prometheus().values(cluster)
    expected = Prometheus().expected_in_hydrated(cluster)
    assert problems(kps_render(ours), expected) == []
    ours["grafana"]["ingress"]["tls"] = []
    ours["grafana"]["ingress"]["annotations"] = {}
    ours["grafana"]["envValueFrom"] = {}
    found = {(kind, path) for kind, path, _ in problems(kps_render(ours), expected)}
    assert found == {("Ingress", "spec.tls"), ("Ingress", f"metadata.annotations.{SOURCE_RANGE}"),
                     ("Deployment", f"spec.template.spec.containers.name=grafana.env.name={SECRET_ENV}")}
    # A chart that relabels the pods (the NetworkPolicies would select nothing), moves the port, or
    # drops PKCE and the login form switch from grafana.ini.
    ours = Prometheus().values(cluster)
    del ours["grafana"]["grafana.ini"]["auth"], ours["grafana"]["grafana.ini"]["auth.generic_oauth"]["use_pkce"]
    out = kps_render(ours)
    [pod] = [o["spec"]["template"] for o in out if o["kind"] == "Deployment"]
    pod["metadata"]["labels"]["app.kubernetes.io/instance"] = "grafana"
    pod["spec"]["containers"][1]["ports"][0]["containerPort"] = 8080
    found = {(kind, path) for kind, path, _ in problems(out, expected)}
    assert found == {("Deployment", "spec.template.metadata.labels.app.kubernetes.io/instance"),
                     ("Deployment", "spec.template.spec.containers.name=grafana.ports.name=grafana.containerPort"),
                     ("ConfigMap", "data.grafana.ini.auth.disable_login_form"),
                     ("ConfigMap", "data.grafana.ini.auth.generic_oauth.use_pkce")}


def selects(policy: dict, labels: dict[str, str]) -> bool:
    sel = policy["spec"]["podSelector"]
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for e in sel.get("matchExpressions") or []:
        if (e["operator"] == "NotIn" and labels.get(e["key"]) in e["values"]) or (
                e["operator"] == "In" and labels.get(e["key"]) not in e["values"]):
            return False
    return True


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_prometheus_admits_only_grafana_and_itself_and_grafana_the_ingress_controller(cluster):
    monitoring = [p for p in generated_dir(f"overlays/{cluster}/prometheus", "networkpolicy-")]
    to_prometheus = [p for p in monitoring if selects(p, PROMETHEUS_PODS)]
    peers = set()
    for policy in to_prometheus:
        for rule in policy["spec"].get("ingress") or []:
            ports = {p["port"] for p in rule["ports"]} if "ports" in rule else {"any"}
            if ports == {10250}:  # the operator's webhook port, open to the API server: Prometheus does not listen on it
                continue
            for peer in rule["from"]:
                assert peer["namespaceSelector"]["matchExpressions"][0]["values"] == ["monitoring"]
                peers.add((tuple(sorted(peer["podSelector"]["matchLabels"].items())), tuple(sorted(ports))))
    assert peers == {(tuple(sorted(GRAFANA_PODS.items())), (9090,)),
                     (tuple(sorted({"app.kubernetes.io/name": "prometheus"}.items())), (8080, 9090))}
    # The rest of the namespace still reaches each other (Prometheus -> Alertmanager, Grafana -> its sidecars).
    same = generated(f"overlays/{cluster}/prometheus/networkpolicy-allow-same-namespace.yaml")
    assert selects(same, GRAFANA_PODS) and selects(same, {"app.kubernetes.io/name": "alertmanager"})
    ingress = generated(f"overlays/{cluster}/prometheus/networkpolicy-allow-grafana-from-ingress.yaml")
    assert ingress["spec"]["podSelector"] == {"matchLabels": GRAFANA_PODS}
    [rule] = ingress["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 3000}]
    assert rule["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"] == [model(cluster).settings.ingress_namespace]


def test_grafana_settings_that_contradict_the_inventory_are_refused_at_their_line():
    base = inventory_text("a100")
    text = edit(base, "    grafana:\n      login:\n", "    grafana:\n      host: grafana.example.org\n      login:\n")
    [problem] = problems_of("a100", text)
    assert (problem.line, problem.path) == (line_of(text, "host: grafana.example.org"), "components.prometheus.grafana.host")
    assert "components.flyte.grafana_url" in problem.message
    # A provider that is not a Keycloak realm: Grafana reads no discovery document, so its endpoints must be given.
    text = edit(base, "        client_id: grafana-a100\n", "        client_id: grafana-a100\n        issuer: https://login.example.org/oauth2\n")
    [problem] = problems_of("a100", text)
    assert problem.path == "components.prometheus.grafana.login" and "auth_url, token_url and api_url" in problem.message
    text = edit(base, "        admin_groups: [gpu-platform-admins]", "        admin_groups: [\"x') || true || ('\"]")
    [problem] = problems_of("a100", text)
    assert problem.path == "components.prometheus.grafana.login.admin_groups[0]"


@pytest.fixture(scope="module")
def engine():
    from forge.twin.binaries import ensure_program
    from forge.twin.flows import ENGINE, ENGINE_PROGRAM
    from tests.twin.conftest import say
    return ensure_program(REPO, ENGINE_PROGRAM, say)[ENGINE]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_networkpolicy_engine_lets_only_grafana_reach_prometheus(cluster, engine):
    """The generated policies of every namespace, judged by the box's engine (cyclonus's matcher)."""
    from forge.twin.flows import Peer, traffic, verdicts
    from forge.twin.peers import INGRESS_PODS
    from forge.twin.peers import PROMETHEUS_PODS as PROMETHEUS
    policies = [p for c in sorted((REPO / "overlays" / cluster).iterdir()) if c.is_dir()
                for p in generated_dir(f"overlays/{cluster}/{c.name}", "networkpolicy-")]
    ingress_ns = model(cluster).settings.ingress_namespace
    grafana, prometheus = Peer("grafana", "monitoring", GRAFANA_PODS), Peer("prometheus", "monitoring", PROMETHEUS)
    alertmanager = Peer("alertmanager", "monitoring", {"app.kubernetes.io/name": "alertmanager"})
    controller, task = Peer("ingress", ingress_ns, INGRESS_PODS), Peer("task", "training-production", {})
    flows = [(controller, grafana, 3000, True), (controller, prometheus, 9090, False), (grafana, prometheus, 9090, True),
             (prometheus, prometheus, 9090, True), (prometheus, prometheus, 8080, True), (alertmanager, prometheus, 9090, False),
             (prometheus, alertmanager, 9093, True), (task, prometheus, 9090, False), (task, grafana, 3000, False)]
    namespaces = {ns: {"kubernetes.io/metadata.name": ns} for ns in ("monitoring", ingress_ns, "training-production")}
    answers = verdicts(engine, policies, [traffic(s, d, port, "TCP", namespaces) for s, d, port, _ in flows])
    assert [(s.name, d.name, port, a["allowed"]) for (s, d, port, _), a in zip(flows, answers)] == [
        (s.name, d.name, port, want) for s, d, port, want in flows]


@pytest.mark.parametrize("cluster", [*CLUSTERS, "h200-burst"])
def test_the_app_project_admits_grafanas_ingress_where_the_inventory_asks_for_it(cluster):
    """Hydrated with the real kube-prometheus-stack 88.5.3 (its grafana 12.11.1 subchart), the
    Ingress failed `forge validate --hydrated`: networking.k8s.io/Ingress was not in the AppProject
    of `prometheus`, so Argo CD would have refused the whole Application. A cluster without
    `grafana` (h200-burst) renders no Ingress, and its project admits none."""
    from forge.argocd.projects import fence_problems
    from forge.fleet import components_of
    project = generated(f"clusters/{cluster}/argocd/appproject-prometheus.yaml")
    ingress = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",  # as the real chart renders it
               "metadata": {"name": GRAFANA_DEPLOYMENT, "namespace": "monitoring"}}
    found = fence_problems(ingress, project, "monitoring", list(components_of(model(cluster))))
    if model(cluster).component_settings["prometheus"].grafana is None:
        assert cluster == "h200-burst" and [field for field, _ in found] == ["kind"]
    else:
        assert found == []

"""NetworkPolicies (forge.components.network): every namespace forge owns denies ingress by
default; each component's real peers, from the component's own ports and labels."""
from __future__ import annotations

import pytest

from forge.components import COMPONENTS, alluxio, flyte, kueue, network
from forge.components.network import Allow, default_deny
from forge.fleet import components_of
from forge.components.training_operator import WEBHOOK_PORT
from tests.helpers import edit, generated, generated_dir, inventory_text, model

CLUSTERS = ["a100", "h200"]


def policies(cluster: str, component: str) -> dict[tuple[str, str], dict]:
    objs = generated_dir(f"overlays/{cluster}/{component}", "networkpolicy-")
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs}


def sources(policy: dict) -> set[str]:
    (rule,) = policy["spec"]["ingress"]
    return {ns for peer in rule["from"] for e in peer["namespaceSelector"]["matchExpressions"] for ns in e["values"]}


def ports(policy: dict) -> set[int]:
    return {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_owned_namespace_denies_ingress_by_default(cluster):
    m = model(cluster)
    owned = {c.name: c.owned_namespaces(m) for c in components_of(m)}
    assert owned["prometheus-crds"] == () and "kube-system" not in owned["prometheus"]
    assert set(owned["flyte"]) > {"flyte", "training-production"}
    for component, namespaces in owned.items():
        found = policies(cluster, component)
        for ns in namespaces:
            assert default_deny(found[(ns, "default-deny-ingress")]), (component, ns)
            assert found[(ns, "allow-same-namespace")]["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


def test_alluxio_s3_proxy_is_reachable_from_flyte_and_its_projects_only():
    m = model("h200")
    s3 = policies("h200", "alluxio")[("alluxio", "allow-s3-proxy")]
    assert sources(s3) == {"flyte", *flyte.Flyte().facts(m).namespaces}
    assert "loki" not in sources(s3) and "monitoring" not in sources(s3)
    assert ports(s3) == {alluxio.PROXY_PORT}
    # The proxy pods only (the selector of the S3 Service), not the workers.
    assert s3["spec"]["podSelector"]["matchLabels"] == generated("overlays/h200/alluxio/service-alluxio-s3.yaml")["spec"]["selector"]


def test_prometheus_scrapes_the_ports_its_pod_monitors_use():
    scrape = policies("h200", "alluxio")[("alluxio", "allow-prometheus-scrape")]
    assert sources(scrape) == {"monitoring"}
    assert scrape["spec"]["ingress"][0]["from"][0]["podSelector"] == {"matchLabels": network.PROMETHEUS_PODS}
    assert {s.port for s in alluxio.SCRAPES} <= ports(scrape)
    flyte_scrape = policies("h200", "flyte")[("flyte", "allow-prometheus-scrape")]
    assert {s.port for s in flyte.SCRAPES} == ports(flyte_scrape)


def test_flyte_is_reachable_from_the_inventorys_ingress_controller_namespace():
    api = policies("h200", "flyte")[("flyte", "allow-flyte-api")]
    assert "ingress-nginx" in sources(api) and "training-production" in sources(api)
    assert ports(api) == set(flyte.API_PORTS)
    text = edit(inventory_text("h200"), "  kubernetes_version:", "  ingress_namespace: traefik\n  kubernetes_version:")
    m = model("h200", text)
    allow = next(a for a in flyte.Flyte().ingress(m) if a.name == "flyte-api")
    assert allow.from_namespaces == ("traefik",)


def test_webhooks_are_open_to_the_api_server_from_any_source():
    hook = policies("h200", "training-operator")[("kubeflow", "allow-api-server-webhook")]
    assert hook["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": WEBHOOK_PORT}]}]  # no `from`: any source
    # Flyte's pod webhook (on in flyte-binary by default) and the Prometheus operator's.
    assert ports(policies("h200", "flyte")[("flyte", "allow-api-server-webhook")]) == {flyte.WEBHOOK_PORT}
    assert ports(policies("h200", "prometheus")[("monitoring", "allow-api-server-webhook")]) == {10250}
    assert ports(policies("h200", "external-secrets")[("external-secrets", "allow-api-server-webhook")]) == {10250}
    assert ports(policies("h200", "kueue")[("kueue-system", "allow-api-server-webhook")]) == {9443}  # admits every job
    # Kueue's visibility APIService: the API server proxies to it; blocked, namespace deletion hangs.
    visibility = policies("h200", "kueue")[("kueue-system", "allow-api-server-visibility")]
    assert visibility["spec"]["ingress"] == [{"ports": [{"protocol": "TCP", "port": kueue.VISIBILITY_PORT}]}]
    # Components without a webhook open nothing to every source.
    assert ("loki", "allow-api-server-webhook") not in policies("h200", "loki")


class Fake:
    def __init__(self, name, namespace, owned, allows=(), deploys=()):
        self.name, self.namespace, self._owned, self._allows, self._deploys = name, namespace, owned, allows, deploys

    def namespaces(self, cluster):
        return (*self._owned, *self._deploys)

    def owned_namespaces(self, cluster):
        return self._owned

    def ingress(self, cluster):
        return self._allows

    def isolated_pods(self, cluster):
        return None


def test_a_peer_that_is_off_gets_no_rule_and_a_foreign_namespace_is_refused():
    m = model("a100")
    to = Fake("svc", "svc", ("svc",), (Allow("from-absent", (80,), from_components=("absent",)),))
    out = network.policies(to, m, [to])
    assert [o["metadata"]["name"] for o in out] == ["default-deny-ingress", "allow-same-namespace"]
    bad = Fake("svc", "svc", ("svc",), (Allow("elsewhere", (80,), anywhere=True, into=("kube-system",)),))
    with pytest.raises(ValueError, match="kube-system, which it does not deploy into"):
        network.policies(bad, m, [bad])


def test_an_allow_into_a_namespace_the_component_deploys_into_but_does_not_own_is_that_policy_alone():
    """JupyterHub's user servers run in Flyte's project namespaces: the hub's Allow opens them
    there, and the owner's default deny and same-namespace policies stay the owner's own."""
    hub = Fake("hub", "hub", ("hub",), (Allow("to-servers", (8888,), from_namespaces=("hub",), into=("p-dev",)),), deploys=("p-dev",))
    out = network.policies(hub, model("a100"), [hub])
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in out] == [
        ("hub", "default-deny-ingress"), ("hub", "allow-same-namespace"), ("p-dev", "allow-to-servers")]


def test_each_hub_and_its_proxy_alone_reach_their_projects_user_servers():
    m = model("h200")
    hub = next(c for c in COMPONENTS if c.name == "jupyterhub")
    mine = {o["metadata"]["namespace"]: o for o in network.policies(hub, m, [c for c in COMPONENTS if c.enabled(m)])
            if o["metadata"]["name"] == "allow-jupyterhub-to-user-servers"}
    assert sorted(mine) == [f"{p}-development" for p in sorted(hub.projects(m))]
    rule = mine["research-development"]["spec"]["ingress"][0]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8888}]
    assert rule["from"][0]["podSelector"]["matchLabels"] == {"release": "jupyterhub-research",
                                                              "hub.jupyter.org/network-access-singleuser": "true"}


def test_default_deny_recognises_only_a_deny_all_policy():
    deny = network._policy("d", "ns", None, None)
    assert default_deny(deny)
    assert not default_deny(network._policy("d", "ns", {"app": "x"}, None))  # some pods only
    assert not default_deny(network._policy("d", "ns", None, [{"from": [{"podSelector": {}}]}]))  # allows
    assert not default_deny({**deny, "spec": {**deny["spec"], "policyTypes": ["Egress"]}})

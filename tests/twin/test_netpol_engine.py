"""The box's NetworkPolicy engine (cyclonus's matcher, asked by ci/twin/cyclonus/netpol-verdicts)
answers as Kubernetes NetworkPolicy semantics say (the cases of the Kubernetes documentation's
"Network Policies" page and of the upstream e2e tests: default deny, a namespace selector, a
namespace AND pod selector against the two as alternatives, a port and a port range, egress to an
IP block, a policy that selects other pods, both ends' policies), before any flow of a scenario
is trusted to it. Only the engine is built (seconds warm), not the whole box."""
from __future__ import annotations

import re

import pytest

from forge.twin.binaries import ensure_program
from forge.twin.flows import ENGINE, ENGINE_PROGRAM, Peer, traffic, verdicts
from forge.twin.pins import box_pins
from tests.helpers import REPO
from tests.twin.conftest import say

NS = {"a": {"kubernetes.io/metadata.name": "a", "team": "ml"},
      "b": {"kubernetes.io/metadata.name": "b", "team": "ml"},
      "c": {"kubernetes.io/metadata.name": "c"}}


@pytest.fixture(scope="module")
def engine():
    return ensure_program(REPO, ENGINE_PROGRAM, say)[ENGINE]


def policy(name: str, ns: str, spec: dict) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def pod(ns: str, **labels: str) -> Peer:
    return Peer(f"{ns}/{labels}", ns, labels)


def allowed(engine, policies: list[dict], src: Peer, dst: Peer, port: int, protocol: str = "TCP") -> bool:
    return verdicts(engine, policies, [traffic(src, dst, port, protocol, NS)])[0]["allowed"]


DENY_ALL = policy("default-deny-ingress", "a", {"podSelector": {}, "policyTypes": ["Ingress"]})


def test_no_policy_selects_the_pod_so_everything_passes(engine):
    assert allowed(engine, [], pod("b"), pod("a"), 80)


def test_default_deny_ingress_denies_every_source_but_not_the_pods_own_egress(engine):
    assert not allowed(engine, [DENY_ALL], pod("b"), pod("a"), 80)
    assert not allowed(engine, [DENY_ALL], pod("a", app="x"), pod("a", app="y"), 80)  # its own namespace too
    assert allowed(engine, [DENY_ALL], pod("a"), pod("b"), 80)  # egress is not isolated by an Ingress policy
    answer = verdicts(engine, [DENY_ALL], [traffic(pod("b"), pod("a"), 80, "TCP", NS)])[0]
    assert answer["ingress"]["deniedBy"] == ["a/default-deny-ingress"]


def test_policies_add_up_and_a_namespace_selector_admits_only_labelled_namespaces(engine):
    from_ml = policy("from-ml", "a", {"podSelector": {}, "policyTypes": ["Ingress"],
                                      "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}]}]})
    assert allowed(engine, [DENY_ALL, from_ml], pod("b"), pod("a"), 80)
    assert not allowed(engine, [DENY_ALL, from_ml], pod("c"), pod("a"), 80)


def test_namespace_and_pod_selector_in_one_peer_is_and_in_two_peers_is_or(engine):
    both = {"namespaceSelector": {"matchLabels": {"team": "ml"}}, "podSelector": {"matchLabels": {"role": "client"}}}
    one = policy("and", "a", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [both]}]})
    two = policy("or", "a", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [
        {"namespaceSelector": both["namespaceSelector"]}, {"podSelector": both["podSelector"]}]}]})
    assert allowed(engine, [one], pod("b", role="client"), pod("a"), 80)
    assert not allowed(engine, [one], pod("b", role="server"), pod("a"), 80)
    assert allowed(engine, [two], pod("b", role="server"), pod("a"), 80)  # the namespace alone suffices
    assert allowed(engine, [two], pod("a", role="client"), pod("a"), 80)  # a bare podSelector: the policy's namespace
    assert not allowed(engine, [two], pod("c", role="client"), pod("a"), 80)


def test_a_port_rule_admits_that_port_and_protocol_only_and_end_port_a_range(engine):
    port = policy("port", "a", {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"],
                                "ingress": [{"ports": [{"protocol": "TCP", "port": 8888}, {"protocol": "TCP", "port": 32000, "endPort": 32010}]}]})
    server = pod("a", app="server")
    assert allowed(engine, [port], pod("c"), server, 8888)
    assert not allowed(engine, [port], pod("c"), server, 8081)
    assert not allowed(engine, [port], pod("c"), server, 8888, "UDP")
    assert allowed(engine, [port], pod("c"), server, 32005)
    assert not allowed(engine, [port], pod("c"), server, 32011)
    assert allowed(engine, [port], pod("c"), pod("a", app="other"), 8081)  # a pod the policy does not select


def test_egress_to_an_ip_block_with_an_exception_and_a_port(engine):
    egress = policy("egress", "a", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [
        {"to": [{"ipBlock": {"cidr": "10.0.0.0/24", "except": ["10.0.0.128/25"]}}], "ports": [{"protocol": "TCP", "port": 443}]}]})
    src = pod("a")
    assert allowed(engine, [egress], src, Peer("api", None, ip="10.0.0.5"), 443)
    assert not allowed(engine, [egress], src, Peer("api", None, ip="10.0.0.200"), 443)
    assert not allowed(engine, [egress], src, Peer("api", None, ip="10.0.0.5"), 80)
    assert not allowed(engine, [egress], src, pod("kube-system", **{"k8s-app": "kube-dns"}), 53, "UDP")  # no DNS rule: no DNS


def test_a_flow_needs_the_sources_egress_and_the_destinations_ingress(engine):
    out = policy("egress-to-b", "c", {"podSelector": {}, "policyTypes": ["Egress"],
                                      "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "a"}}}]}]})
    assert not allowed(engine, [out, DENY_ALL], pod("c"), pod("a"), 80)  # egress allows, ingress denies
    answer = verdicts(engine, [out, DENY_ALL], [traffic(pod("c"), pod("a"), 80, "TCP", NS)])[0]
    assert answer["egress"]["allowedBy"] == ["c/egress-to-b"] and not answer["ingress"]["allowed"]


def test_a_policy_the_api_server_would_refuse_is_one_error_not_a_crash(engine):
    from forge.errors import ForgeError
    with pytest.raises(ForgeError, match="need at least 1 type"):
        verdicts(engine, [policy("bad", "a", {"podSelector": {}})], [traffic(pod("b"), pod("a"), 80, "TCP", NS)])


def test_the_builder_module_requires_the_pinned_cyclonus():
    program = box_pins(REPO).program(ENGINE_PROGRAM)
    go_mod = (REPO / program.builder / "go.mod").read_text()
    assert re.search(rf"^\s*{re.escape(program.module)} {re.escape(program.version)}$", go_mod, re.M), go_mod

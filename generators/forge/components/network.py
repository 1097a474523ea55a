"""Least exposure: the NetworkPolicies of every namespace forge owns.

Each owned namespace (`Component.owned_namespaces`: the Namespaces forge ships, Flyte's project
namespaces included) gets:
- `default-deny-ingress`: every pod, no ingress rule, so nothing reaches a pod unless a policy
  below lets it;
- `allow-same-namespace`: pods of the namespace reach each other (Alluxio workers and proxies ->
  masters, Prometheus -> Alertmanager, Loki's targets, the ranks of a multi-node job), but for
  the pods the component isolates (`Component.isolated_pods`, one label: Prometheus, which has no
  authentication), which only their own Allows reach;
- one policy per `Allow` the component declares (`Component.ingress`), each with its real peers
  and ports: Prometheus scraping from the monitoring namespace to the metrics ports, the
  components that use a service, webhook ports for the API server. An Allow may also open pods
  the component runs in another component's namespace (JupyterHub's user servers, in Flyte's
  project namespaces, reached from their hub and proxy).

Peers are named by component (`from_components`), resolved here to the namespaces that component
owns on this cluster (a disabled component gives none), or by namespace (`from_namespaces`, e.g.
the ingress controller's, an inventory setting). Ports and pod labels live with the component
that runs the pods (one home), as its scrape targets do.

What a NetworkPolicy does not govern, on purpose:
- kubelet probes: they come from the node, not a pod. Calico (and most CNIs) always let a node
  reach its own pods, so probes pass the default deny;
- webhooks: the API server calls them from the control-plane hosts, whose addresses are not
  pods and differ per cluster, so webhook ports are open to any source (`anywhere`); TLS and the
  API server's client certificate protect them;
- pods on the host network (Alluxio masters, node-exporter, the NVIDIA driver and device
  plugins): they use the node's addresses and no NetworkPolicy applies to them; what they call
  on pods arrives from a node address, which no rule here admits (none of them needs to).
Egress is not restricted (policyTypes: Ingress only), so DNS and S3 need no rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol

from forge.model.cluster import ClusterModel


class Owner(Protocol):
    """What this module reads of a component (forge.components.base.Component)."""

    name: str
    namespace: str

    def namespaces(self, cluster: ClusterModel) -> tuple[str, ...]: ...

    def owned_namespaces(self, cluster: ClusterModel) -> tuple[str, ...]: ...

    def ingress(self, cluster: ClusterModel) -> "tuple[Allow, ...]": ...

    def isolated_pods(self, cluster: ClusterModel) -> Mapping[str, str] | None: ...

MONITORING = "monitoring"  # the prometheus component's namespace (forge.components.prometheus)
PROMETHEUS_PODS = {"app.kubernetes.io/name": "prometheus"}  # the operator's label on Prometheus pods
DEFAULT_DENY = "default-deny-ingress"
SAME_NAMESPACE = "allow-same-namespace"
NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every Namespace


@dataclass(frozen=True)
class Allow:
    """Ingress a component's pods accept from outside their namespace."""

    name: str  # the policy is allow-<name>
    ports: tuple[int, ...]  # TCP
    from_components: tuple[str, ...] = ()  # every namespace those components own
    from_namespaces: tuple[str, ...] = ()
    from_pods: Mapping[str, str] | None = None  # only these pods of the source namespaces
    anywhere: bool = False  # any source (webhooks: the API server is not a pod)
    to_pods: Mapping[str, str] | None = None  # only these pods of the namespace; None: every pod
    # Namespaces it applies to; () = the component's own. One the component deploys into but does
    # not own (JupyterHub's user servers in Flyte's project namespaces) gets this policy only: its
    # owner's default deny and other allows stay the owner's, and the policy goes with its component.
    into: tuple[str, ...] = ()


def scrape(ports: Iterable[int], to_pods: Mapping[str, str] | None = None, name: str = "prometheus-scrape") -> Allow:
    """Prometheus (in MONITORING) scraping `ports`."""
    return Allow(name, tuple(sorted(set(ports))), from_namespaces=(MONITORING,), from_pods=PROMETHEUS_PODS, to_pods=to_pods)


def webhook(ports: Iterable[int], to_pods: Mapping[str, str] | None = None) -> Allow:
    return Allow("api-server-webhook", tuple(sorted(set(ports))), anywhere=True, to_pods=to_pods)


def _policy(name: str, namespace: str, pods: Mapping[str, str] | None, ingress: list[dict[str, Any]] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(pods)} if pods else {}, "policyTypes": ["Ingress"]}
    if ingress is not None:
        spec["ingress"] = ingress
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def _sources(allow: Allow, owners: Mapping[str, tuple[str, ...]]) -> list[dict[str, Any]] | None:
    """The `from` list, or None for any source; [] when every named peer is off (no rule then)."""
    if allow.anywhere:
        return None
    namespaces = sorted({ns for c in allow.from_components for ns in owners.get(c, ())} | set(allow.from_namespaces))
    if not namespaces:
        return []
    peer: dict[str, Any] = {"namespaceSelector": {"matchExpressions": [{"key": NAME_LABEL, "operator": "In", "values": namespaces}]}}
    if allow.from_pods:
        peer["podSelector"] = {"matchLabels": dict(allow.from_pods)}
    return [peer]


def policies(component: Owner, cluster: ClusterModel, components: Iterable[Owner]) -> list[dict[str, Any]]:
    """The NetworkPolicies of `component`'s owned namespaces; `components`: the cluster's enabled ones."""
    owned = component.owned_namespaces(cluster)
    if not owned:
        return []
    owners = {c.name: c.owned_namespaces(cluster) for c in components}
    out: list[dict[str, Any]] = []
    isolated = component.isolated_pods(cluster)
    for ns in owned:
        out.append(_policy(DEFAULT_DENY, ns, None, None))
        same = _policy(SAME_NAMESPACE, ns, None, [{"from": [{"podSelector": {}}]}])
        if isolated:
            if len(isolated) != 1:
                raise ValueError(f"{component.name}: isolated_pods must be one label, not {dict(isolated)}")
            [(key, value)] = isolated.items()
            same["spec"]["podSelector"] = {"matchExpressions": [{"key": key, "operator": "NotIn", "values": [value]}]}
        out.append(same)
    deployed = set(owned) | set(component.namespaces(cluster))
    for allow in component.ingress(cluster):
        sources = _sources(allow, owners)
        if sources == []:
            continue
        rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": p} for p in allow.ports]}
        if sources is not None:
            rule["from"] = sources
        for ns in allow.into or (component.namespace,):
            if ns not in deployed:
                raise ValueError(f"{component.name}: Allow {allow.name} names namespace {ns}, which it does not deploy into")
            out.append(_policy(f"allow-{allow.name}", ns, allow.to_pods, [rule]))
    return out


def default_deny(obj: Mapping[str, Any]) -> bool:
    """Whether a NetworkPolicy denies all ingress to every pod of its namespace by default."""
    spec = obj.get("spec") or {}
    return (obj.get("kind") == "NetworkPolicy" and not (spec.get("podSelector") or {}).get("matchLabels")
            and not (spec.get("podSelector") or {}).get("matchExpressions")
            and "Ingress" in (spec.get("policyTypes") or []) and not spec.get("ingress"))

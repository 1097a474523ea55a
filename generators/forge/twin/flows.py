"""Flows that must and must not pass, judged by a real NetworkPolicy engine against the
NetworkPolicies stored in the box's API server.

A step's `flows` (forge.twin.scenario) each name a source and a destination (forge.twin.peers:
representative pods labelled as their charts label them, the Kubernetes API, every scrape
target), a port and whether the flow must pass:

    - flows:
        - {from: {pod: jupyterhub-proxy, project: training}, to: {pod: user-server, project: training},
           port: 8888, allowed: true}
        - {from: {pod: any}, to: {pod: dns}, port: 53, protocol: UDP, allowed: true}

The verdicts are cyclonus's (github.com/mattfenwick/cyclonus, its matcher: Kubernetes
NetworkPolicy semantics, ingress and egress), asked by netpol-verdicts (ci/twin/cyclonus) with
every NetworkPolicy and Namespace the API server holds; nothing here decides whether a policy
admits a flow. What the engine cannot see (CNI-specific policy kinds, host-network pods, the
node's own traffic): docs/twin.md.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from forge.errors import ForgeError
from forge.twin.kube import Kube

ENGINE_PROGRAM, ENGINE = "cyclonus", "netpol-verdicts"  # ci/tools.json twin.cyclonus, built by forge.twin.binaries
ENGINE_TIMEOUT = 120
NAME_LABEL = "kubernetes.io/metadata.name"  # the API server sets it on every Namespace
# A representative pod's address (the box's pods have none a CNI gave): in no ipBlock but
# 0.0.0.0/0, as a pod address outside every range a policy names (TEST-NET-2, RFC 5737).
POD_ADDRESS = "198.51.100.1"
Name = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=40)]
KINDS = ("any", "task", "user-server", "jupyterhub-hub", "jupyterhub-proxy", "flyte", "alluxio-proxy", "prometheus",
         "grafana", "loki-gateway", "kuberay-operator", "ingress-controller", "dns", "kubernetes-api", "scrape-targets")

OWN_PORT = ("scrape-targets", "kubernetes-api")  # destinations with their own port: each target's, the API's


@dataclass(frozen=True)
class Peer:
    """One end of a flow (forge.twin.peers makes them)."""

    name: str  # how a verdict names it
    namespace: str | None  # None: not a pod (the API server, on the control-plane hosts)
    labels: Mapping[str, str] = field(default_factory=dict)
    ip: str = ""
    port: int | None = None  # a scrape target's own port


class PeerSource(Protocol):
    def of(self, kind: str, project: str | None, domain: str | None) -> list[Peer]: ...


class Endpoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    pod: Literal[KINDS]  # type: ignore[valid-type]
    project: Name | None = None  # a task's, a user server's or a hub's project
    domain: Name | None = None  # a task's domain


class Flow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    source: Endpoint = Field(alias="from")
    to: Endpoint
    port: Annotated[int, Field(ge=1, le=65535)] | None = None  # none for OWN_PORT destinations
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    allowed: bool

    @model_validator(mode="after")
    def _ends(self) -> "Flow":
        if self.source.pod == "scrape-targets":
            raise ValueError("scrape-targets is a destination only")
        if self.to.pod == "any":
            raise ValueError("any is a source only: name the destination")
        if (self.port is None) != (self.to.pod in OWN_PORT):
            raise ValueError("give a port, except to scrape-targets and kubernetes-api (each has its own)")
        return self


class FlowJudge:
    """Asks the engine about a step's flows against what the box's API server holds now."""

    def __init__(self, kube: Kube, peers: PeerSource, engine: Path) -> None:
        self.kube, self.peers, self.engine = kube, peers, engine

    def judge(self, flows: list[Flow]) -> list[str]:
        """What is wrong: one line per flow that passes and must not, or must and does not."""
        pairs = [(flow, src, dst) for flow in flows
                 for src in self.peers.of(flow.source.pod, flow.source.project, flow.source.domain)
                 for dst in self.peers.of(flow.to.pod, flow.to.project, flow.to.domain) if src != dst]
        namespaces = {ns["metadata"]["name"]: ns["metadata"].get("labels") or {} for ns in self.kube.list("v1", "Namespace")}
        asked = [traffic(src, dst, flow.port or dst.port or 0, flow.protocol, namespaces) for flow, src, dst in pairs]
        answers = self.ask(asked)
        return [_wrong(flow, src, dst, verdict) for (flow, src, dst), verdict in zip(pairs, answers)
                if verdict["allowed"] != flow.allowed]

    def ask(self, asked: list[dict[str, Any]]) -> list[dict[str, Any]]:
        policies = [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                     "metadata": {"name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"]}, "spec": p["spec"]}
                    for p in self.kube.list("networking.k8s.io/v1", "NetworkPolicy")]
        return verdicts(self.engine, policies, asked)


def verdicts(engine: Path, policies: list[dict[str, Any]], traffic: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's verdict on each flow: {allowed, ingress: {allowed, allowedBy, deniedBy}, egress: ...}."""
    try:
        done = subprocess.run([str(engine)], input=json.dumps({"policies": policies, "flows": traffic}),
                              capture_output=True, text=True, timeout=ENGINE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ForgeError(f"twin: the NetworkPolicy engine {engine} did not answer: {exc}") from None
    if done.returncode != 0:
        raise ForgeError(f"twin: the NetworkPolicy engine refused the question: {done.stderr.strip()[-600:]}")
    answer = json.loads(done.stdout)
    if len(answer) != len(traffic):
        raise ForgeError(f"twin: the NetworkPolicy engine answered {len(answer)} flows of {len(traffic)}")
    return answer


def traffic(src: Peer, dst: Peer, port: int, protocol: str, namespaces: dict[str, dict[str, str]]) -> dict[str, Any]:
    """A flow as cyclonus's matcher.Traffic; a namespace the box lacks (the ingress controller's,
    installed outside forge) gets the label the API server would give it."""
    def side(peer: Peer) -> dict[str, Any]:
        if peer.namespace is None:
            return {"IP": peer.ip}
        labels = namespaces.get(peer.namespace) or {NAME_LABEL: peer.namespace}
        return {"Internal": {"Namespace": peer.namespace, "NamespaceLabels": labels, "PodLabels": dict(peer.labels)},
                "IP": peer.ip or POD_ADDRESS}
    return {"Source": side(src), "Destination": side(dst), "ResolvedPort": port, "ResolvedPortName": "", "Protocol": protocol}


def _wrong(flow: Flow, src: Peer, dst: Peer, verdict: dict[str, Any]) -> str:
    port = flow.port or dst.port
    said = "passes" if verdict["allowed"] else "is denied"
    want = "must not" if verdict["allowed"] else "must pass"
    why = []
    for direction, who in (("ingress", dst), ("egress", src)):
        d = verdict[direction]
        if d["allowedBy"]:
            why.append(f"{direction} of {who.name} allowed by {', '.join(d['allowedBy'])}")
        elif d["deniedBy"]:
            why.append(f"{direction} of {who.name} denied: no rule for it in {', '.join(d['deniedBy'])}")
    reason = "; ".join(why) or "no NetworkPolicy selects either pod"
    return f"flow {src.name} -> {dst.name} {flow.protocol}/{port} {said} and {want} ({reason})"

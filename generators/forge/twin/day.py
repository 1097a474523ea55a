"""The fleet's normal day around a scenario's jobs (forge.twin.steps): jobs that end, a node test
started the way the GPU Operator's side of day two starts it, a GPU node that stops reporting.

Each action is what the cluster would see: a finished task's objects go (its Workload with
them, so Kueue frees its quota); a node test is forge's own generated Service and Job, created
in the GPU Operator's namespace, through the same admission (the Priority plugin, forge's
admission policies) as on a cluster; a node goes NotReady because its "kubelet" (the box's kwok)
stops managing it and reports Ready=False, after which the real node lifecycle controller taints
it and marks its pods not ready. `restore` brings the nodes back and removes the tests before
the scenario's own clean-up (forge.twin.run), so every scenario starts on the same fleet.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from forge.components.node_tests.base import NODE_LABEL, PEER_LABEL, TESTS_DIR
from forge.components.node_tests.nccl import SCRIPT
from forge.files.paths import OVERLAYS_DIR
from forge.twin.controlplane import KWOK_ANNOTATION
from forge.twin.kube import Kube
from forge.twin.steps import NodeDown, NodeTest
from forge.twin.submit import SUBMITTED_LABEL

GPU_OPERATOR = "gpu-operator"  # the component whose overlay holds the node tests
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
POLL_SECONDS = 0.5
SETTLE_SECONDS = 60.0  # a node's taints, a finished job's Workloads: the controllers act within this


def _ready(node: dict[str, Any]) -> str | None:
    return next((c.get("status") for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)


def _wait(check: Callable[[], bool], seconds: float = SETTLE_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(POLL_SECONDS)
    return False


class Day:
    def __init__(self, kube: Kube, root: Path, cluster: str, say: Callable[[str], None]) -> None:
        self.kube, self.say = kube, say
        self.tests_dir = root / OVERLAYS_DIR / cluster / GPU_OPERATOR / TESTS_DIR
        self.tests: dict[str, list[dict[str, Any]]] = {}  # node test name -> the objects created
        self.down: list[str] = []  # nodes made NotReady

    # ---- where pods are -------------------------------------------------------------------------

    def busy_nodes(self, projects: set[str]) -> set[str]:
        """Nodes with a pod of a Flyte project bound (the scenario's, since every scenario starts idle)."""
        return {p["spec"]["nodeName"] for p in self.kube.list("v1", "Pod")
                if p["metadata"]["namespace"] in projects and (p.get("spec") or {}).get("nodeName")}

    # ---- jobs that end -------------------------------------------------------------------------

    def finish(self, objects: list[dict[str, Any]], namespace: str, workloads: Callable[[], list[Any]]) -> str | None:
        """Delete a job's objects, as when its tasks complete and Flyte cleans up; wait until Kueue's
        Workloads for it are gone (its quota free)."""
        for obj in objects:
            self.kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], namespace)
        if not _wait(lambda: not any(workloads())):
            return "its Workloads are still there after 60s"
        return None

    # ---- a node test ---------------------------------------------------------------------------

    def _nccl_files(self) -> list[tuple[str, str, list[dict[str, Any]]]]:
        """(node, peer, objects) of every NCCL test forge generated for the cluster."""
        out = []
        for path in sorted(self.tests_dir.glob("nccl-*.yaml")):
            if path.name == "nccl-script.yaml":
                continue
            objs = [o for o in yaml.safe_load_all(path.read_text(encoding="utf-8")) if o]
            job = next((o for o in objs if o.get("kind") == "Job"), None)
            if job:
                labels = job["metadata"].get("labels") or {}
                out.append((labels.get(NODE_LABEL), labels.get(PEER_LABEL), objs))
        return out

    def node_test(self, spec: NodeTest, peer_nodes: set[str], busy: set[str]) -> str | None:
        """Start forge's NCCL test of a node with no scenario pod whose peer is one of `peer_nodes`."""
        files = self._nccl_files()
        if not files:
            return f"node test {spec.name}: forge generated no NCCL node test in {self.tests_dir} (a fabric cluster only)"
        pick = next(((n, p, objs) for n, p, objs in files if p in peer_nodes and n not in busy), None)
        if pick is None:
            return (f"node test {spec.name}: no tested node is free with its peer running a pod of {spec.peer_runs} "
                    f"(peers running one: {', '.join(sorted(peer_nodes)) or 'none'})")
        node, peer, objs = pick
        script = self.tests_dir / "nccl-script.yaml"
        if script.is_file():
            objs = [*yaml.safe_load_all(script.read_text(encoding="utf-8")), *objs]
        created = []
        for obj in objs:
            obj["metadata"].setdefault("labels", {})[SUBMITTED_LABEL] = spec.name
            if obj["kind"] == "ConfigMap" and self.kube.get("v1", "ConfigMap", SCRIPT, obj["metadata"]["namespace"]):
                continue
            created.append(self.kube.create(obj))
        self.tests[spec.name] = created
        self.say(f"twin run: node test {spec.name}: NCCL test of {node} with its peer {peer}")
        return None

    def test_pods(self, name: str) -> list[dict[str, Any]]:
        job = next((o for o in self.tests.get(name, []) if o["kind"] == "Job"), None)
        if job is None:
            return []
        return self.kube.list("v1", "Pod", job["metadata"]["namespace"], selector=f"job-name={job['metadata']['name']}")

    # ---- a node NotReady -----------------------------------------------------------------------

    def node_down(self, spec: NodeDown, running: set[str], busy: set[str]) -> str | None:
        """Make a GPU node NotReady: one running a pod of `spec.runs` (`running`), else a free one."""
        nodes = {n["metadata"]["name"]: n for n in self.kube.list("v1", "Node")}
        whole = sorted(n for n, obj in nodes.items() if int((obj["status"].get("allocatable") or {}).get("nvidia.com/gpu", "0")) > 0)
        choice = sorted(running) if spec.runs else [n for n in whole if n not in busy]
        if not choice:
            return f"node_down: no GPU node {'runs a pod of ' + spec.runs if spec.runs else 'is free'}"
        name = choice[0]
        node_path = self.kube.path("v1", "Node", name)
        # kwok manages only nodes with its annotation: without it nothing renews the node's status.
        self.kube.request("PATCH", node_path, {"metadata": {"annotations": {KWOK_ANNOTATION: None}}}, "application/merge-patch+json")
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        ready = {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "lastHeartbeatTime": now,
                 "lastTransitionTime": now, "message": "forge twin: the node's kubelet stopped reporting Ready"}
        self.kube.request("PATCH", node_path + "/status", {"status": {"conditions": [ready]}}, "application/strategic-merge-patch+json")
        self.down.append(name)
        tainted = _wait(lambda: any(t.get("key") == NOT_READY_TAINT for t in (self.kube.get("v1", "Node", name) or {}).get("spec", {}).get("taints") or []))
        self.say(f"twin run: node {name} is NotReady{'' if tainted else ' (not yet tainted by the node lifecycle controller)'}")
        return None

    # ---- back to the fleet every scenario starts on ------------------------------------------

    def restore(self) -> None:
        for name, objs in self.tests.items():
            for obj in objs:
                if obj["kind"] != "ConfigMap":
                    self.kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"])
        for name in self.down:
            self.kube.request("PATCH", self.kube.path("v1", "Node", name), {"metadata": {"annotations": {KWOK_ANNOTATION: "fake"}}},
                              "application/merge-patch+json")
        back = _wait(lambda: all(_ready(self.kube.get("v1", "Node", n) or {}) == "True" and not any(
            t.get("key") == NOT_READY_TAINT for t in (self.kube.get("v1", "Node", n) or {}).get("spec", {}).get("taints") or [])
            for n in self.down) and not any(self.test_pods(t) for t in self.tests), 120)
        if not back:
            self.say(f"twin run: nodes {', '.join(self.down)} or node tests {', '.join(self.tests)} not back after 120s")
        self.tests, self.down = {}, []

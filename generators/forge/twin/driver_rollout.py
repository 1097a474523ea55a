"""A GPU driver bump played on the box with forge's node gate (issue 34, docs/twin.md).

The box runs no GPU Operator: `StandIn` moves the GPU nodes' `nvidia.com/gpu-driver-upgrade-state`
labels as its upgrade library does (NVIDIA/k8s-operator-libs pkg/upgrade, GPU Operator v26.7.0):
a driver bump puts every node in upgrade-required (ProcessDoneOrUnknownNodes: its driver pod no
longer matches the DaemonSet); a node moves on to cordon-required only without the skip label and
within maxParallelUpgrades and maxUnavailable (ProcessUpgradeRequiredNodes, GetUpgradesAvailable,
cordoned or NotReady nodes counting as unavailable); then it is cordoned, waits for the workload
pods (waitForCompletion, here `wait_for_jobs` seconds), is drained (evictions), its driver
"reloads", validates, and is uncordoned: upgrade-done. One state per reconcile.

The gate is the script the cluster's Deployment runs, as synced in its ConfigMap (forge.pod_scripts.node_gate,
shipped whole), started here as a process against the box's API server (the box has no kubelet to
run its pod) with the token of its own ServiceAccount, so its RBAC is the one forge generates, and
with the config forge put in that ConfigMap. kwok completes the test Jobs' pods (passed); the
failing node's chosen test gets the box's fail label (forge.twin.controlplane.FAIL_LABEL), so kwok
fails it, as bad hardware would. `driver: ofed` plays the Network Operator's DOCA driver instead
(its requestor mode, NEXT_REQUESTOR).

Judged: every node started only after each node started before it passed its tests (or was
released); the nodes start in the gate's order up to the failing node; nothing starts for `hold`
seconds once its test failed; with `release`, the next node starts once the failing node carries
the release annotation, the gate records it; and no pod of a project namespace is pre-empted.
Without a gate (none synced) the stand-in alone runs the rollout and the first check fails; so
does a gate that never holds a node back (tests/twin/test_rollout_without_gate.py).
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

from forge.pod_scripts import node_gate
from forge.model.day_two import (RELEASE_REQUEST_ANNOTATION, RELEASED_ANNOTATION, SKIP_LABEL, TEST_ROUND_ANNOTATION,
                           UPGRADE_DONE, UPGRADE_DRIVERS, UPGRADE_STATE_LABEL, WORKLOAD_LABEL)
from forge.fleet import ClusterPlan
from forge.twin.controlplane import FAIL_LABEL
from forge.twin.kube import ApiError, Kube
from forge.twin.processes import Process, start, stop_all
from forge.twin.scenario import Rollout

GATE = "forge-node-gate"
NAMESPACE = "gpu-operator"
TICK_SECONDS = 0.5
PASSED = ("passed", "released")
# What the library does in each state, one step per reconcile (pod-deletion and pod-restart:
# nothing to delete or restart in the box but the drain's evictions).
NEXT = {"cordon-required": "wait-for-jobs-required", "wait-for-jobs-required": "pod-deletion-required",
        "pod-deletion-required": "drain-required", "drain-required": "pod-restart-required",
        "pod-restart-required": "validation-required", "validation-required": "uncordon-required",
        "uncordon-required": UPGRADE_DONE}
# The Network Operator's DOCA driver (`ofed`), in requestor mode: the library asks the Maintenance
# Operator for a NodeMaintenance (node-maintenance-required: it cordons, waits for the workload pods
# and drains), restarts the driver pod once that is Ready, and deletes it to uncordon
# (k8s-operator-libs pkg/upgrade/upgrade_requestor.go).
NEXT_REQUESTOR = {"node-maintenance-required": "pod-restart-required", "pod-restart-required": "uncordon-required",
                  "uncordon-required": UPGRADE_DONE}
FIRST = {"gpu": "cordon-required", "ofed": "node-maintenance-required"}


def merge(kube: Kube, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    return kube.request("PATCH", f"/api/v1/nodes/{name}", patch, "application/merge-patch+json")


class StandIn:
    """The upgrade controller (the GPU Operator's; for `ofed` the Network Operator's with the Maintenance
    Operator), as far as the node labels, the cordon and the drain go."""

    def __init__(self, kube: Kube, nodes: list[str], tested: set[str], max_parallel: int, wait_for_jobs: float,
                 driver: str = "gpu") -> None:
        self.kube, self.nodes, self.tested, self.driver = kube, nodes, tested, driver
        self.state_label, self.skip_label = UPGRADE_STATE_LABEL.format(driver=driver), SKIP_LABEL.format(driver=driver)
        self.next = NEXT if driver == "gpu" else NEXT_REQUESTOR
        self.max_parallel, self.wait_for_jobs = max_parallel, wait_for_jobs
        self.max_unavailable = math.ceil(len(nodes) * 0.25)  # forge's default budget, 25 %
        self.started: list[str] = []
        self.broken: list[str] = []  # a node started before an earlier one passed its tests
        self.over_failed: list[str] = []  # ... while an earlier one's test had failed
        self.waiting_since: dict[str, float] = {}

    def bump(self) -> None:
        for name in self.nodes:
            merge(self.kube, name, {"metadata": {"labels": {self.state_label: "upgrade-required"}}})

    def tick(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.kube.list("v1", "Node") if n["metadata"]["name"] in self.nodes}
        state = {name: (node["metadata"].get("labels") or {}).get(self.state_label, "") for name, node in nodes.items()}
        busy = sum(1 for s in state.values() if s in self.next)
        unavailable = sum(1 for n in nodes.values() if n["spec"].get("unschedulable"))
        slots = min(self.max_parallel - busy, self.max_unavailable - unavailable)
        for name in self.nodes:
            node, now = nodes[name], state[name]
            if now == "upgrade-required" and (node["metadata"].get("labels") or {}).get(self.skip_label) != "true" and slots > 0:
                slots -= 1
                self._start(name, nodes)
            elif now in self.next and self._done(name, now, node):
                if now == "uncordon-required":
                    merge(self.kube, name, {"spec": {"unschedulable": None}})
                merge(self.kube, name, {"metadata": {"labels": {self.state_label: self.next[now]}}})

    def _start(self, name: str, nodes: dict[str, dict[str, Any]]) -> None:
        for earlier in self.started:
            round_ = (nodes[earlier]["metadata"].get("annotations") or {}).get(TEST_ROUND_ANNOTATION)
            if earlier in self.tested and round_ not in PASSED:
                failed = str(round_).startswith("failed")
                said = f"{name} started while {earlier}'s tests had {'failed' if failed else 'not passed'} ({round_ or 'never run'})"
                self.broken.append(said)
                if failed:
                    self.over_failed.append(said)
        self.started.append(name)
        merge(self.kube, name, {"metadata": {"labels": {self.state_label: FIRST[self.driver]}}})

    def _done(self, name: str, state: str, node: dict[str, Any]) -> bool:
        """Whether the library would leave `state` on this reconcile."""
        if state == "cordon-required":
            merge(self.kube, name, {"spec": {"unschedulable": True}})
        elif state == "node-maintenance-required":  # the Maintenance Operator's part: cordon, wait, drain
            merge(self.kube, name, {"spec": {"unschedulable": True}})
            return self._done(name, "wait-for-jobs-required", node) and self._done(name, "drain-required", node)
        elif state == "wait-for-jobs-required":
            since = self.waiting_since.setdefault(name, time.monotonic())
            return not self._pods(name, WORKLOAD_LABEL) or time.monotonic() - since > self.wait_for_jobs
        elif state == "drain-required":
            for pod in self._pods(name, None):  # not yet evicted
                meta = pod["metadata"]
                self.kube.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/eviction",
                                  {"apiVersion": "policy/v1", "kind": "Eviction",
                                   "metadata": {"name": meta["name"], "namespace": meta["namespace"]}})
            return not self._pods(name, None, terminating=True)  # drained: the evicted pods gone, their GPUs free
        return True

    def finished(self) -> bool:
        """Every node started: nothing more can go wrong or right."""
        return len(self.started) == len(self.nodes)

    def verdict(self) -> str | None:
        """The first node started out of turn, and the first started over a failed test."""
        if not self.broken:
            return None
        worst = self.over_failed[0] if self.over_failed and self.over_failed[0] != self.broken[0] else None
        return f"rollout: {self.broken[0]}" + (f"; {worst}" if worst else "") + f" ({len({b.split()[0] for b in self.broken})} nodes started out of turn)"

    def _pods(self, node: str, selector: str | None, terminating: bool = False) -> list[dict[str, Any]]:
        pods = self.kube.request("GET", "/api/v1/pods", query={"fieldSelector": f"spec.nodeName={node}",
                                                                 **({"labelSelector": selector} if selector else {})})["items"]
        return [p for p in pods if not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
                and (terminating or not p["metadata"].get("deletionTimestamp"))
                and p["status"].get("phase") in ("Pending", "Running")]


def synced_gate(kube: Kube) -> dict[str, str] | None:
    """The gate's ConfigMap as synced (its script and config), or None where none was."""
    cm = kube.get("v1", "ConfigMap", GATE, NAMESPACE)
    return cm["data"] if cm is not None else None


def gate_config(data: dict[str, str] | None, spec: Rollout) -> dict[str, Any] | None:
    """The gate's config as forge synced it, with the failing node's test marked to fail."""
    if data is None:
        return None
    config = json.loads(data["config.json"])
    failing = f"forge-node-test-{spec.fail_test}-{spec.fail_node}"
    for obj in config["tests"].get(spec.fail_node, []):
        if obj["kind"] == "Job" and obj["metadata"]["name"] == failing:
            obj["spec"]["template"]["metadata"]["labels"][FAIL_LABEL] = "true"
    return config


def start_gate(kube: Kube, script: str, config: dict[str, Any], logs: Path) -> Process:
    """The synced script (what the Deployment's pod runs), not forge's copy: the box runs what Git holds."""
    folder = logs.parent / "node-gate"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / node_gate.SCRIPT).write_text(script, encoding="utf-8")
    token = kube.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{GATE}/token",
                         {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    (folder / "token").write_text(token["status"]["token"], encoding="utf-8")
    (folder / "token").chmod(0o600)
    return start("node-gate", [sys.executable, str(folder / node_gate.SCRIPT), str(folder / "config.json"), "--api", kube.server,
                               "--token-file", str(folder / "token"), "--ca-file", str(kube.ca), "--interval", "1"], logs)


class Play:
    def __init__(self, kube: Kube, plan: ClusterPlan, spec: Rollout, projects: set[str], logs: Path,
                 say: Callable[[str], None]) -> None:
        self.kube, self.plan, self.spec, self.projects, self.logs, self.say = kube, plan, spec, projects, logs, say
        self.nodes = [n.name for n in plan.cluster.gpu_nodes]
        tested = {n.name for n in plan.cluster.gpu_nodes if n.tested_before_service}
        self.synced = synced_gate(kube)
        self.config = gate_config(self.synced, spec)
        parallel = self.config["max_parallel"] if self.config else 1
        self.standin = StandIn(kube, self.nodes, tested, parallel, spec.wait_for_jobs, spec.driver)
        self.earlier: set[str] = set()  # Preempted Events from before the rollout (set by run)

    def round_of(self, name: str) -> str:
        node = self.kube.get("v1", "Node", name) or {"metadata": {}}
        return (node["metadata"].get("annotations") or {}).get(TEST_ROUND_ANNOTATION, "")

    def run(self, within: float) -> str | None:
        if self.spec.fail_node not in self.nodes:
            return f"rollout: {self.spec.fail_node} is not a GPU node of {self.plan.name}"
        # Events outlive what they are about: an earlier scenario's pre-emptions are not this rollout's.
        self.earlier = {e["metadata"]["uid"] for e in self._preemptions()}
        for name in self.nodes:  # the driver as the operator leaves it after the install
            merge(self.kube, name, {"metadata": {"labels": {self.standin.state_label: UPGRADE_DONE}}})
        gate = start_gate(self.kube, self.synced[node_gate.SCRIPT], self.config, self.logs) if self.synced and self.config else None
        if gate is None:
            self.say("twin run: rollout: no node gate in forge's output: the stand-in rolls the driver out alone")
        try:
            return self._play(gate, time.monotonic() + within)
        finally:
            if gate is not None:
                stop_all([gate])
            self.reset()

    def _play(self, gate: Process | None, deadline: float) -> str | None:
        skip = self.standin.skip_label
        if gate is not None and not self._until(lambda: all(self._label(n, skip) == "true" for n in self.nodes), 30, False):
            return f"rollout: the gate did not hold {skip} on every GPU node within 30s ({gate.log})"
        self.standin.bump()
        self.say(f"twin run: rollout: {self.spec.driver} driver bumped, every GPU node upgrade-required")
        # Until the chosen test failed; a rollout already out of turn goes on until every node started
        # (or at once without a gate: no test will ever run), so a start over the failure shows too.
        out_of_turn = (lambda: self.standin.finished()) if gate is not None else (lambda: True)
        failed = self._until(lambda: self.round_of(self.spec.fail_node).startswith("failed")
                             or bool(self.standin.broken) and out_of_turn(), deadline - time.monotonic())
        problem = self._verdict(failed)
        if problem or not self.spec.release:
            return problem
        return self._release()

    def _verdict(self, failed: bool) -> str | None:
        started = self.standin.started
        if self.standin.broken:
            if failed and not self.standin.finished():
                self._until(lambda: self.standin.finished(), self.spec.hold)  # who else starts over the failure
            return self.standin.verdict()
        if not failed:
            return f"rollout: {self.spec.fail_node}'s {self.spec.fail_test} test never failed (started: {', '.join(started)})"
        order = self.nodes[:self.nodes.index(self.spec.fail_node) + 1]
        if started != order[:len(started)] or started[-1:] != [self.spec.fail_node] or len(started) < self.spec.passes + 1:
            return f"rollout: started {', '.join(started)}; want {', '.join(order)}, {self.spec.passes} passing first"
        before = len(started)
        self._until(lambda: False, self.spec.hold)
        if self.standin.broken:
            return self.standin.verdict()
        if len(self.standin.started) > before:
            return f"rollout: {self.standin.started[before]} started while {self.spec.fail_node}'s test had failed"
        self.say(f"twin run: rollout: {', '.join(started[:-1])} passed one at a time; stopped at {self.spec.fail_node} "
                 f"for {self.spec.hold}s")
        return self.preempted()

    def _release(self) -> str | None:
        before = len(self.standin.started)
        merge(self.kube, self.spec.fail_node, {"metadata": {"annotations": {RELEASE_REQUEST_ANNOTATION: "box: known bad fan, RMA filed"}}})
        if not self._until(lambda: len(self.standin.started) > before, 60):
            return f"rollout: nothing started within 60s of releasing {self.spec.fail_node} on the record"
        node = self.kube.get("v1", "Node", self.spec.fail_node)
        record = (node["metadata"].get("annotations") or {}).get(RELEASED_ANNOTATION, "")
        if "RMA filed" not in record or any(t.get("key") == self.config["taint"] for t in node["spec"].get("taints") or []):
            return f"rollout: {self.spec.fail_node} released without its record or with its taint ({record!r})"
        self.say(f"twin run: rollout: released {self.spec.fail_node} on the record ({record}); {self.standin.started[before]} next")
        return self.standin.verdict() or self.preempted()

    def preempted(self) -> str | None:
        """No pod of a project namespace pre-empted: the scheduler's and Kueue's Preempted Events."""
        for e in self._preemptions():
            if e["metadata"]["uid"] not in self.earlier:
                return f"rollout: {e['involvedObject'].get('name')} in {e['metadata'].get('namespace')} pre-empted: {e.get('message')}"
        return None

    def _preemptions(self) -> list[dict]:
        return [e for ns in sorted(self.projects) for e in self.kube.list("v1", "Event", ns) if e.get("reason") == "Preempted"]

    def _label(self, name: str, key: str) -> str | None:
        node = self.kube.get("v1", "Node", name) or {"metadata": {}}
        return (node["metadata"].get("labels") or {}).get(key)

    def _until(self, done: Callable[[], bool], seconds: float, tick: bool = True) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if tick:
                self.standin.tick()
            if done():
                return True
            time.sleep(TICK_SECONDS)
        return False

    def reset(self) -> None:
        """The next scenario starts on serving nodes: test objects gone, labels, taint and cordon off."""
        for obj in (o for objs in (self.config or {}).get("tests", {}).values() for o in objs):
            try:
                self.kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], NAMESPACE)
            except ApiError:
                pass
        taint = (self.config or {}).get("taint")
        for name in self.nodes:
            node = self.kube.get("v1", "Node", name)
            taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != taint]
            # every driver's labels: the gate holds the skip label of each driver it gates, not only this one's
            labels = {f.format(driver=d): None for d in UPGRADE_DRIVERS for f in (UPGRADE_STATE_LABEL, SKIP_LABEL)}
            merge(self.kube, name, {"metadata": {"labels": labels,
                                                 "annotations": {TEST_ROUND_ANNOTATION: None, RELEASED_ANNOTATION: None,
                                                                 RELEASE_REQUEST_ANNOTATION: None}},
                                    "spec": {"unschedulable": None, "taints": taints or None}})

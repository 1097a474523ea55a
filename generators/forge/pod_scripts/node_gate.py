"""The node gate: a driver rollout (GPU or DOCA) advances one node at a time, and only on passed tests.

Standard library only: forge.components.node_gate ships this file whole in a ConfigMap, with the
cluster's config (JSON: the GPU nodes in rollout order, each node's test objects in the order they
run, the taint, the pace, the drivers it gates), and runs it as a Deployment whose service account may get and patch
exactly the cluster's GPU nodes and create, read and delete the test Jobs and Services in one
namespace. It reads the API server as that service account, or `--api URL` with `--token-file`
and `--ca-file` (the box), or without credentials (a `kubectl proxy` on 127.0.0.1).

What the upgrade library (NVIDIA/k8s-operator-libs pkg/upgrade) allows and what the gate does with
it, every pass (`--interval` seconds). Two operators run that library on a GPU node, each under its
own driver name: the GPU Operator (v26.7.0, `gpu`) and the Network Operator (v26.4.1, `ofed`: the
DOCA driver, in requestor mode through the Maintenance Operator's NodeMaintenance):

* The library moves a node on from upgrade-required only without the label
  `nvidia.com/<driver>-driver-upgrade.skip=true` (ProcessUpgradeRequiredNodes, in both the in-place
  and the requestor mode), and counts only cordoned or NotReady nodes as unavailable. So the gate
  holds the label of every driver in `drivers` on every GPU node but the next one(s): at most
  `max_parallel` nodes are opened, in progress or under test at once, for one driver each (the GPU
  and the DOCA driver never reload on one node together), and none while a node's test failed (the
  rollout stops). A node is opened with the untested taint put on first, so it leaves the upgrade
  held out of service whatever the library does with the cordon.
* A node in an upgrade state of any driver (cordon-required ... uncordon-required, the requestor's
  node-maintenance-required and post-maintenance-required) is tainted and its old test Jobs deleted
  (a new round); one still in upgrade-required runs no test (its driver is about to change). One
  that went NotReady for longer than `--repair-seconds` (powered off for a repair) is tainted too,
  and so is one that booted again (its kubelet's `bootID` is not the one the gate last saw: a
  firmware flash, a kernel, a repair; a node seen for the first time is taken as tested on its
  boot). A new node registers tainted (forge's join files).
* A tainted node whose driver is in place (upgrade-done, or no state yet) runs its tests one after
  the other (each takes every GPU): the gate creates the next test's objects when the previous
  Job completed. All passed: the taint goes (a JSON patch of the taints alone, guarded by the
  node's resourceVersion) and the rollout moves on. One failed: the node stays out, its Job's
  failure alerts (NodeTestFailed), and no node is opened until it is released or passes.
* Release on the record: `forge.exa.ai/release-reason=<why>` on a node whose test failed. The
  gate removes the taint, records the reason as `forge.exa.ai/released` with the failed tests,
  writes an Event on the node, and drops the request; the rollout moves on.

    python3 node_gate.py CONFIG.json [--api URL [--token-file F --ca-file F]] [--interval S] [--once]
"""
from __future__ import annotations

import argparse
import calendar
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

SCRIPT = "node_gate.py"  # its key in the gate's ConfigMap (forge.components.node_gate)
IN_CLUSTER = "https://kubernetes.default.svc"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
STATE_FORMAT = "nvidia.com/{driver}-driver-upgrade-state"  # k8s-operator-libs UpgradeStateLabelKeyFmt
SKIP_FORMAT = "nvidia.com/{driver}-driver-upgrade.skip"  # UpgradeSkipNodeLabelKeyFmt
DRIVERS = ("gpu",)  # a config without `drivers`: the GPU Operator's alone
STATE_LABEL, SKIP_LABEL = STATE_FORMAT.format(driver="gpu"), SKIP_FORMAT.format(driver="gpu")
REQUIRED, DONE, FAILED = "upgrade-required", "upgrade-done", "upgrade-failed"
RELEASE_REQUEST = "forge.exa.ai/release-reason"  # an operator's: release this node against its failed test
RELEASED = "forge.exa.ai/released"  # the gate's record of it
ROUND = "forge.exa.ai/test-round"  # the gate's: "started" while a round runs, "passed" or "failed:<tests>"
BOOT = "forge.exa.ai/tested-boot"  # the gate's: the boot (the kubelet's bootID) it last saw the node on

Call = Callable[[str, str, Any, str], "dict[str, Any] | None"]  # method, path, body, content type


def in_upgrade(node: dict[str, Any], drivers: tuple[str, ...] = DRIVERS) -> bool:
    """Between cordon-required and uncordon-required for some driver: the library is taking it out."""
    return any(labels(node).get(STATE_FORMAT.format(driver=d), "") not in ("", REQUIRED, DONE, FAILED) for d in drivers)


def required(node: dict[str, Any], drivers: tuple[str, ...] = DRIVERS) -> list[str]:
    """The drivers waiting in upgrade-required on this node, in the config's order."""
    return [d for d in drivers if labels(node).get(STATE_FORMAT.format(driver=d)) == REQUIRED]


def opened_for(node: dict[str, Any], drivers: tuple[str, ...] = DRIVERS) -> str | None:
    """The driver the node waits in upgrade-required for without its skip label: let through."""
    return next((d for d in required(node, drivers) if labels(node).get(SKIP_FORMAT.format(driver=d)) != "true"), None)


def labels(node: dict[str, Any]) -> dict[str, str]:
    return node["metadata"].get("labels") or {}


def annotations(node: dict[str, Any]) -> dict[str, str]:
    return node["metadata"].get("annotations") or {}


def tainted(node: dict[str, Any], key: str) -> bool:
    return any(t.get("key") == key for t in (node.get("spec") or {}).get("taints") or [])


def not_ready_since(node: dict[str, Any]) -> str | None:
    ready = next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    return ready.get("lastTransitionTime") if ready and ready.get("status") != "True" else None


def job_state(job: dict[str, Any] | None) -> str:
    """absent, passed, failed or running."""
    if job is None:
        return "absent"
    conditions = {c.get("type"): c.get("status") for c in (job.get("status") or {}).get("conditions") or []}
    return "failed" if conditions.get("Failed") == "True" else "passed" if conditions.get("Complete") == "True" else "running"


class Gate:
    def __init__(self, config: dict[str, Any], call: Call, say: Callable[[str], None] = print,
                 now: Callable[[], float] = time.time) -> None:
        self.config, self.call, self.say, self.now = config, call, say, now
        self.ns, self.taint = config["namespace"], config["taint"]
        self.drivers = tuple(config.get("drivers") or DRIVERS)
        self.stopped = ""  # what was last said about a stopped rollout: said once

    # ---- API ------------------------------------------------------------------------------------
    def node(self, name: str) -> dict[str, Any] | None:
        return self.call("GET", f"/api/v1/nodes/{name}", None, "")

    def patch_node(self, node: dict[str, Any], ops: list[dict[str, Any]]) -> None:
        guard = {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]}
        updated = self.call("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", [guard, *ops], "application/json-patch+json")
        if updated:
            node.clear()
            node.update(updated)

    def merge_node(self, node: dict[str, Any], metadata: dict[str, Any]) -> None:
        updated = self.call("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", {"metadata": metadata},
                            "application/merge-patch+json")
        if updated:
            node.clear()
            node.update(updated)

    def path(self, obj: dict[str, Any]) -> str:
        kind = obj["kind"]
        base = "/apis/batch/v1" if kind == "Job" else "/api/v1"
        return f"{base}/namespaces/{self.ns}/{'jobs' if kind == 'Job' else 'services'}/{obj['metadata']['name']}"

    def jobs(self, name: str) -> list[dict[str, Any]]:
        return [o for o in self.config["tests"].get(name, []) if o["kind"] == "Job"]

    # ---- one node's tests -----------------------------------------------------------------------
    def set_taint(self, node: dict[str, Any], on: bool) -> None:
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != self.taint]
        if on and len(kept) == len(taints):
            self.patch_node(node, [{"op": "add", "path": "/spec/taints",
                                    "value": [*kept, {"key": self.taint, "effect": "NoSchedule"}]}])
        elif not on and len(kept) != len(taints):
            self.patch_node(node, [{"op": "replace", "path": "/spec/taints", "value": kept}])

    def new_round(self, node: dict[str, Any]) -> None:
        """Taint the node and clear its last round's test objects: it is tested again."""
        name = node["metadata"]["name"]
        if not self.config["tests"].get(name):
            return
        if annotations(node).get(ROUND) != "started":
            self.clear_tests(name)
            self.merge_node(node, {"annotations": {ROUND: "started"}})
            self.say(f"{name}: out of service until its tests pass")
        self.set_taint(node, True)

    def clear_tests(self, name: str) -> None:
        for obj in self.config["tests"].get(name, []):
            self.call("DELETE", self.path(obj) + "?propagationPolicy=Background", None, "")

    def run_tests(self, node: dict[str, Any]) -> str:
        """passed, failed or running: start the first test not yet passed, once the one before passed."""
        name = node["metadata"]["name"]
        states = {j["metadata"]["name"]: job_state(self.call("GET", self.path(j), None, "")) for j in self.jobs(name)}
        failed = [j for j, s in states.items() if s == "failed"]
        if failed:
            return "failed:" + ",".join(failed)
        for job in self.jobs(name):
            state = states[job["metadata"]["name"]]
            if state == "absent":
                for obj in (o for o in self.config["tests"][name] if o["metadata"]["name"] == job["metadata"]["name"]):
                    self.call("POST", self.path(obj).rsplit("/", 1)[0], obj, "application/json")
                self.say(f"{name}: {job['metadata']['name']} started")
            if state != "passed":
                return "running"
        return "passed"

    def tend(self, node: dict[str, Any]) -> str:
        """A node's place: idle, upgrading, waiting (tainted, its upgrade not begun), testing, failed
        (its test failed, not released)."""
        name = node["metadata"]["name"]
        tested = bool(self.config["tests"].get(name))
        down = not_ready_since(node)
        if tested and not down and self.rebooted(node):
            self.new_round(node)  # a firmware flash, a kernel or a repair: tested again
        if tested and (in_upgrade(node, self.drivers) or (down and self.age(down) > self.config["repair_seconds"])):
            self.new_round(node)
            return "upgrading"
        if in_upgrade(node, self.drivers):
            return "upgrading"
        if not (tested and tainted(node, self.taint)) or down:
            return "idle"
        if required(node, self.drivers) and not str(annotations(node).get(ROUND, "")).startswith("failed"):
            return "waiting"  # its turn comes in step(); a test now would be evicted by the upgrade's drain
        if annotations(node).get(ROUND) not in ("started",) and not str(annotations(node).get(ROUND, "")).startswith("failed"):
            self.new_round(node)  # a new node, registered tainted: its first round
        result = self.run_tests(node)
        if result == "passed":
            self.set_taint(node, False)
            self.merge_node(node, {"annotations": {ROUND: "passed"}})
            self.say(f"{name}: passed {', '.join(j['metadata']['name'] for j in self.jobs(name))}: serves again")
            return "idle"
        if result.startswith("failed"):
            return self.failed(node, result)
        return "testing"

    def rebooted(self, node: dict[str, Any]) -> bool:
        """Whether the node booted again since the gate last saw it (the new boot is noted)."""
        boot = ((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or ""
        seen = annotations(node).get(BOOT)
        if not boot or seen == boot:
            return False
        self.merge_node(node, {"annotations": {BOOT: boot}})
        return seen is not None  # first seen: taken as tested on this boot (a new node is tainted anyway)

    def failed(self, node: dict[str, Any], result: str) -> str:
        name, reason = node["metadata"]["name"], annotations(node).get(RELEASE_REQUEST)
        if annotations(node).get(ROUND) != result:
            self.merge_node(node, {"annotations": {ROUND: result}})
            self.say(f"{name}: {result[len('failed:'):]} failed: it stays out and the rollout stops")
        if not reason:
            return "failed"
        record = f"{reason} (against {result[len('failed:'):]})"
        self.clear_tests(name)  # the failed Job goes with the release: its alert resolves
        self.set_taint(node, False)
        self.merge_node(node, {"annotations": {RELEASED: record, RELEASE_REQUEST: None, ROUND: "released"}})
        self.event(node, record)
        self.say(f"{name}: released on the record: {record}")
        return "idle"

    def event(self, node: dict[str, Any], message: str) -> None:
        meta = node["metadata"]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now()))
        self.call("POST", f"/api/v1/namespaces/{self.ns}/events", {
            "apiVersion": "v1", "kind": "Event", "metadata": {"generateName": f"{meta['name']}.", "namespace": self.ns},
            "involvedObject": {"kind": "Node", "name": meta["name"], "uid": meta.get("uid", "")},
            "reason": "ReleasedAgainstFailedTest", "message": message, "type": "Warning",
            "source": {"component": "forge-node-gate"}, "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
        }, "application/json")

    def age(self, stamp: str) -> float:
        return self.now() - calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))

    # ---- the rollout ----------------------------------------------------------------------------
    def step(self) -> dict[str, str]:
        """One pass: every node tended, then the skip labels set: the next node(s) opened when nothing
        is out and no test failed, every other node held."""
        nodes = {n: self.node(n) for n in self.config["nodes"]}
        places = {n: self.tend(node) for n, node in nodes.items() if node is not None}
        opened = [n for n, node in nodes.items() if node is not None and opened_for(node, self.drivers)]
        busy = sum(1 for p in places.values() if p in ("upgrading", "testing")) + len(opened)
        stop = [n for n, p in places.items() if p == "failed"]
        slots = 0 if stop else max(0, self.config["max_parallel"] - busy)
        for name, node in nodes.items():
            if node is None:
                continue
            waiting = required(node, self.drivers) if self.in_racks(name) else []
            if name in opened:
                continue
            if waiting and slots > 0:
                slots -= 1
                if self.config["tests"].get(name):
                    self.new_round(node)
                # one driver at a time: the other's skip label stays until this one is done and tested
                self.merge_node(node, {"labels": {SKIP_FORMAT.format(driver=d): None if d == waiting[0] else "true"
                                                  for d in self.drivers}})
                self.say(f"{name}: next in the {waiting[0]} driver rollout")
                places[name] = "opened"
            else:
                held = {SKIP_FORMAT.format(driver=d): "true" for d in self.drivers
                        if labels(node).get(SKIP_FORMAT.format(driver=d)) != "true"}
                if held:
                    self.merge_node(node, {"labels": held})
        said = f"rollout stopped: {', '.join(stop)} failed a test (release on the record with {RELEASE_REQUEST})" if stop else ""
        if said and said != self.stopped:
            self.say(said)
        self.stopped = said
        return places

    def in_racks(self, name: str) -> bool:
        racks = self.config.get("racks") or []
        return not racks or self.config["rack_of"].get(name) in racks


def api_caller(base: str, token: str | None, context: ssl.SSLContext | None) -> Call:
    def call(method: str, path: str, body: Any, content_type: str) -> dict[str, Any] | None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(base.rstrip("/") + path, data=data, method=method,
                                         headers={"Accept": "application/json"})
        if data is not None:
            request.add_header("Content-Type", content_type)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=20, context=context) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404 and method in ("GET", "DELETE"):
                return None
            if err.code in (409, 422) and method in ("PATCH", "POST"):
                return None  # a concurrent change (the guard) or already there: the next pass sees it
            raise SystemExit(f"cannot {method} {path}: HTTP {err.code} {err.reason} (the gate's RBAC must allow it)")
        except OSError as err:
            raise SystemExit(f"cannot reach the API server at {base}: {err}")
    return call


def probe(alive: str | None, max_age: float) -> int:
    """The pod's liveness and readiness: a gate whose pass hangs (an API call that never returns)
    stops touching its file and is restarted; until its first pass it is not ready."""
    try:
        age = time.time() - os.stat(alive or "").st_mtime
    except OSError:
        return 1
    return 0 if age <= max_age else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="hold the GPU and DOCA driver rollouts to one node at a time, on passed tests")
    parser.add_argument("config", help="the gate's JSON config (forge.components.node_gate)")
    parser.add_argument("--api", help="API server URL (default: in-cluster, as the pod's service account)")
    parser.add_argument("--token-file", help="with --api: a bearer token file")
    parser.add_argument("--ca-file", help="with --api: the server's CA")
    parser.add_argument("--interval", type=float, default=30, help="seconds between passes")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    parser.add_argument("--alive", help="a file the gate touches after every pass (its probes read it)")
    parser.add_argument("--probe", action="store_true",
                        help="exit 0 if the --alive file was touched within 3 intervals, else 1 (the pod's probes)")
    args = parser.parse_args(argv)
    if args.probe:
        return probe(args.alive, 3 * args.interval)
    with open(args.config, encoding="utf-8") as f:
        config = json.load(f)
    if args.api:
        token = open(args.token_file, encoding="utf-8").read().strip() if args.token_file else None
        context = ssl.create_default_context(cafile=args.ca_file) if args.ca_file else None
        call = api_caller(args.api, token, context)
    else:
        with open(f"{SA_DIR}/token", encoding="utf-8") as f:
            token = f.read().strip()
        call = api_caller(IN_CLUSTER, token, ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt"))
    gate = Gate(config, call, lambda line: print(line, flush=True))
    while True:
        gate.step()
        if args.alive:
            Path(args.alive).write_text(f"{time.time():.0f}\n", encoding="utf-8")
        if args.once:
            return 0
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())

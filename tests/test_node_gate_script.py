"""forge.pod_scripts.node_gate's decisions, one pass at a time, on API answers written here (the style of
tests/test_node_release.py); the whole loop runs on the box's real API server with the stand-in
upgrade controller (clusters/h200/scenarios.yaml, driver-rollout-gated)."""
from __future__ import annotations

import copy

from forge.pod_scripts import node_gate as g

TAINT = "forge.exa.ai/untested"


def _node(name: str, state: str, skip: str | None = None, taint: bool = False, **annotations: str) -> dict:
    labels = {g.STATE_LABEL: state, **({g.SKIP_LABEL: skip} if skip else {})}
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": labels, "annotations": dict(annotations)},
            "spec": {"taints": [{"key": TAINT, "effect": "NoSchedule"}] if taint else []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


class Api:
    """Nodes and Jobs as the API server would hold them; patches applied, creations kept."""

    def __init__(self, nodes: list[dict], jobs: dict[str, str] | None = None) -> None:
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.jobs, self.created, self.events = dict(jobs or {}), [], []

    def __call__(self, method: str, path: str, body, content_type: str):
        name = path.split("?")[0].rsplit("/", 1)[1]
        if "/nodes/" in path:
            node = self.nodes[name]
            if method == "PATCH" and content_type == "application/merge-patch+json":
                for part in ("labels", "annotations"):
                    for k, v in (body["metadata"].get(part) or {}).items():
                        node["metadata"].setdefault(part, {}).pop(k, None) if v is None else node["metadata"][part].__setitem__(k, v)
            elif method == "PATCH":
                node["spec"]["taints"] = body[1]["value"]
            return copy.deepcopy(node)
        if method == "POST" and path.endswith("/events"):
            self.events.append(body)
            return body
        if method == "POST":
            self.created.append(body["metadata"]["name"])
            self.jobs[body["metadata"]["name"]] = "running"
            return body
        if method == "DELETE":
            self.jobs.pop(name, None)
            return None
        state = self.jobs.get(name)
        kind = {"passed": "Complete", "failed": "Failed"}.get(state or "")
        return None if state is None else {"status": {"conditions": [{"type": kind, "status": "True"}] if kind else []}}


def _job(name: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "gpu-operator"}}


CONFIG = {"namespace": "gpu-operator", "taint": TAINT, "max_parallel": 1, "repair_seconds": 600, "racks": [],
          "rack_of": {}, "nodes": ["n1", "n2", "n3"],
          "tests": {n: [_job(f"forge-node-test-dcgm-{n}"), _job(f"forge-node-test-nccl-{n}")] for n in ("n1", "n2", "n3")}}


def _gate(api: Api) -> g.Gate:
    return g.Gate(CONFIG, api, say=lambda line: None)


def test_only_the_first_waiting_node_is_opened_and_it_is_tainted_first():
    api = Api([_node(n, g.REQUIRED, skip="true") for n in ("n1", "n2", "n3")])
    _gate(api).step()
    n1, n2, n3 = (api.nodes[n] for n in ("n1", "n2", "n3"))
    assert g.SKIP_LABEL not in n1["metadata"]["labels"] and g.tainted(n1, TAINT)
    assert n2["metadata"]["labels"][g.SKIP_LABEL] == n3["metadata"]["labels"][g.SKIP_LABEL] == "true"


def test_tests_run_one_after_the_other_and_the_next_node_opens_only_when_all_passed():
    api = Api([_node("n1", g.DONE, taint=True, **{g.ROUND: "started"}), _node("n2", g.REQUIRED, skip="true"),
               _node("n3", g.REQUIRED, skip="true")])
    gate = _gate(api)
    gate.step()
    assert api.created == ["forge-node-test-dcgm-n1"] and api.nodes["n2"]["metadata"]["labels"][g.SKIP_LABEL] == "true"
    api.jobs["forge-node-test-dcgm-n1"] = "passed"
    gate.step()
    assert api.created[-1] == "forge-node-test-nccl-n1" and api.nodes["n2"]["metadata"]["labels"][g.SKIP_LABEL] == "true"
    api.jobs["forge-node-test-nccl-n1"] = "passed"
    gate.step()
    assert not g.tainted(api.nodes["n1"], TAINT) and api.nodes["n1"]["metadata"]["annotations"][g.ROUND] == "passed"
    assert g.SKIP_LABEL not in api.nodes["n2"]["metadata"]["labels"]  # the next one
    assert api.nodes["n3"]["metadata"]["labels"][g.SKIP_LABEL] == "true"


def test_a_failed_test_stops_the_rollout_until_the_node_is_released_on_the_record():
    api = Api([_node("n1", g.DONE, taint=True, **{g.ROUND: "started"}), _node("n2", g.REQUIRED, skip="true"),
               _node("n3", g.REQUIRED, skip="true")], jobs={"forge-node-test-dcgm-n1": "failed"})
    gate = _gate(api)
    for _ in range(3):
        gate.step()
    assert g.tainted(api.nodes["n1"], TAINT) and api.nodes["n2"]["metadata"]["labels"][g.SKIP_LABEL] == "true"
    assert api.nodes["n1"]["metadata"]["annotations"][g.ROUND] == "failed:forge-node-test-dcgm-n1"
    api.nodes["n1"]["metadata"]["annotations"][g.RELEASE_REQUEST] = "fan replaced, RMA-123"
    gate.step()
    n1 = api.nodes["n1"]
    assert not g.tainted(n1, TAINT) and g.RELEASE_REQUEST not in n1["metadata"]["annotations"]
    assert n1["metadata"]["annotations"][g.RELEASED] == "fan replaced, RMA-123 (against forge-node-test-dcgm-n1)"
    assert [e["reason"] for e in api.events] == ["ReleasedAgainstFailedTest"] and "forge-node-test-dcgm-n1" not in api.jobs
    assert g.SKIP_LABEL not in api.nodes["n2"]["metadata"]["labels"]  # the rollout moves on


def test_a_node_entering_an_upgrade_is_tainted_and_its_old_tests_cleared():
    api = Api([_node("n1", "drain-required", skip="true", **{g.ROUND: "passed"}), _node("n2", g.DONE), _node("n3", g.DONE)],
              jobs={"forge-node-test-dcgm-n1": "passed"})
    _gate(api).step()
    assert g.tainted(api.nodes["n1"], TAINT) and api.nodes["n1"]["metadata"]["annotations"][g.ROUND] == "started"
    assert "forge-node-test-dcgm-n1" not in api.jobs


def test_the_probe_is_ready_only_after_a_pass_and_fails_when_passes_stop(tmp_path):
    import os
    import time
    alive = tmp_path / "alive"
    probe = ["config.json", "--interval=30", f"--alive={alive}", "--probe"]
    assert g.main(probe) == 1  # no pass yet: not ready
    alive.write_text("1\n")
    assert g.main(probe) == 0
    stale = time.time() - 91  # three intervals and a second without a pass: a hung gate
    os.utime(alive, (stale, stale))
    assert g.main(probe) == 1

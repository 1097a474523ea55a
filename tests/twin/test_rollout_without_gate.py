"""The box's upgrade scenario (clusters/h200/scenarios.yaml, driver-rollout-gated) proves the node
gate, so it must fail without it (issue 34): played on the box of a rendered copy of the repo
whose synced output is changed as Argo CD would sync a changed output (the repo's own generated
files are never touched), once with the gate's objects pruned, and once with a gate that taints
and tests but never holds a node back (the upgrade library alone paces the rollout, as before the
gate). Each time the rollout fails naming a node that started while an earlier one had not passed;
without the hold, one that started while h200-gpu-03's test had failed. The shipped scenario's
pass is tests/twin/test_scenarios.py's."""
from __future__ import annotations

import copy
import re

import pytest

from forge.pod_scripts import node_gate
from forge.twin.run import box_runner
from forge.twin.sources import applications
from tests.twin.conftest import say
from tests.twin.test_scenarios import resolved

SCENARIO = "driver-rollout-gated"
# The gate's one line that waits: no node is opened while one is out, under test or failed.
WAITS = 'slots = 0 if stop else max(0, self.config["max_parallel"] - busy)'


def _gate_objects(boxes) -> list[dict]:
    plan, _, _, _ = boxes.get("h200")
    return [copy.deepcopy(i.obj) for a in applications(boxes.root, plan, boxes.upstream, None) if a.component == "gpu-operator"
            for i in a.items if i.obj["metadata"]["name"] == "forge-node-gate"]


def _play(boxes, box_programs):
    plan, kube, _, _ = boxes.get("h200")
    return box_runner(boxes.root, kube, plan, say).run(resolved(boxes.root, "h200")[SCENARIO])


def _pruned(kube, objects: list[dict]) -> None:
    for obj in objects:
        kube.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))


def _never_holds_back(kube, objects: list[dict]) -> None:
    cm = copy.deepcopy(next(o for o in objects if o["kind"] == "ConfigMap"))
    script = cm["data"][node_gate.SCRIPT]
    assert script.count(WAITS) == 1, "the gate's waiting line moved: update WAITS"
    cm["data"][node_gate.SCRIPT] = script.replace(WAITS, "slots = len(nodes)")
    kube.apply(cm)


CASES = [
    (_pruned, r"rollout: h200-gpu-02 started while h200-gpu-01's tests had not passed \(never run\)"),
    (_never_holds_back, r"started while h200-gpu-03's tests had failed \(failed:forge-node-test-dcgm-h200-gpu-03\)"),
]


@pytest.mark.parametrize("remove, said", CASES, ids=["gate-pruned", "gate-never-holds-back"])
def test_the_upgrade_scenario_fails_without_the_gate(boxes, box_programs, remove, said):
    _, kube, _, _ = boxes.get("h200")
    objects = _gate_objects(boxes)
    assert {o["kind"] for o in objects} >= {"ConfigMap", "Deployment", "ServiceAccount", "ClusterRole"}
    remove(kube, objects)
    try:
        outcome = _play(boxes, box_programs)
    finally:
        for obj in objects:  # the synced gate back, as the copy renders it, for the tests after this one
            kube.apply(obj)
    text = "\n".join(outcome.lines)
    say(f"without the gate ({remove.__name__.strip('_')}): {text}")
    assert not outcome.passed, text
    assert re.search(said, text), text

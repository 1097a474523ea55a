"""The seed's workloads on both shipped fleets, on a real kube-apiserver, scheduler, controller
manager, Kueue and training-operator, with forge's output applied as Argo CD applies it."""
from __future__ import annotations

import functools

import pytest

from forge.twin.run import box_runner
from forge.twin.scenario import load_scenarios
from forge.twin.tasks import resolve
from tests.helpers import CLUSTERS, REPO
from tests.twin.conftest import say

@functools.lru_cache(maxsize=None)
def resolved(root, cluster: str) -> dict:
    """The cluster's scenarios with each job naming a task of workflows/ built from its compiled spec."""
    return {s.name: s for s in resolve(root, load_scenarios(root, cluster))}


SHIPPED = [(cluster, s.name) for cluster in CLUSTERS for s in load_scenarios(REPO, cluster)]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_api_server_accepts_every_object_forge_renders(boxes, cluster):
    _, _, state, report = boxes.get(cluster)
    assert [str(r) for r in report.refused] == []
    assert state.nfd_findings == []
    assert report.applied > 200
    # Only what the box cannot serve is set aside, each with its reason.
    assert all(a.why for a in report.set_aside)


@pytest.mark.parametrize("cluster, name", SHIPPED)
def test_shipped_scenario(boxes, box_programs, cluster, name):
    plan, kube, _, _ = boxes.get(cluster)
    scenario = resolved(boxes.root, cluster)[name]
    outcome = box_runner(boxes.root, kube, plan, say).run(scenario)  # the Runner `forge twin run` and `forge bench` use
    assert outcome.passed, "\n".join(outcome.lines)


def test_every_fleet_ships_the_seeds_scenarios():
    for cluster in CLUSTERS:
        # a100 has no compute fabric and runs no JupyterHub
        fabric = {"busy-node-test", "driver-rollout-gated", "doca-rollout-gated", "developer-pod-two-spawns"} \
            if cluster == "h200" else set()
        assert {n for c, n in SHIPPED if c == cluster} == {
            "pretrain-whole-pool", "thirty-sweeps", "urgent-finetune-preempts-batch", "mig-slices", "network-flows",
            "busy-pretrain", "busy-urgent-finetune", "busy-node-not-ready", *fabric}

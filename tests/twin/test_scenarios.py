"""The seed's workloads on both shipped fleets, on a real kube-apiserver, scheduler, controller
manager, Kueue and training-operator, with forge's output applied as Argo CD applies it."""
from __future__ import annotations

import pytest

from forge.twin.run import Runner
from forge.twin.scenario import load_scenarios
from forge.twin.submit import Propeller
from tests.helpers import CLUSTERS, REPO
from tests.twin.conftest import say

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
def test_shipped_scenario(boxes, cluster, name):
    plan, kube, _, _ = boxes.get(cluster)
    scenario = next(s for s in load_scenarios(boxes.root, cluster) if s.name == name)
    runner = Runner(kube, plan, Propeller.from_values(boxes.root / "overlays" / cluster / "flyte" / "values.yaml"), say, boxes.root)
    outcome = runner.run(scenario)
    assert outcome.passed, "\n".join(outcome.lines)


def test_every_fleet_ships_the_seeds_scenarios():
    for cluster in CLUSTERS:
        fabric = {"busy-node-test"} if cluster == "h200" else set()  # a100 has no NCCL pair test
        assert {n for c, n in SHIPPED if c == cluster} == {
            "pretrain-whole-pool", "thirty-sweeps", "urgent-finetune-preempts-batch", "mig-slices",
            "busy-pretrain", "busy-urgent-finetune", "busy-node-not-ready", *fabric}

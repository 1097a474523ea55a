"""forge.pod_scripts.node_gate holds the Network Operator's DOCA driver rollout as it holds the GPU driver's
(issue 34): the same k8s-operator-libs upgrade library runs it under the driver name `ofed`
(`nvidia.com/ofed-driver-upgrade-state`, `nvidia.com/ofed-driver-upgrade.skip`; in requestor mode
a node goes upgrade-required -> node-maintenance-required -> ... -> upgrade-done), so the gate holds
that skip label too, one node and one driver at a time, on passed tests. API answers written here,
as in tests/test_node_gate_script.py."""
from __future__ import annotations

from forge.model import day_two
from forge.pod_scripts import node_gate as g
from tests.test_node_gate_script import TAINT, Api, _job

GPU_STATE, OFED_STATE = (g.STATE_FORMAT.format(driver=d) for d in ("gpu", "ofed"))
GPU_SKIP, OFED_SKIP = (g.SKIP_FORMAT.format(driver=d) for d in ("gpu", "ofed"))
NODES = ("n1", "n2", "n3")
CONFIG = {"namespace": "gpu-operator", "taint": TAINT, "max_parallel": 1, "repair_seconds": 600, "racks": [],
          "rack_of": {}, "nodes": list(NODES), "drivers": ["gpu", "ofed"],
          "tests": {n: [_job(f"forge-node-test-dcgm-{n}"), _job(f"forge-node-test-nccl-{n}")] for n in NODES}}


def _node(name: str, gpu: str = g.DONE, ofed: str = g.DONE, taint: bool = False, held: bool = True, **annotations: str) -> dict:
    labels = {GPU_STATE: gpu, OFED_STATE: ofed, **({GPU_SKIP: "true", OFED_SKIP: "true"} if held else {})}
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": labels, "annotations": dict(annotations)},
            "spec": {"taints": [{"key": TAINT, "effect": "NoSchedule"}] if taint else []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def _labels(api: Api, name: str) -> dict:
    return api.nodes[name]["metadata"]["labels"]


def _gate(api: Api) -> g.Gate:
    return g.Gate(CONFIG, api, say=lambda line: None)


def test_the_script_s_label_formats_are_the_upgrade_library_s():
    assert g.STATE_FORMAT == day_two.UPGRADE_STATE_LABEL and g.SKIP_FORMAT == day_two.SKIP_LABEL
    assert (OFED_STATE, OFED_SKIP) == ("nvidia.com/ofed-driver-upgrade-state", "nvidia.com/ofed-driver-upgrade.skip")


def test_a_doca_bump_opens_only_the_first_node_tainted_first_and_holds_every_other():
    api = Api([_node(n, ofed=g.REQUIRED) for n in NODES])
    _gate(api).step()
    assert OFED_SKIP not in _labels(api, "n1") and g.tainted(api.nodes["n1"], TAINT)
    assert _labels(api, "n1")[GPU_SKIP] == "true"
    assert all(_labels(api, n)[OFED_SKIP] == "true" for n in ("n2", "n3"))


def test_the_gate_holds_the_doca_skip_label_on_nodes_that_never_had_it():
    """A gate that held only the GPU label: a DOCA bump on unlabelled nodes is let through on all."""
    api = Api([_node(n, held=False) for n in NODES])
    _gate(api).step()
    assert all(_labels(api, n)[OFED_SKIP] == _labels(api, n)[GPU_SKIP] == "true" for n in NODES)


def test_a_node_in_node_maintenance_is_tested_at_upgrade_done_before_the_next_opens():
    api = Api([_node("n1", ofed="node-maintenance-required", **{g.ROUND: "passed"}),
               _node("n2", ofed=g.REQUIRED), _node("n3", ofed=g.REQUIRED)], jobs={"forge-node-test-dcgm-n1": "passed"})
    gate = _gate(api)
    gate.step()
    assert g.tainted(api.nodes["n1"], TAINT) and "forge-node-test-dcgm-n1" not in api.jobs  # a new round
    assert api.created == [] and _labels(api, "n2")[OFED_SKIP] == "true"
    _labels(api, "n1")[OFED_STATE] = g.DONE  # the Maintenance Operator released it, the driver is in
    gate.step()
    assert api.created == ["forge-node-test-dcgm-n1"] and _labels(api, "n2")[OFED_SKIP] == "true"
    api.jobs["forge-node-test-dcgm-n1"] = "passed"
    gate.step()
    api.jobs["forge-node-test-nccl-n1"] = "passed"
    gate.step()
    assert not g.tainted(api.nodes["n1"], TAINT)
    assert OFED_SKIP not in _labels(api, "n2") and _labels(api, "n3")[OFED_SKIP] == "true"  # the next one


def test_a_failed_test_stops_the_doca_rollout():
    api = Api([_node("n1", taint=True, **{g.ROUND: "started"}), _node("n2", ofed=g.REQUIRED),
               _node("n3", ofed=g.REQUIRED)], jobs={"forge-node-test-dcgm-n1": "failed"})
    gate = _gate(api)
    for _ in range(3):
        gate.step()
    assert _labels(api, "n2")[OFED_SKIP] == _labels(api, "n3")[OFED_SKIP] == "true"
    # a DOCA bump reaching the failed node does not hide its failure: the rollout stays stopped
    _labels(api, "n1")[OFED_STATE] = g.REQUIRED
    gate.step()
    assert all(_labels(api, n)[OFED_SKIP] == "true" for n in NODES) and g.tainted(api.nodes["n1"], TAINT)


def test_one_driver_at_a_time_on_a_node_that_needs_both():
    api = Api([_node("n1", gpu=g.REQUIRED, ofed=g.REQUIRED), _node("n2", gpu=g.REQUIRED, ofed=g.REQUIRED),
               _node("n3")])
    gate = _gate(api)
    gate.step()
    assert GPU_SKIP not in _labels(api, "n1") and _labels(api, "n1")[OFED_SKIP] == "true"
    _labels(api, "n1")[GPU_STATE] = "drain-required"
    gate.step()
    assert _labels(api, "n1")[OFED_SKIP] == "true" and _labels(api, "n2")[GPU_SKIP] == "true"
    _labels(api, "n1")[GPU_STATE] = g.DONE  # the GPU driver is in: the DOCA driver's turn, on the same node
    gate.step()
    assert OFED_SKIP not in _labels(api, "n1") and _labels(api, "n1")[GPU_SKIP] == "true"
    assert api.created == [] and _labels(api, "n2")[GPU_SKIP] == _labels(api, "n2")[OFED_SKIP] == "true"
    _labels(api, "n1")[OFED_STATE] = g.DONE  # both drivers in: one round of tests for both
    gate.step()
    assert api.created == ["forge-node-test-dcgm-n1"] and _labels(api, "n2")[GPU_SKIP] == "true"


def test_an_opened_node_runs_no_test_before_its_upgrade_begins():
    """Tainted and let through, still upgrade-required: a test pod now would meet the drain."""
    api = Api([_node("n1", ofed=g.REQUIRED, taint=True, **{g.ROUND: "started"}), _node("n2"), _node("n3")])
    _labels(api, "n1").pop(OFED_SKIP)
    _gate(api).step()
    assert api.created == []

"""forge.pod_scripts.node_gate tests a node again after it booted again (issue 34: "a node entering a driver or
firmware change, a repair ... is held out of service until its tests pass"): a firmware flash of a
GPU, an NVSwitch or a NIC is activated by a reboot, and a repair often takes less than the gate's
10 minutes of NotReady, so neither needed a person to taint the node by hand any more. The signal
is the kubelet's `status.nodeInfo.bootID`, new on every boot; the gate notes the one it saw in
`forge.exa.ai/tested-boot`. API answers written here, as in tests/test_node_gate_script.py."""
from __future__ import annotations

from forge.pod_scripts import node_gate as g
from tests.test_node_gate_script import CONFIG, TAINT, Api, _node


def _booted(node: dict, boot: str) -> dict:
    node["status"]["nodeInfo"] = {"bootID": boot}
    return node


def _gate(api: Api) -> g.Gate:
    return g.Gate(CONFIG, api, say=lambda line: None)


def test_a_serving_node_seen_for_the_first_time_is_taken_as_tested_on_its_boot():
    api = Api([_booted(_node("n1", g.DONE), "boot-a"), _node("n2", g.DONE), _node("n3", g.DONE)])
    _gate(api).step()
    n1 = api.nodes["n1"]
    assert n1["metadata"]["annotations"][g.BOOT] == "boot-a" and not g.tainted(n1, TAINT) and api.created == []


def test_a_node_that_booted_again_is_tainted_and_tested_again():
    api = Api([_booted(_node("n1", g.DONE, **{g.ROUND: "passed", g.BOOT: "boot-a"}), "boot-b"),
               _node("n2", g.DONE), _node("n3", g.DONE)], jobs={"forge-node-test-dcgm-n1": "passed"})
    gate = _gate(api)
    gate.step()
    n1 = api.nodes["n1"]
    assert g.tainted(n1, TAINT) and n1["metadata"]["annotations"][g.BOOT] == "boot-b"
    assert api.created == ["forge-node-test-dcgm-n1"]  # the old round's Jobs went, the new one runs
    api.jobs["forge-node-test-dcgm-n1"] = api.jobs["forge-node-test-nccl-n1"] = "passed"
    gate.step()
    gate.step()
    assert not g.tainted(api.nodes["n1"], TAINT) and api.nodes["n1"]["metadata"]["annotations"][g.ROUND] == "passed"


def test_a_failed_node_repaired_and_booted_again_is_tested_again_by_itself():
    api = Api([_booted(_node("n1", g.DONE, taint=True, **{g.ROUND: "failed:forge-node-test-dcgm-n1", g.BOOT: "boot-a"}),
                       "boot-b"), _node("n2", g.DONE), _node("n3", g.DONE)], jobs={"forge-node-test-dcgm-n1": "failed"})
    _gate(api).step()
    assert api.nodes["n1"]["metadata"]["annotations"][g.ROUND] == "started" and api.created == ["forge-node-test-dcgm-n1"]


def test_the_same_boot_is_not_tested_again():
    api = Api([_booted(_node("n1", g.DONE, **{g.ROUND: "passed", g.BOOT: "boot-a"}), "boot-a"),
               _node("n2", g.DONE), _node("n3", g.DONE)])
    _gate(api).step()
    assert not g.tainted(api.nodes["n1"], TAINT) and api.created == []

"""Node tests (forge.components.node_tests): a DCGM diagnostics Job per GPU node, at the level the
inventory names, with the DCGM image the pinned GPU Operator's values pin; never synced."""
from __future__ import annotations

import yaml

from forge.components.gpu_operator import GpuOperator
from tests.helpers import H200_FILE, REPO, edit, inventory_text, line_of, model, problems

KNOB = "      wait_for_completion: {pod_selector: forge.exa.ai/workload, timeout_seconds: 86400}\n"


def _job(cluster: str, node: str) -> dict:
    return yaml.safe_load((REPO / f"overlays/{cluster}/gpu-operator/node-tests/dcgm-{node}.yaml").read_text())


def test_every_whole_gpu_node_has_a_dcgm_diagnostics_job_with_the_pinned_image():
    for name in ("h200", "a100"):
        cluster = model(name)
        tested = [n for n in cluster.gpu_nodes if n.mig_layout in (None, "all-disabled")]
        assert tested
        for node in tested:
            job = _job(name, node.name)
            spec = job["spec"]["template"]["spec"]
            [container] = spec["containers"]
            assert container["image"] == "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04"
            assert "dcgmi diag -r 3" in container["command"][-1]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == node.gpu_count
            assert spec["nodeSelector"] == {"kubernetes.io/hostname": node.name} and job["spec"]["backoffLimit"] == 0
            assert job["metadata"]["name"] == f"forge-node-test-dcgm-{node.name}"
        # MIG-split nodes get none: the diagnostics need whole GPUs
        for node in cluster.gpu_nodes:
            assert (REPO / f"overlays/{name}/gpu-operator/node-tests/dcgm-{node.name}.yaml").exists() == (node in tested)
    kustomization = yaml.safe_load((REPO / "overlays/h200/gpu-operator/kustomization.yaml").read_text())
    assert not [r for r in kustomization["resources"] if "node-tests" in r]


def test_the_diagnostics_level_comes_from_the_inventory():
    text = edit(inventory_text("h200"), KNOB, KNOB + "    node_tests: {dcgm_level: 1}\n")
    files = GpuOperator().local_files(model("h200", text))
    assert files and all("dcgmi diag -r 1;" in j["spec"]["template"]["spec"]["containers"][0]["command"][-1] for j in files.values())


def test_a_diagnostics_level_out_of_range_is_refused_with_its_line():
    text = edit(inventory_text("h200"), KNOB, KNOB + "    node_tests: {dcgm_level: 5}\n")
    [problem] = [p for p in problems(text) if "dcgm_level" in p]
    assert problem.startswith(f"{H200_FILE}:{line_of(text, 'dcgm_level: 5')}: components.gpu-operator.node_tests.dcgm_level:")

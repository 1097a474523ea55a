"""forge diff: a pull request that bumps both the GPU and the DOCA driver is a HIGH risk with its
reason, listed before every other flag (forge.diff.driver_risks)."""
from __future__ import annotations

import copy

from forge.diff.report import markdown, text
from tests.diff.test_risks import nic_policy, report_for


def app(cluster: str, component: str, chart: str) -> dict:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": f"{cluster}-{component}", "namespace": "argocd"},
            "spec": {"sources": [{"repoURL": "https://helm.ngc.nvidia.com/nvidia", "chart": chart, "targetRevision": "1.0.0",
                                  "helm": {"valueFiles": [f"$values/overlays/{cluster}/{component}/values.yaml"]}}]}}


BOOT = {("h200", "argocd"): [app("h200", "gpu-operator", "gpu-operator"), app("h200", "network-operator", "network-operator")]}
OLD_GPU = {("h200", "gpu-operator"): {"driver": {"version": "580.95.05", "rdma": {"enabled": False}}}}
NEW_GPU = {("h200", "gpu-operator"): {"driver": {"version": "595.91.07", "rdma": {"enabled": False}}}}


def _policies(bump_doca: bool):
    old = nic_policy("25.04-0.6.1.0-2", '{"configList": []}')
    new = copy.deepcopy(old)
    if bump_doca:
        new["spec"]["ofedDriver"]["version"] = "25.07-0.9.7.0-0"
    return {**BOOT, ("h200", "network-operator"): [old]}, {**BOOT, ("h200", "network-operator"): [new]}


def test_both_drivers_in_one_pull_request_is_high_and_listed_first(clusters):
    old, new = _policies(bump_doca=True)
    report = report_for(clusters, old, new, OLD_GPU, NEW_GPU)
    first = report.flags[0]
    assert (first.level, first.cluster, first.kind) == ("high", "h200", "drivers")
    assert "gpu-operator driver.version 580.95.05 -> 595.91.07" in first.message
    assert "spec.ofedDriver.version 25.04-0.6.1.0-2 -> 25.07-0.9.7.0-0" in first.message
    assert "both drivers reload kernel modules at once on the same node" in first.message
    assert "Bump one driver per pull request" in first.message
    # the two driver restarts are HIGH too, and come after it
    assert [f.kind for f in report.flags if f.level == "high"][:1] == ["drivers"]
    assert len([f for f in report.flags if f.kind == "restart"]) >= 2
    # first in the text and in the pull-request comment alike
    risks = text(report).split("risks (")[1].splitlines()
    assert risks[1].startswith("  HIGH   h200/gpu-operator+network-operator [drivers] the GPU driver")
    comment = markdown(report)
    rows = [line for line in comment.splitlines() if line.startswith("| **")]
    assert rows[0].startswith("| **HIGH** | h200 | gpu-operator+network-operator | the GPU driver (")


def test_one_driver_per_pull_request_is_not_flagged(clusters):
    old, new = _policies(bump_doca=False)
    assert not [f for f in report_for(clusters, old, new, OLD_GPU, NEW_GPU).flags if f.kind == "drivers"]
    old, new = _policies(bump_doca=True)
    assert not [f for f in report_for(clusters, old, new, OLD_GPU, OLD_GPU).flags if f.kind == "drivers"]


def test_an_nvidiadriver_pool_bump_counts_as_the_gpu_driver(clusters):
    def pool(version: str) -> dict:
        return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "forge-sr680a-h200"},
                "spec": {"version": version, "driverType": "gpu"}}
    old, new = _policies(bump_doca=True)
    old[("h200", "gpu-operator")], new[("h200", "gpu-operator")] = [pool("580.95.05")], [pool("595.91.07")]
    [flag] = [f for f in report_for(clusters, old, new).flags if f.kind == "drivers"]
    assert "NVIDIADriver forge-sr680a-h200 (nvidia.com) spec.version 580.95.05 -> 595.91.07" in flag.message

"""GPU drivers per pool: one NVIDIADriver per GPU profile when the cluster's GPU generations need
different branches (charts/versions.yaml gpu_drivers), the ClusterPolicy driver otherwise, and a
comment in the generated values saying which branch serves which GPUs on a cluster of several
GPU models."""
from __future__ import annotations

from forge.components.driver_upgrades import chart_upgrade_policy, upgrade_policy
from forge.facts import hardware
from forge.components.gpu_drivers import dma_buf, driver_notes, driver_pools, needs_peermem, needs_pools
from forge.components.gpu_operator import GpuOperator
from forge.facts.versions import versions
from tests.helpers import REPO, edit, generated, generated_dir, inventory_text, model

TWO_PROFILES = """  control-plane:
    server: generic-1u"""



def drivers(objects: list[dict]) -> list[dict]:
    """The NVIDIADriver CRs among the GPU Operator's manifests (the node gate's objects are there too)."""
    return [o for o in objects if o["kind"] == "NVIDIADriver"]

def _with_second_gpu_profile(gpu: str, server: str, nics: str = "") -> str:
    """The h200 inventory with one whole-GPU node (h200-gpu-16) on a second GPU profile."""
    profile = (f"  second-gpu:\n    server: {server}\n    cpu_threads: 96\n    memory_gib: 1024\n"
               f"    gpu: {{model: {gpu}, count: 8, nvlink: 3}}\n{nics}"
               "    nvme:\n      - {device: /dev/nvme0n1, size_gb: 3840, mount: /mnt/nvme0}\n")
    text = edit(inventory_text("h200"), TWO_PROFILES, profile + TWO_PROFILES)
    return edit(text, "  - name: h200-gpu-16\n    profile: sr680a-h200\n", "  - name: h200-gpu-16\n    profile: second-gpu\n")


def test_shipped_fleets_stay_on_the_clusterpolicy_driver():
    for cluster in ("a100", "h200"):
        m = model(cluster)
        assert not needs_pools(m) and driver_pools(m) == ()
        assert GpuOperator().values_notes(m) == []
        assert not [o for o in generated_dir(f"overlays/{cluster}/gpu-operator") if o["kind"] == "NVIDIADriver"]
        assert GpuOperator().values(m)["driver"]["version"] == versions(REPO).gpu_drivers[m.gpu_models[0].architecture]


def test_generations_on_different_branches_get_an_nvidiadriver_per_pool():
    m = model("h200", _with_second_gpu_profile("A100-80GB", "supermicro-as-4124go-nart+"))
    pins = versions(REPO).gpu_drivers
    op = GpuOperator()
    pools = op.facts(m).driver_pools
    assert [(p.profile, p.architecture, p.version, p.rdma) for p in pools] == [
        ("sr680a-h200", "hopper", pins["hopper"], False),  # ConnectX-7 compute rails: over DMA-BUF, no peermem
        ("second-gpu", "ampere", pins["ampere"], False)]  # no compute NIC
    assert pools[1].nodes == ("h200-gpu-16",) and len(pools[0].nodes) == 17
    crs = drivers(op.manifests(m))
    assert [(c["metadata"]["name"], c["spec"]["nodeSelector"], c["spec"]["version"]) for c in crs] == [
        ("forge-sr680a-h200", {"forge.exa.ai/profile": "sr680a-h200"}, pins["hopper"]),
        ("forge-second-gpu", {"forge.exa.ai/profile": "second-gpu"}, pins["ampere"])]
    assert [c["spec"]["rdma"] for c in crs] == [{"enabled": False, "useHostMofed": False}, {"enabled": False, "useHostMofed": False}]
    assert [c["spec"].get("kernelModuleType") for c in crs] == ["open", None]  # DMA-BUF needs the open modules
    assert all(c["spec"]["default"] is False for c in crs)
    assert crs[0]["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "5"  # after the operator's CRDs
    assert op.values(m)["driver"] == {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False},
                                      "upgradePolicy": chart_upgrade_policy(op.settings(m).upgrade)}
    assert op.values_notes(m)[-2:] == [f"  forge-sr680a-h200: {pins['hopper']} for hopper (profile sr680a-h200)",
                                      f"  forge-second-gpu: {pins['ampere']} for ampere (profile second-gpu)"]
    expected = {e.path: e.value for e in op.expected_in_hydrated(m) if e.kind == "ClusterPolicy"}
    assert expected["spec.driver.useNvidiaDriverCRD"] is True and "spec.driver.version" not in expected


def test_generations_one_branch_serves_keep_one_driver_and_say_so():
    # H100 and H200 are both Hopper: one pinned branch serves both.
    m = model("h200", _with_second_gpu_profile("H100-80GB", "dell-xe9680"))
    op = GpuOperator()
    version = versions(REPO).gpu_drivers["hopper"]
    assert op.facts(m).driver_pools == () and drivers(op.manifests(m)) == []
    assert op.values(m)["driver"]["version"] == version
    assert op.values_notes(m) == [f"One driver branch serves every GPU of this cluster: {version} "
                                  "(charts/versions.yaml gpu_drivers: hopper) for H100-80GB, H200-141GB."]


def test_every_pool_upgrades_like_the_clusterpolicy_driver():
    # The driver upgrade policy (components.gpu-operator.upgrade) reaches every pool's NVIDIADriver
    # under the custom resource's field names, and the ClusterPolicy under the chart's.
    m = model("h200", _with_second_gpu_profile("A100-80GB", "supermicro-as-4124go-nart+"))
    op = GpuOperator()
    policy = upgrade_policy(op.settings(m).upgrade)
    crs = drivers(op.manifests(m))
    assert len(crs) == 2 and all(c["spec"]["upgradePolicy"] == policy for c in crs)
    assert "podDeletion" in policy and "gpuPodDeletion" not in policy
    chart = op.values(m)["driver"]["upgradePolicy"]
    assert chart["gpuPodDeletion"] == policy["podDeletion"]
    assert {k: v for k, v in chart.items() if k != "gpuPodDeletion"} == {k: v for k, v in policy.items() if k != "podDeletion"}
    assert driver_notes(m, ()) != []  # two GPU models: the values say which branch serves them


# ---- GPUDirect RDMA over DMA-BUF, nvidia-peermem only where the GPU cannot -----------------------

def test_h200_does_gpudirect_rdma_over_dma_buf_without_nvidia_peermem():
    """nvidia-peermem depends on the DOCA driver's ib_core: with it, a GPU and a DOCA driver reload
    on one node can wedge. The H200s (open kernel modules, ConnectX-7) use DMA-BUF instead."""
    values = generated("overlays/h200/gpu-operator/values.yaml")["driver"]
    assert values["rdma"]["enabled"] is False
    assert values["kernelModuleType"] == "open"
    expected = {e.path: e.value for e in GpuOperator().expected_in_hydrated(model("h200")) if e.kind == "ClusterPolicy"}
    assert expected["spec.driver.rdma.enabled"] is False and expected["spec.driver.kernelModuleType"] == "open"
    # the A100 fleet has no GPUDirect NICs: neither peermem nor a module type said
    assert "kernelModuleType" not in generated("overlays/a100/gpu-operator/values.yaml")["driver"]


def test_a_gpu_the_catalogue_gives_no_dma_buf_keeps_nvidia_peermem(monkeypatch):
    """Where the hardware does not allow DMA-BUF, GPUDirect RDMA stays on nvidia-peermem."""
    real = hardware.catalogue()
    gpus = {k: g.model_copy(update={"dma_buf": False}) if k == "H200-141GB" else g for k, g in real.gpus.items()}
    monkeypatch.setattr(hardware, "catalogue", lambda: real.model_copy(update={"gpus": gpus}))
    m = model("h200")
    assert needs_peermem(m.gpu_nodes) and not dma_buf(m.gpu_nodes)
    driver = GpuOperator().values(m)["driver"]
    assert driver["rdma"] == {"enabled": True, "useHostMofed": False} and "kernelModuleType" not in driver


def test_every_catalogued_gpu_says_whether_it_can_use_dma_buf():
    text = (REPO / "generators/forge/facts/catalogue/hardware.yaml").read_text()
    assert "Using DMA-BUF" in text  # the source of the fact
    assert all(g.dma_buf for g in hardware.catalogue().gpus.values())  # every one is Ampere or later

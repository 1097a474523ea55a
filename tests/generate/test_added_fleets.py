"""Fleets added with data only (issue 12), through the whole pipeline: generate, render with the
real kustomize, validate (against the upstream chart data and CRDs when FORGE_UPSTREAM is set).

- `mixed-gen` (tests/fixtures/clusters): two A100 nodes (Ampere, Ethernet only, two 3.84 TB
  drives) and two H200 nodes (Hopper, ConnectX-7 rails, four 3.2 TB drives on other paths). Each
  pool gets its own driver branch (an NVIDIADriver per GPU profile), its own Alluxio tier layout
  (a worker-only chart release for the second pool), GPUDirect RDMA only where its NICs do it.
- `h100-xe9680`: the README's "Adding a fleet" example, Dell XE9680 servers with 8 x H100, a
  ConnectX-7 per GPU in InfiniBand mode for the rails (IPoIB) and MIG on some nodes.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from forge.components.alluxio import ssd_quota_gib
from forge.fleet import load_fleet
from forge.facts.hardware import GPU_MODELS, NIC_MODELS
from forge.facts.versions import versions
from tests.helpers import REPO, copy_repo_inputs, forge, kustomize_or_skip

FIXTURES = REPO / "tests" / "fixtures" / "clusters"
ADDED = ("h100-xe9680", "mixed-gen")
# The oldest driver branch that supports each GPU architecture, from NVIDIA's data-center driver
# release notes (Ampere: R450, Hopper and Ada: R525, Blackwell: R570).
MIN_BRANCH = {"ampere": 450, "hopper": 525, "ada": 525, "blackwell": 570}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repo made of the added fleets' inventories only, generated and rendered once."""
    kustomize_or_skip()
    inventories = tmp_path_factory.mktemp("added") / "inventories"
    for name in ADDED:
        shutil.copytree(FIXTURES / name, inventories / name)
    repo = copy_repo_inputs(inventories.parent / "repo", inventories)
    for command in ("generate", "render"):
        result = forge(repo, command)
        assert result.exit_code == 0, result.output
    return repo


def overlay(repo: Path, cluster: str, component: str, name: str = "values.yaml") -> dict:
    return yaml.safe_load((repo / "overlays" / cluster / component / name).read_text())


def rendered(repo: Path, cluster: str, component: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((repo / "build/rendered" / cluster / f"{component}.yaml").read_text()) if d]


def node_labels(repo: Path, cluster: str) -> dict[str, dict[str, str]]:
    """Every node's labels, as the NodeFeatureRules forge generates put them on healthy nodes: the
    per-node rules, and the NVMe label of Alluxio's rule on its mount probe's feature (evaluated as
    the fleet in a box does, from what the components say a healthy node reports)."""
    from forge.twin.nodes import nfd_results, node_features
    plan = load_fleet(repo).plan(cluster)
    rules = [(d, component) for component in ("node-feature-discovery", "alluxio")
             for d in (rendered(repo, cluster, component) if (repo / "overlays" / cluster / component).is_dir() else [])
             if d["kind"] == "NodeFeatureRule"]
    known = frozenset(f for n in plan.cluster.nodes for f in node_features(plan.cluster, n, plan.components))
    return {n.name: nfd_results(rules, n.name, node_features(plan.cluster, n, plan.components), known)[0]
            for n in plan.cluster.nodes}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_both_added_fleets_generate_render_and_validate(fleet: Path):
    upstream = os.environ.get("FORGE_UPSTREAM", "")
    result = forge(fleet, *(["validate", "--upstream", upstream] if upstream else ["validate"]))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (fleet / "build/rendered").iterdir()) == sorted(ADDED)
    assert ": 0 failures, " in result.output
    if upstream:
        assert result.output.endswith(": 0 failures, 0 unchecked\n")
    # The pool release's values file is validated with the rest (values.yaml of each chart + 1).
    charted = sum(1 for p in fleet.glob("overlays/*/*/values.yaml"))
    assert f"and {charted + 1} values files" in result.output


# ---- mixed generations: NVMe -------------------------------------------------------------------------

def _worker_releases(repo: Path) -> list[dict]:
    folder = repo / "overlays/mixed-gen/alluxio"
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("values*.yaml"))]


def test_mixed_cluster_caches_on_every_nvme_device_at_its_own_size(fleet: Path):
    """Sum of the SSD tier quotas over the nodes each release's workers run on = sum over every
    NVMe device of the inventory of its usable size; each device's mount is a tier path."""
    plan = load_fleet(fleet).plan("mixed-gen")
    reserve = plan.cluster.component_settings["alluxio"].ssd_reserve
    labels = node_labels(fleet, "mixed-gen")
    served: dict[str, list[tuple[str, int]]] = {}
    for values in _worker_releases(fleet):
        ssd = next(level for level in values["tieredstore"]["levels"] if level["alias"] == "SSD")
        dirs = list(zip(ssd["path"].split(","), (int(q.removesuffix("GB")) for q in ssd["quota"].split(","))))
        for node, node_labels_ in labels.items():
            if selects(values["worker"]["nodeSelector"], node_labels_):
                assert node not in served, f"{node} has two Alluxio workers"
                served[node] = dirs
    nvme_nodes = {n.name: n for n in plan.cluster.nodes if n.nvme}
    assert sorted(served) == sorted(nvme_nodes) == ["mx-a100-01", "mx-a100-02", "mx-h200-01", "mx-h200-02"]
    for name, node in nvme_nodes.items():
        assert served[name] == [(d.mount, ssd_quota_gib(d.size_gb, reserve)) for d in node.nvme], name
    total = sum(q for dirs in served.values() for _, q in dirs)
    assert total == sum(ssd_quota_gib(d.size_gb, reserve) for n in nvme_nodes.values() for d in n.nvme)
    assert total == 2 * 2 * 3218 + 2 * 4 * 2682  # 3.84 TB and 3.2 TB drives, 10 % kept free


def test_mixed_cluster_pool_release_is_one_more_chart_source_of_the_alluxio_application(fleet: Path):
    app = yaml.safe_load((fleet / "clusters/mixed-gen/argocd/apps/application-alluxio.yaml").read_text())
    charts = [s for s in app["spec"]["sources"] if "chart" in s]
    assert [(s["helm"]["releaseName"], s["helm"]["valueFiles"]) for s in charts] == [
        ("alluxio", ["$values/overlays/mixed-gen/alluxio/values.yaml"]),
        ("alluxio-h200-node", ["$values/overlays/mixed-gen/alluxio/values-alluxio-h200-node.yaml"])]
    assert len({(s["repoURL"], s["chart"], s["targetRevision"]) for s in charts}) == 1  # the one pinned chart
    pool = overlay(fleet, "mixed-gen", "alluxio", "values-alluxio-h200-node.yaml")
    assert pool["master"]["enabled"] is False and pool["proxy"]["enabled"] is False
    assert pool["fullnameOverride"] == "alluxio-h200-node"
    # The worker-down alert watches the pool's workers too.
    rule = next(d for d in rendered(fleet, "mixed-gen", "prometheus") if d["kind"] == "PrometheusRule")
    down = next(r for g in rule["spec"]["groups"] for r in g["rules"] if r.get("alert") == "AlluxioWorkerDown")
    assert 'pod=~"alluxio-worker-.+|alluxio-h200-node-worker-.+"' in down["expr"]


# ---- mixed generations: drivers and RDMA -----------------------------------------------------------------

def test_mixed_cluster_gives_each_pool_a_driver_that_supports_its_gpus(fleet: Path):
    drivers = [d for d in rendered(fleet, "mixed-gen", "gpu-operator") if d["kind"] == "NVIDIADriver"]
    labels = node_labels(fleet, "mixed-gen")
    plan = load_fleet(fleet).plan("mixed-gen")
    pins = versions(fleet).gpu_drivers
    covered: dict[str, str] = {}
    for cr in drivers:
        spec = cr["spec"]
        nodes = [n for n in plan.cluster.gpu_nodes if selects(spec["nodeSelector"], labels[n.name])]
        assert nodes, cr["metadata"]["name"]
        for node in nodes:
            assert node.name not in covered, f"{node.name} selected by two NVIDIADrivers"
            covered[node.name] = spec["version"]
            arch = GPU_MODELS[node.profile.gpu.model].architecture
            assert spec["version"] == pins[arch]  # the branch charts/versions.yaml gives its architecture
            assert int(spec["version"].split(".")[0]) >= MIN_BRANCH[arch]
        assert spec["default"] is False and spec["driverType"] == "gpu"
    assert covered == {"mx-a100-01": "580.95.05", "mx-a100-02": "580.95.05",
                       "mx-h200-01": "595.91.07", "mx-h200-02": "595.91.07"}
    # The ClusterPolicy leaves the driver to those CRs; its default CR stays off.
    gpu = overlay(fleet, "mixed-gen", "gpu-operator")
    assert gpu["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
    assert set(gpu["driver"]) == {"nvidiaDriverCRD", "upgradePolicy"}  # no cluster-wide version or RDMA
    assert all(cr["spec"]["upgradePolicy"]["podDeletion"] == gpu["driver"]["upgradePolicy"]["gpuPodDeletion"] for cr in drivers)


def test_mixed_cluster_turns_gpudirect_rdma_and_the_nic_driver_on_only_where_the_nics_do_it(fleet: Path):
    rdma = {d["spec"]["nodeSelector"]["forge.exa.ai/profile"]: d["spec"]["rdma"]
            for d in rendered(fleet, "mixed-gen", "gpu-operator") if d["kind"] == "NVIDIADriver"}
    assert rdma == {"a100-node": {"enabled": False, "useHostMofed": False},  # Intel E810: no GPUDirect RDMA
                    "h200-node": {"enabled": False, "useHostMofed": False}}  # ConnectX-7: over DMA-BUF, no peermem
    modules = {d["spec"]["nodeSelector"]["forge.exa.ai/profile"]: d["spec"].get("kernelModuleType")
               for d in rendered(fleet, "mixed-gen", "gpu-operator") if d["kind"] == "NVIDIADriver"}
    assert modules == {"a100-node": None, "h200-node": "open"}
    # The DOCA/OFED driver and the RDMA plugin run only on nodes with a Mellanox PCI device, which
    # node-feature-discovery labels: the A100 nodes have none.
    policy = next(d for d in rendered(fleet, "mixed-gen", "network-operator") if d["kind"] == "NicClusterPolicy")
    term = policy["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == [{"matchExpressions": [{"key": "feature.node.kubernetes.io/pci-15b3.present", "operator": "In", "values": ["true"]}]}]
    plan = load_fleet(fleet).plan("mixed-gen")
    vendors = {n.name: {NIC_MODELS[s.model].vendor_id for s in n.profile.nics} for n in plan.cluster.gpu_nodes}
    assert vendors == {"mx-a100-01": {"8086"}, "mx-a100-02": {"8086"}, "mx-h200-01": {"15b3"}, "mx-h200-02": {"15b3"}}
    # Rails run on the H200 nodes only.
    pools = [d for d in rendered(fleet, "mixed-gen", "network-operator") if d["kind"] == "IPPool"]
    assert pools and all(p["spec"]["nodeSelector"] for p in pools)


# ---- the third fleet -------------------------------------------------------------------------------------

def test_third_fleet_of_a_new_vendor_with_mig_on_some_nodes(fleet: Path):
    gpu = overlay(fleet, "h100-xe9680", "gpu-operator")
    assert gpu["driver"]["version"] == versions(fleet).gpu_drivers["hopper"]  # one generation: the ClusterPolicy driver
    assert gpu["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}  # GPUDirect over DMA-BUF
    assert gpu["driver"]["kernelModuleType"] == "open"
    assert not [d for d in rendered(fleet, "h100-xe9680", "gpu-operator") if d["kind"] == "NVIDIADriver"]
    assert gpu["mig"]["strategy"] == "mixed"  # half-3g leaves four GPUs whole
    config = yaml.safe_load(gpu["migManager"]["config"]["data"]["config.yaml"])["mig-configs"]
    assert sorted(config) == ["all-1g", "all-disabled", "half-3g"]
    layouts = {n: l.get("nvidia.com/mig.config") for n, l in node_labels(fleet, "h100-xe9680").items() if "gpu" in n}
    assert layouts == {"h100-gpu-01": "all-disabled", "h100-gpu-02": "all-disabled", "h100-gpu-03": "all-disabled",
                       "h100-gpu-04": "half-3g", "h100-gpu-05": "all-1g", "h100-gpu-06": "all-1g"}
    plan = load_fleet(fleet).plan("h100-xe9680")
    assert {n.profile.server for n in plan.cluster.gpu_nodes} == {"dell-xe9680"}
    # One Alluxio release: one NVMe profile, eight drives each.
    assert not list((fleet / "overlays/h100-xe9680/alluxio").glob("values-*.yaml"))
    ssd = overlay(fleet, "h100-xe9680", "alluxio")["tieredstore"]["levels"][1]
    assert ssd["path"] == ",".join(f"/mnt/nvme{i}" for i in range(8))


def test_third_fleet_rails_are_ipoib_networks_and_never_macvlan_on_ib_interfaces(fleet: Path):
    objs = rendered(fleet, "h100-xe9680", "network-operator")
    rails = load_fleet(fleet).plan("h100-xe9680").cluster.rails
    networks = [o for o in objs if o["kind"] == "IPoIBNetwork"]
    assert sorted((n["metadata"]["name"], n["spec"]["master"]) for n in networks) == sorted((r.name, r.interface) for r in rails)
    assert len(networks) == 8 and all(n["spec"]["master"].startswith("ib") for n in networks)
    assert not [o for o in objs if o["kind"] == "MacvlanNetwork"]
    # nor anywhere else in the cluster's output: macvlan cannot sit on an IPoIB device
    every = [o for path in (fleet / "build/rendered/h100-xe9680").glob("*.yaml") for o in yaml.safe_load_all(path.read_text()) if o]
    assert not [o for o in every if o["kind"] == "MacvlanNetwork" and o["spec"]["master"].startswith("ib")]
    assert sorted(o["metadata"]["name"] for o in objs if o["kind"] == "IPPool") == sorted(r.name for r in rails)
    # The compute fabric's RDMA resource selects InfiniBand ports only; GPUDirect RDMA stays on.
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")
    config = yaml.safe_load(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    compute = next(c for c in config["configList"] if c["resourceName"] == "rdma_network")
    assert compute["selectors"]["linkTypes"] == ["infiniband"]
    assert overlay(fleet, "h100-xe9680", "gpu-operator")["driver"]["kernelModuleType"] == "open"  # over DMA-BUF


def test_the_add_a_cluster_guide_points_at_the_example_fleets():
    guide = (REPO / "docs/howto/add-a-cluster.md").read_text()
    for name in ADDED:
        assert f"`{name}`" in guide
        assert (FIXTURES / name / "inventory.yaml").is_file()
    assert "tests/fixtures/clusters/h100-xe9680/inventory.yaml" in guide
    assert not (REPO / "clusters" / "h100-xe9680").exists()  # never synced by Argo CD

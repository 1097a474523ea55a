"""Node tests: after a driver or firmware change, and after a repair, a GPU node is tested before it
serves again. It carries the untested taint (forge.model.cluster.UNTESTED_TAINT: from its registration,
forge.components.node_join, or put on before the change, docs/day-two.md), which keeps workloads
off while the DaemonSets it needs tolerate it (ClusterModel.daemon_tolerations_for). forge writes
per tested node, to `overlays/<cluster>/gpu-operator/node-tests/` (never synced: the operator
applies them when the node comes back):

* `dcgm-<node>.yaml`: DCGM diagnostics at the inventory's level (dcgm.py);
* `nvlink-<node>.yaml` where the catalogue has a measured figure for the node's GPUs: an in-node
  NCCL all-reduce over NVLink against it (nvlink.py);
* `nccl-<node>.yaml` on fabric nodes: an NCCL all-reduce per rail with a peer, against the
  catalogue's bandwidth floor, and a two-node one where a figure is published (nccl.py);
  `nccl-script.yaml` once per cluster holds the script both run (allreduce.py);
* `release-<node>.yaml`: the Job that removes the taint once every test passed, with RBAC for that
  node alone (release.py), with `release-script.yaml` once per cluster.

A failed test Job alerts (forge.observability.lifecycle: NodeTestFailed).
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from forge.facts import hardware
from forge.components.node_tests import allreduce, dcgm, nccl, nvlink, release
from forge.components.node_tests.base import JOB_PREFIX, TESTS, TESTS_DIR, NodeTests, tested, whole_gpu
from forge.errors import Problem
from forge.model.cluster import ClusterModel, fabric_nics

__all__ = ["JOB_PREFIX", "TESTS", "TESTS_DIR", "NodeTests", "check", "node_test_objects", "test_files"]


def test_files(cluster: ClusterModel, namespace: str, settings: NodeTests, network_namespace: str) -> dict[str, Any]:
    files: dict[str, Any] = {f"{TESTS_DIR}/dcgm-{node.name}.yaml": dcgm.dcgm_job(cluster, node, namespace, settings.dcgm_level)
                             for node in cluster.gpu_nodes if whole_gpu(node)}
    nodes = tested(cluster)
    if nodes:
        files[f"{TESTS_DIR}/release-script.yaml"] = release.script(namespace)
    pairs = {node.name: other for node, other in nccl.pairs(cluster, nodes)}
    if pairs or any(nvlink.floor(n) for n in nodes):
        files[f"{TESTS_DIR}/nccl-script.yaml"] = allreduce.script(namespace)
    for node in nodes:
        tests = [dcgm.TEST]
        if nvlink.floor(node) is not None:
            files[f"{TESTS_DIR}/nvlink-{node.name}.yaml"] = nvlink.nvlink_job(cluster, node, namespace)
            tests.append(nvlink.TEST)
        if node.name in pairs:
            files[f"{TESTS_DIR}/nccl-{node.name}.yaml"] = nccl.nccl_job(cluster, node, pairs[node.name], namespace, network_namespace)
            tests.append(nccl.TEST)
        files[f"{TESTS_DIR}/release-{node.name}.yaml"] = release.release_objects(cluster, node, namespace, tests)
    return files


def check(loaded) -> Iterator[Problem]:
    """A GPU profile on the compute fabric needs a catalogued NCCL floor for its GPU, NIC and port
    speed: without one its nodes could not be tested before they serve."""
    catalogue = hardware.catalogue()
    for name, profile in loaded.inventory.profiles.items():
        nics = fabric_nics(profile)
        if profile.gpu is None or not nics:
            continue
        nic = nics[0]
        if nic.port_gbps > catalogue.nics[nic.model].max_port_gbps:
            continue  # the port itself is refused (forge.inventory's NIC rules): one problem on its line
        if catalogue.nccl_floor(profile.gpu.model, nic.model, nic.port_gbps) is None:
            i = profile.nics.index(nic)
            known = ", ".join(f"{f.gpu} with {f.nic} at {f.port_gbps}" for f in catalogue.nccl_floors) or "none"
            yield loaded.problem(("profiles", name, "nics", i, "model"), (
                f"no NCCL bandwidth floor for {profile.gpu.model} with {nic.model} at {nic.port_gbps} Gb/s in "
                f"{hardware.CATALOGUE_NAME} (nccl_floors; known: {known}): add one with its source, so the "
                "profile's nodes are tested before they serve"))


def node_test_objects(cluster: ClusterModel, namespace: str, settings: NodeTests,
                      network_namespace: str) -> dict[str, list[dict[str, Any]]]:
    """Each tested node's test objects in the order they run (DCGM, in-node NVLink, per rail),
    as the node gate creates them (forge.components.node_gate): the same objects as the files."""
    files = test_files(cluster, namespace, settings, network_namespace)
    out: dict[str, list[dict[str, Any]]] = {}
    for node in tested(cluster):
        objects: list[dict[str, Any]] = []
        for test in TESTS:
            found = files.get(f"{TESTS_DIR}/{test}-{node.name}.yaml")
            objects += found if isinstance(found, list) else [found] if found else []
        out[node.name] = objects
    return out

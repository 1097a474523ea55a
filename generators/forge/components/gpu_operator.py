"""NVIDIA GPU Operator: driver, MIG layouts, GPUDirect RDMA and DCGM metrics, from the inventory."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import yaml

from forge.components import gpu_drivers, network, node_gate, node_tests
from forge.components.node_tests import NodeTests
from forge.components.network_operator import NetworkOperator
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_GPU, Component, Expected, custom_resource
from forge.components.driver_upgrades import UpgradeSettings, chart_upgrade_policy, rendered_upgrade_policy, upgrade_policy
from forge.inventory.schema import Strict
from forge.model.cluster import MIG_DISABLED, ClusterModel
from forge.observability.metrics import DCGM_CONFIG_NAME, NODE_RELABELING, dcgm_metrics_csv

MIG_CONFIG_NAME = "forge-mig-parted-config"
NETWORK_OPERATOR = NetworkOperator.name


class Settings(Strict):
    # Driver upgrades: one node at a time by default, drained after its training pods finish
    # (forge.components.driver_upgrades; the Network Operator's NIC driver upgrades use the same knob).
    upgrade: UpgradeSettings = UpgradeSettings()
    # Tests a node passes before it serves again (forge.components.node_tests).
    node_tests: NodeTests = NodeTests()


@dataclass(frozen=True)
class GpuOperatorFacts:
    gpus_per_layout: dict[str, int]  # MIG layout in use -> GPUs per node it lays out (the most of its nodes)
    mig_parted_config: str  # mig-parted's config file: exactly the layouts in use
    driver_pools: tuple[gpu_drivers.DriverPool, ...] = ()  # per-pool drivers (NVIDIADriver CRs), or none


def derive_facts(cluster: ClusterModel) -> GpuOperatorFacts:
    gpus = {name: max((n.gpu_count for n in cluster.gpu_nodes if n.mig_layout == name), default=0)
            for name in cluster.mig_layouts_used}
    return GpuOperatorFacts(gpus, _mig_parted_config(cluster, gpus), gpu_drivers.driver_pools(cluster))


# What Prometheus scrapes in gpu-operator: dcgm-exporter (9400), the operator (8080) and the
# node-status-exporter (8000), the chart's and operator's default ports.
METRICS_PORTS = (8000, 8080, 9400)


class GpuOperator(Component):
    name = "gpu-operator"
    namespace = "gpu-operator"
    sync_wave = WAVE_GPU
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("batch", "Job"))  # the CRD-upgrade hook Job
    api_groups = ('nvidia.com',)
    chart = "gpu-operator"
    server_side_apply = True  # the ClusterPolicy CRD is too large for client-side apply
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("node.k8s.io", "RuntimeClass"),
        ("nvidia.com", "ClusterPolicy"),
        ("nvidia.com", "NVIDIADriver"),
    )
    # The chart documents these only in comments under migManager.config (values.yaml of v26.7.0).
    declared_values = frozenset({"migManager.config.name", "migManager.config.create", "migManager.config.data",
                                 "dcgmExporter.config.name", "dcgmExporter.config.create", "dcgmExporter.config.data"})
    inventory_values = frozenset({"driver.version", "driver.rdma.enabled", "mig.strategy", "daemonsets.tolerations",
                                  *(f"driver.upgradePolicy.{key}" for key in ("autoUpgrade", "maxParallelUpgrades",
                                    "gpuPodDeletion.force", "drain.force", "drain.podSelector"))})
    Settings = Settings
    # Only Argo CD's automated pruning is off (see forge.validate.cluster_policies): the chart's CRDs
    # (ClusterPolicy, NVIDIADriver) cannot be annotated Prune=false from values, and a chart release
    # that dropped one would delete the cluster's ClusterPolicy and with it every GPU operand.
    prune = False
    # The operator and its operands name system-node-critical (the chart's values); its hook Jobs
    # (gpu-operator-upgrade-crd on every sync, gpu-operator-cleanup-gpucluster on delete) name no
    # class and no value reaches them: forge's admission policy gives their pods a system class.
    priority_exception = "the gpu-operator chart's hook Jobs (upgrade-crd, cleanup-gpucluster) have no priorityClassName value"

    def enabled(self, cluster: ClusterModel) -> bool:
        return bool(cluster.gpu_nodes)

    def check(self, loaded, settings: Settings, given) -> Iterator:
        maintenance = settings.upgrade.maintenance
        racks = {n.rack for n in loaded.inventory.nodes}
        for i, rack in enumerate(maintenance.racks if maintenance else ()):
            if rack not in racks:
                yield loaded.problem(("components", self.name, "upgrade", "maintenance", "racks", i),
                                     f"unknown rack '{rack}' (the inventory's racks: {', '.join(sorted(racks))})")
        yield from node_tests.check(loaded)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        return (network.scrape(METRICS_PORTS),)

    def derive_facts(self, cluster: ClusterModel) -> GpuOperatorFacts:
        return derive_facts(cluster)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        values = self._values(cluster)
        if cluster.cloud:
            return cloud_values(values)
        if self.facts(cluster).driver_pools:
            # One branch does not serve every GPU generation here: the drivers are NVIDIADriver
            # CRs, one per pool (gpu_drivers.py); the chart's default CR stays off.
            # The ClusterPolicy keeps the same upgrade policy as every pool's CR.
            values["driver"] = {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False},
                                "upgradePolicy": values["driver"]["upgradePolicy"]}
        return values

    def local_files(self, cluster: ClusterModel) -> dict[str, Any]:
        # The tests a GPU node passes after a repair or a driver change, and the Job that releases it
        # (never synced). Pods attach to the rails in the Network Operator's network namespace.
        network = cluster.component_settings.get(NETWORK_OPERATOR)
        return node_tests.test_files(cluster, self.namespace, self.settings(cluster).node_tests,
                                     network.network_namespace if network is not None else "default")

    def values_notes(self, cluster: ClusterModel) -> list[str]:
        return gpu_drivers.driver_notes(cluster, self.facts(cluster).driver_pools)

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        # The custom resource's own field names (the chart's values call podDeletion gpuPodDeletion).
        policy = upgrade_policy(self.settings(cluster).upgrade)
        drivers = [custom_resource(gpu_drivers.nvidia_driver(cluster, pool, policy)) for pool in self.facts(cluster).driver_pools]
        # The rollout gate: one node at a time, on passed tests (forge.components.node_gate).
        return drivers + node_gate.manifests(cluster, self.namespace, self.settings(cluster).node_tests, self._network_namespace(cluster))

    def _network_namespace(self, cluster: ClusterModel) -> str:
        network = cluster.component_settings.get(NETWORK_OPERATOR)
        return network.network_namespace if network is not None else "default"

    def _values(self, cluster: ClusterModel) -> dict[str, Any]:
        peermem = gpu_drivers.needs_peermem(cluster.gpu_nodes)
        dma_buf = {"kernelModuleType": gpu_drivers.OPEN_KERNEL_MODULES} if gpu_drivers.dma_buf(cluster.gpu_nodes) else {}
        return {
            # One NFD per cluster: the node-feature-discovery component deploys it.
            "nfd": {"enabled": False},
            "operator": {"nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations},
            "daemonsets": {"tolerations": cluster.gpu_daemon_tolerations},
            "driver": {
                "version": cluster.driver_version,
                # GPUDirect RDMA follows the compute fabric. Over DMA-BUF where the GPUs can (the
                # open kernel modules, said explicitly; NCCL 2.19+ uses it by default): no
                # nvidia-peermem, so a GPU driver reload never depends on the DOCA driver's ib_core.
                # nvidia-peermem (driver.rdma) only for GPUs that cannot; its DOCA/OFED driver is the
                # Network Operator's container when that component deploys one, else the host's.
                **dma_buf,
                "rdma": {"enabled": peermem, "useHostMofed": peermem and not cluster.ofed_driver},
                # A version bump in Git reloads drivers node by node, never under a training job.
                "upgradePolicy": chart_upgrade_policy(self.settings(cluster).upgrade),
            },
            "mig": {"strategy": cluster.mig_strategy},
            "migManager": {
                "config": {
                    "name": MIG_CONFIG_NAME,
                    "create": True,
                    "default": MIG_DISABLED,
                    "data": {"config.yaml": self.facts(cluster).mig_parted_config},
                },
            },
            # The fields forge's alerts read (the exporter's defaults lack ECC and NVLink errors), and
            # a `node` label on every series (forge.observability).
            "dcgmExporter": {
                "config": {"name": DCGM_CONFIG_NAME, "create": True, "data": dcgm_metrics_csv()},
                "serviceMonitor": {"enabled": True, "relabelings": [NODE_RELABELING]},
            },
        }

    def expected_in_hydrated(self, cluster: ClusterModel) -> list[Expected]:
        # The chart turns our values into the ClusterPolicy the operator acts on; some of them only
        # under conditions (driver.rdma is dropped when driver.nvidiaDriverCRD.enabled is true).
        policy = ("ClusterPolicy", "cluster-policy")  # the name the chart gives its one ClusterPolicy
        if cluster.cloud:
            return [Expected(*policy, "spec.driver.enabled", False), Expected(*policy, "spec.toolkit.enabled", False),
                    Expected(*policy, "spec.mig.strategy", cluster.mig_strategy),
                    Expected(*policy, "spec.daemonsets.tolerations", cluster.gpu_daemon_tolerations),
                    Expected(*policy, "spec.dcgmExporter.serviceMonitor.enabled", True)]
        if self.facts(cluster).driver_pools:  # drivers and RDMA per pool, in our NVIDIADriver CRs
            driver = [Expected(*policy, "spec.driver.useNvidiaDriverCRD", True)]
        else:
            driver = [Expected(*policy, "spec.driver.version", cluster.driver_version),
                      Expected(*policy, "spec.driver.rdma.enabled", gpu_drivers.needs_peermem(cluster.gpu_nodes)),
                      Expected(*policy, "spec.driver.rdma.useHostMofed", False)]
            if gpu_drivers.dma_buf(cluster.gpu_nodes):
                driver.append(Expected(*policy, "spec.driver.kernelModuleType", gpu_drivers.OPEN_KERNEL_MODULES))
        return [
            *driver,
            *(Expected(*policy, f"spec.driver.upgradePolicy.{key}", value)
              for key, value in rendered_upgrade_policy(self.settings(cluster).upgrade).items()),
            Expected(*policy, "spec.mig.strategy", cluster.mig_strategy),
            Expected(*policy, "spec.migManager.config.name", MIG_CONFIG_NAME),
            Expected(*policy, "spec.migManager.config.default", MIG_DISABLED),
            Expected(*policy, "spec.daemonsets.tolerations", cluster.gpu_daemon_tolerations),
            Expected(*policy, "spec.dcgmExporter.serviceMonitor.enabled", True),
            Expected("ConfigMap", MIG_CONFIG_NAME, ("data", "config.yaml"), self.facts(cluster).mig_parted_config),
        ]


def _mig_parted_config(cluster: ClusterModel, gpus_per_layout: dict[str, int]) -> str:
    """mig-parted's config: exactly the layouts the cluster's nodes use, as YAML text."""
    configs: dict[str, list[dict[str, Any]]] = {}
    for name, groups in cluster.mig_layouts_used.items():
        gpu_count = gpus_per_layout[name]
        entries: list[dict[str, Any]] = []
        named: set[int] = set()
        for group in groups:
            devices: Any = "all" if group.gpus == "all" else sorted(group.gpus)
            named |= set(range(gpu_count)) if group.gpus == "all" else set(group.gpus)
            entries.append({"devices": devices, "mig-enabled": True, "mig-devices": dict(sorted(group.profiles.items()))})
        rest = sorted(set(range(gpu_count)) - named)
        if not groups:
            entries.append({"devices": "all", "mig-enabled": False})
        elif rest:
            entries.append({"devices": rest, "mig-enabled": False})
        configs[name] = entries
    return yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False, default_flow_style=None)


def cloud_values(values: dict[str, Any]) -> dict[str, Any]:
    """The GPU Operator on a cloud node image (the EKS-optimised AL2023 NVIDIA AMI that Karpenter's
    EC2NodeClasses select): the image ships the NVIDIA driver and the container toolkit (containerd
    already configured with the nvidia runtime), so the operator's driver and toolkit DaemonSets
    are off: they would fight the image's driver over the kernel module. GPUDirect RDMA is the
    EFA driver's (in the image too), not nvidia-peermem: driver.rdma goes with the driver. What
    stays: the device plugin, GPU Feature Discovery, the MIG manager (for MIG pools), DCGM and its
    exporter, the validator and node-status-exporter. The driver upgrade policy has nothing to
    upgrade: a new driver comes with a new image (charts/versions.yaml machine_images), rolled out
    by Karpenter's drift replacement."""
    return {**values, "driver": {"enabled": False}, "toolkit": {"enabled": False}}

"""NVIDIA Network Operator: DOCA/OFED driver, RDMA shared device plugin and the compute fabric's
secondary networks, from the inventory's NICs and rails.

The chart (26.4.1) installs only the operator; what it deploys is our NicClusterPolicy, a custom
resource synced after the chart's CRDs. It holds exactly what the fleet's hardware needs:
- the DOCA/OFED driver container, when some node has a NIC or DPU it serves; the operator runs it
  on nodes carrying node-feature-discovery's `pci-15b3.present` label, and our node affinity says
  the same from the hardware table's vendor IDs;
- the RDMA shared device plugin, one resource per NIC role with RDMA ports (`rdma/rdma_network`
  for the compute fabric, `rdma/rdma_storage`, `rdma/rdma_frontend`), each selecting the vendor,
  device IDs, interface names and link type (`linkTypes`) of that role's NICs (`forge.model.cluster.ClusterModel.rdma_resources`);
- Multus, the CNI plugins and nv-ipam when the compute fabric has rails: one secondary network and
  one nv-ipam IPPool per rail, so a pod attaches one interface per rail. The network is a
  MacvlanNetwork on Ethernet (RoCE) ports and an IPoIBNetwork, with the ipoib CNI, on InfiniBand
  ports (ipoib.py): macvlan cannot sit on an IPoIB device.
The chart's own node-feature-discovery stays off: the node-feature-discovery component is the one
NFD of the cluster and already labels network-class PCI devices by vendor.

A cluster with no NIC the operator serves (the A100 fleet: Intel E810 front-end only) gets no
Network Operator at all.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from forge.components import network
from forge.components.base import RBAC_NAMESPACED, WORKLOAD_KINDS, WAVE_NETWORK, Component, RuntimeCrds, custom_resource
from forge.components.driver_upgrades import gpu_upgrade_settings, maintenance_operator_config, upgrade_policy
from forge.inventory.schema import Name
from forge.components.network_operator import nvipam
from forge.components.network_operator.ipoib import INFINIBAND, ipoib_network, ipoib_rails, nccl_env
from forge.model.cluster import (
    LABEL_DOMAIN, MIG_CONFIG_LABEL, MIG_DISABLED, RDMA_HCA_MAX, RDMA_RESOURCE_PREFIX, ClusterModel, NodeModel, RailModel,
    pci_present_label,
)
from forge.components.network_operator.rdma_plugin import LINK_TYPE, PluginConfig, ResourceConfig, Selectors
from forge.facts import versions

NAMESPACE = "nvidia-network-operator"
POLICY_NAME = "nic-cluster-policy"  # the one name the operator reconciles
# NicClusterPolicy component -> its image under `images` in charts/versions.yaml (tagged as the
# Network Operator release tags them; the versions file checks they follow the chart).
IMAGES: dict[str, str] = {
    "ofedDriver": "doca-driver",
    "rdmaSharedDevicePlugin": "rdma-shared-device-plugin",
    "multus": "multus",
    "cniPlugins": "cni-plugins",
    "nvIpam": "nv-ipam",
    "ipoib": "ipoib-cni",
}
MULTUS_NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
METRICS_PORT = 8080


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    # DOCA/OFED driver upgrades take a node's NICs down: at most this share of the driver's
    # nodes at once (rounded down, at least one node).
    upgrade_max_unavailable_percent: Annotated[int, Field(ge=1, le=100)] = 10
    # How long a node drain before a driver upgrade may take before the upgrade gives up on it.
    drain_timeout_seconds: Annotated[int, Field(ge=0)] = 600
    # Where the rails' NetworkAttachmentDefinitions live; pods elsewhere name them <ns>/<rail>.
    network_namespace: Name = "default"


@dataclass(frozen=True)
class NetworkOperatorFacts:
    # Nodes the operator's DaemonSets serve: those with a NIC the DOCA/OFED driver container
    # serves, or, without that driver, those with RDMA-capable NICs (the device plugin's).
    served_nodes: tuple[NodeModel, ...]
    # GPU nodes on the compute fabric with whole GPUs (a node whose GPUs are cut into MIG slices
    # advertises those as nvidia.com/gpu): where the all-reduce example can run.
    example_nodes: tuple[NodeModel, ...]


def derive_facts(cluster: ClusterModel) -> NetworkOperatorFacts:
    served = cluster.ofed_nodes or tuple(n for n in cluster.nodes if any(m.rdma for _, m in n.nics()))
    resource = cluster.rdma_resource("compute")
    example = tuple(n for n in cluster.gpu_nodes if resource and n.name in resource.nodes and n.mig_layout in (None, MIG_DISABLED))
    return NetworkOperatorFacts(served, example)


def _image(component: str) -> dict[str, str]:
    pinned = versions.image(IMAGES[component])
    return {"image": pinned.name, "repository": pinned.registry, "version": pinned.tag}


class NetworkOperator(Component):
    name = "network-operator"
    namespace = NAMESPACE
    sync_wave = WAVE_NETWORK  # before the GPU Operator: its driver waits for the DOCA/OFED driver
    namespaced_kinds = (*WORKLOAD_KINDS, *RBAC_NAMESPACED, ("batch", "Job"))  # the CRD-upgrade hook Job
    api_groups = ('mellanox.com', 'k8s.cni.cncf.io', 'nv-ipam.nvidia.com')
    chart = "network-operator"
    cluster_kinds = (
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("mellanox.com", "NicClusterPolicy"),
        ("mellanox.com", "MacvlanNetwork"),
        ("mellanox.com", "IPoIBNetwork"),
    )
    Settings = Settings
    priority_exception = (
        "the pinned network-operator chart has no priorityClassName value for the operator's or the maintenance "
        "operator's Deployment (the DaemonSets the operator creates are not in Git); Argo CD renders the chart "
        "itself, so no patch reaches them: forge's MutatingAdmissionPolicy (forge.components.infra_priority) gives "
        "their pods, and those of nv-ipam-node and cni-plugins, a system class when they are created")
    # Only Argo CD's automated pruning is off: the chart's CRDs (NicClusterPolicy, the maintenance
    # operator's) cannot be annotated Prune=false from values (see forge.validate.cluster_policies).
    prune = False

    def enabled(self, cluster: ClusterModel) -> bool:
        return cluster.ofed_driver or bool(cluster.rdma_resources)

    def ingress(self, cluster: ClusterModel) -> tuple[network.Allow, ...]:
        # The operator's metrics (controller-runtime's :8080). Its admission webhook is off (chart
        # default); the driver, device plugin and CNI pods run on the host network.
        return (network.scrape([METRICS_PORT]),)

    def settings_namespaces(self, settings: Settings) -> dict[str, str]:
        # The operator writes the rails' NetworkAttachmentDefinitions there; GPU pods name them.
        return {settings.network_namespace: "network_namespace"}

    def derive_facts(self, cluster: ClusterModel) -> NetworkOperatorFacts:
        return derive_facts(cluster)

    def runtime_crd_data(self) -> tuple[RuntimeCrds, ...]:
        # The operator applies nv-ipam's CRDs when the NicClusterPolicy enables nvIpam; the chart
        # does not ship them. They come with the operator release: the data folder is named after
        # it, nv-ipam-network-operator-v<the pinned chart version>.
        release = f"network-operator-v{versions.chart_pin(self.chart).version.removeprefix('v')}"
        return (RuntimeCrds(f"nv-ipam-{release}", nvipam.API_VERSION, nvipam.RUNTIME_KINDS),)

    def values(self, cluster: ClusterModel) -> dict[str, Any]:
        return {
            # One NFD per cluster: the node-feature-discovery component; it already labels
            # network-class PCI devices by vendor (pci-15b3.present), so no rules from here either.
            "nfd": {"enabled": False, "deployNodeFeatureRules": False},
            "sriovNetworkOperator": {"enabled": False},  # shared RDMA + macvlan/IPoIB, no SR-IOV VFs
            **maintenance_values(cluster),
            "operator": {
                "nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,
                # DOCA/OFED upgrades ask the Maintenance Operator for the node (NodeMaintenance), so
                # they count against the same limit as GPU driver upgrades (driver_upgrades).
                **({"maintenanceOperator": {"useRequestor": True}} if cluster.ofed_driver else {}),
            },
        }

    def manifests(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        settings: Settings = self.settings(cluster)
        objs = [custom_resource(nic_cluster_policy(cluster, settings, self.facts(cluster)))]
        if cluster.ofed_driver:
            objs.append(custom_resource(maintenance_operator_config(gpu_upgrade_settings(cluster), NAMESPACE)))
        for rail in cluster.rails:
            network = ipoib_network(rail, settings.network_namespace) if rail.link_type == INFINIBAND else macvlan_network(rail, settings)
            objs.append(custom_resource(network))
            objs.append(custom_resource(ip_pool(rail)))
        return objs

    def examples(self, cluster: ClusterModel) -> list[dict[str, Any]]:
        """A two-node all-reduce over the compute fabric, for people to copy (never synced)."""
        nodes = self.facts(cluster).example_nodes
        if not nodes:
            return []
        return [example_script(), example_pytorchjob(cluster, self.settings(cluster), nodes[0])]


def maintenance_values(cluster: ClusterModel) -> dict[str, Any]:
    """The NVIDIA Maintenance Operator (subchart) when the DOCA/OFED driver runs: it grants the
    driver upgrades' NodeMaintenance requests within the MaintenanceOperatorConfig's limits."""
    if not cluster.ofed_driver:
        return {"maintenanceOperator": {"enabled": False}}
    return {
        "maintenanceOperator": {"enabled": True},
        "maintenance-operator-chart": {"operator": {
            "nodeSelector": cluster.system_node_selector, "tolerations": cluster.system_tolerations,
            # Its webhook only validates NodeMaintenance objects, which only the Network Operator's
            # upgrade controller creates; serving it needs cert-manager (not in these clusters) or a
            # certificate Secret made by hand. Off, as the parent chart's default, said on purpose.
            "admissionController": {"enable": False},
        }},
    }


# ---- NicClusterPolicy ---------------------------------------------------------------------------

def max_parallel_upgrades(nodes: int, percent: int, limit: int | None = None) -> int:
    """Driver upgrades at once: percent of the driver's nodes, rounded down, at least one, and
    never more than `limit` (the GPU nodes a driver upgrade may take out at once)."""
    count = max(1, math.floor(nodes * percent / 100))
    return min(count, limit) if limit else count


def rdma_plugin_config(cluster: ClusterModel) -> PluginConfig:
    return PluginConfig(configList=[
        ResourceConfig(
            resourceName=r.name, resourcePrefix=RDMA_RESOURCE_PREFIX, rdmaHcaMax=RDMA_HCA_MAX,
            # linkTypes: a role's ports are all Ethernet or all InfiniBand (forge.inventory.links), and
            # the selector says which, so a port renamed into ifNames with the other link layer stays out.
            selectors=Selectors(vendors=list(r.vendors), deviceIDs=list(r.device_ids), ifNames=list(r.interfaces),
                                linkTypes=[LINK_TYPE[r.link_type]]),
        )
        for r in cluster.rdma_resources
    ])


def _node_affinity(cluster: ClusterModel) -> dict[str, Any]:
    """DaemonSets only where NFD found a NIC of a vendor the driver serves (one term per vendor)."""
    terms = [{"matchExpressions": [{"key": pci_present_label(v), "operator": "In", "values": ["true"]}]}
             for v in cluster.ofed_vendor_ids]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def _system_affinity(cluster: ClusterModel) -> dict[str, Any]:
    expressions = [{"key": k, "operator": "Exists"} if v == "" else {"key": k, "operator": "In", "values": [v]}
                   for k, v in cluster.system_node_selector.items()]
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}


def nic_cluster_policy(cluster: ClusterModel, settings: Settings, facts: NetworkOperatorFacts) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    served = facts.served_nodes
    if cluster.ofed_vendor_ids:
        spec["nodeAffinity"] = _node_affinity(cluster)
    spec["tolerations"] = cluster.daemon_tolerations_for(served)
    if cluster.rails:  # nv-ipam's controller is the one Deployment: on the control plane
        spec["deploymentNodeAffinity"] = _system_affinity(cluster)
        spec["deploymentTolerations"] = cluster.system_tolerations
    if cluster.ofed_driver:
        spec["ofedDriver"] = {
            **_image("ofedDriver"),
            "upgradePolicy": {
                "autoUpgrade": True,
                # A driver pod that merely restarts (eviction, OOM, a node reboot) reloads the
                # kernel modules only after the node was cordoned and drained like an upgrade, never
                # under running jobs (the CRD's default is false: reload at once).
                "safeLoad": True,
                "maxParallelUpgrades": max_parallel_upgrades(len(cluster.ofed_nodes), settings.upgrade_max_unavailable_percent,
                                                             gpu_upgrade_settings(cluster).max_parallel),
                # Training pods on the node finish first, as for GPU driver upgrades (driver_upgrades).
                "waitForCompletion": upgrade_policy(gpu_upgrade_settings(cluster))["waitForCompletion"],
                "drain": {
                    "enable": True,
                    "force": False,  # a pod no controller owns blocks the drain rather than being lost
                    "deleteEmptyDir": True,  # training pods keep /dev/shm and scratch in emptyDir
                    "timeoutSeconds": settings.drain_timeout_seconds,
                },
            },
            "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 20},
            "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
            "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
        }
    if cluster.rdma_resources:
        spec["rdmaSharedDevicePlugin"] = {**_image("rdmaSharedDevicePlugin"), "config": rdma_plugin_config(cluster).to_json()}
    if cluster.rails:
        spec["secondaryNetwork"] = {"cniPlugins": _image("cniPlugins"), "multus": _image("multus")}
        if ipoib_rails(cluster):
            spec["secondaryNetwork"]["ipoib"] = _image("ipoib")
        spec["nvIpam"] = {**_image("nvIpam"), "enableWebhook": False}  # the webhook would need cert-manager
    return {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": spec,
    }


# ---- rails: one macvlan network and one IP pool each -------------------------------------------

def macvlan_network(rail: RailModel, settings: Settings) -> dict[str, Any]:
    if rail.link_type == INFINIBAND:  # the inventory rules make this unreachable; never emit it
        raise ValueError(f"rail {rail.name}: macvlan cannot sit on the IPoIB interface {rail.interface}")
    return nvipam.rail_network("MacvlanNetwork", rail.name, rail.interface, settings.network_namespace,
                               mode="bridge", mtu=rail.mtu)


def ip_pool(rail: RailModel) -> dict[str, Any]:
    # nv-ipam gives each node matching the selector a block; select the rail's nodes by the
    # profile label forge puts on every node, so the pool is sized for exactly those nodes.
    # The IPPool CRD comes from the operator once nvIpam runs; until then Argo CD retries.
    return nvipam.ip_pool(rail.name, NAMESPACE, rail.cidr, rail.addresses_per_node, f"{LABEL_DOMAIN}/profile", rail.profiles)


# ---- the example workload ---------------------------------------------------------------------

EXAMPLE_IMAGE = "pytorch-example"  # images in charts/versions.yaml
EXAMPLE_SCRIPT = "rdma-allreduce-script"
_ALLREDUCE = """\
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
x = torch.ones(256 * 1024 * 1024, device="cuda")  # 1 GiB of fp32
for _ in range(5):
    dist.all_reduce(x)
torch.cuda.synchronize()
start = time.time()
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
if dist.get_rank() == 0:
    gb = 20 * x.numel() * 4 * 2 * (dist.get_world_size() - 1) / dist.get_world_size() / 1e9
    print(f"all_reduce bus bandwidth: {gb / (time.time() - start):.1f} GB/s")
dist.destroy_process_group()
"""


def example_script() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": EXAMPLE_SCRIPT}, "data": {"allreduce.py": _ALLREDUCE}}


def example_pytorchjob(cluster: ClusterModel, settings: Settings, node: NodeModel) -> dict[str, Any]:
    """Two whole GPU nodes running an NCCL all-reduce: every GPU of the node, the compute
    fabric's RDMA resource, and one interface per rail (Multus names them net1, net2, ...)."""
    resource = cluster.rdma_resource("compute")
    assert resource is not None  # examples() only asks when there is one
    gpus = node.gpu_count
    limits = {"nvidia.com/gpu": gpus, resource.resource: 1}
    container = {
        "name": "pytorch",
        "image": versions.image(EXAMPLE_IMAGE).ref,
        "command": ["torchrun", f"--nproc-per-node={gpus}", "/workspace/allreduce.py"],
        "env": nccl_env(cluster),  # InfiniBand or RoCE settings, by the fabric's link type
        "resources": {"limits": limits, "requests": dict(limits)},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},  # RDMA pins memory
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "script", "mountPath": "/workspace"}],
    }
    template: dict[str, Any] = {}
    if cluster.rails:
        networks = ",".join(f"{settings.network_namespace}/{rail.name}" for rail in cluster.rails)
        template["metadata"] = {"annotations": {MULTUS_NETWORKS_ANNOTATION: networks}}
    template |= {
        "spec": {
            **({"nodeSelector": {MIG_CONFIG_LABEL: MIG_DISABLED}} if node.mig_layout else {}),
            "tolerations": cluster.gpu_tolerations,
            "containers": [container],
            "volumes": [
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                {"name": "script", "configMap": {"name": EXAMPLE_SCRIPT}},
            ],
        },
    }
    def replica() -> dict[str, Any]:  # a fresh copy each: shared objects would dump as YAML aliases
        return {"replicas": 1, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "rdma-allreduce"},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}},
    }

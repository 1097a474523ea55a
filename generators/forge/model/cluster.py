"""The derived, typed model of one cluster: facts computed once here, emitters only read them."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from forge.facts.hardware import DRIVER_BY_ARCHITECTURE, GPU_MODELS, NIC_MODELS, GpuModel, NicModel
from forge.inventory import LoadedInventory
from forge.inventory.api_server import Served, served_apis
from forge.inventory.layouts import MIG_DISABLED, mig_layout_of
from forge.inventory.pools import PoolModel, instance_profile, pool_model
from forge.inventory.schema import ClusterSettings, MigLayoutGroup, NicSpec, NodePool, NvmeSpec, Profile, Taint

# Our node label namespace. Labels reach nodes through node-feature-discovery (see nfd component).
LABEL_DOMAIN = "forge.exa.ai"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"  # set by kubeadm/Kubespray itself
# On nodes whose profile has NVMe devices, once all of them are mounted: where local caches
# (Alluxio workers) may run. Not an inventory label: NFD sets it from what a probe finds mounted
# (forge.components.alluxio.nvme_probe).
NVME_LABEL = f"{LABEL_DOMAIN}/nvme"
# The installer taints control-plane nodes itself; that key is not ours to manage, but every
# controller we place there must tolerate it.
CONTROL_PLANE_TOLERATION = {"key": CONTROL_PLANE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
# A node that has not passed its tests since it joined, or since a driver or firmware change or a
# repair, carries this taint (forge.components.node_tests): workloads stay off it, the DaemonSets
# every node needs and the test Jobs tolerate it, and the node's release Job removes it.
UNTESTED_TAINT_KEY = f"{LABEL_DOMAIN}/untested"
UNTESTED_TAINT = {"key": UNTESTED_TAINT_KEY, "effect": "NoSchedule"}
UNTESTED_TOLERATION = {"key": UNTESTED_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}

# RDMA resources pods ask for (`rdma/<name>: 1`), one per NIC role whose ports can do RDMA. The
# compute fabric's is the one training jobs use; management ports get none (no pod traffic).
RDMA_RESOURCE_PREFIX = "rdma"
RDMA_RESOURCE_BY_ROLE: dict[str, str] = {"compute": "rdma_network", "storage": "rdma_storage", "frontend": "rdma_frontend"}
# How many pods one node's resource admits: the shared plugin hands every pod all the role's
# HCAs, so this is a ceiling on pods, not a share of bandwidth.
RDMA_HCA_MAX = 1000


def fabric_nics(profile: Profile) -> list[NicSpec]:
    """The profile's compute-fabric NICs: compute role and RDMA-capable (rails run over their ports)."""
    return [n for n in profile.nics if n.role == "compute" and NIC_MODELS[n.model].rdma]


def pci_present_label(vendor_id: str) -> str:
    """The label node-feature-discovery's pci source sets for a PCI vendor (deviceLabelFields: vendor)."""
    return f"feature.node.kubernetes.io/pci-{vendor_id}.present"


SYSTEM_ROLE_LABEL = f"{LABEL_DOMAIN}/role.system"
# What the EFA device plugin advertises per EFA interface of a cloud node (a pool's efa_interfaces).
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# The label Karpenter puts on the nodes of each NodePool (and the managed node group's own, which
# forge's system pool asks the cluster's node group to carry).
POOL_LABEL = f"{LABEL_DOMAIN}/pool"


@dataclass(frozen=True)
class NodeModel:
    name: str
    rack: str
    roles: tuple[str, ...]
    profile_name: str
    profile: Profile
    extra_labels: dict[str, str]
    taints: tuple[Taint, ...]
    mig_layout: str | None  # None: the node has no MIG-capable GPU
    # On a cloud cluster: the pool this node stands for (one NodeModel per node up to its max_count).
    pool: PoolModel | None = None

    @property
    def gpu(self) -> GpuModel | None:
        return GPU_MODELS[self.profile.gpu.model] if self.profile.gpu else None

    @property
    def gpu_count(self) -> int:
        return self.profile.gpu.count if self.profile.gpu else 0

    @property
    def labels(self) -> dict[str, str]:
        """Every label forge puts on this node, in a stable order."""
        labels = {f"{LABEL_DOMAIN}/rack": self.rack, f"{LABEL_DOMAIN}/profile": self.profile_name}
        if self.gpu:  # what Kueue's ResourceFlavors select GPU pools by (forge.model.capacity)
            labels[f"{LABEL_DOMAIN}/gpu-model"] = self.gpu.key
        labels.update({f"{LABEL_DOMAIN}/role.{role}": "true" for role in sorted(self.roles)})
        if self.mig_layout:
            labels[MIG_CONFIG_LABEL] = self.mig_layout
        if self.pool:
            labels[POOL_LABEL] = self.pool.name
        labels.update(sorted(self.extra_labels.items()))
        return labels

    def nics(self, role: str | None = None) -> list[tuple[NicSpec, NicModel]]:
        return [(n, NIC_MODELS[n.model]) for n in self.profile.nics if role in (None, n.role)]

    @property
    def tested_before_service(self) -> bool:
        """A GPU node forge tests before it serves (whole GPUs: DCGM diagnostics need them), that
        joins through forge's join files (a cloud pool's nodes register through Karpenter)."""
        return self.gpu is not None and self.mig_layout in (None, MIG_DISABLED) and self.pool is None

    @property
    def nvme(self) -> tuple[NvmeSpec, ...]:
        return tuple(self.profile.nvme)


@dataclass(frozen=True)
class RdmaResource:
    """One resource of the RDMA shared device plugin: the RDMA ports of one NIC role."""

    role: str
    name: str  # the plugin's resourceName; pods ask for f"{RDMA_RESOURCE_PREFIX}/{name}"
    vendors: tuple[str, ...]
    device_ids: tuple[str, ...]
    interfaces: tuple[str, ...]
    nic_models: tuple[str, ...]
    nodes: tuple[str, ...]
    link_type: str = "ethernet"  # one per role (forge.inventory.links): the plugin's linkTypes selector
    hcas: tuple[str, ...] = ()  # RDMA device names, where the inventory lists them

    @property
    def resource(self) -> str:
        return f"{RDMA_RESOURCE_PREFIX}/{self.name}"


@dataclass(frozen=True)
class RailModel:
    """One rail of the compute fabric as deployed: a macvlan network over `interface` on `nodes`,
    addressed from `cidr` in blocks of `addresses_per_node`."""

    name: str
    interface: str
    cidr: str
    mtu: int
    addresses_per_node: int
    nodes: tuple[str, ...]
    profiles: tuple[str, ...]
    link_type: str = "ethernet"  # infiniband: an IPoIB network on an ib* interface, never macvlan


@dataclass(frozen=True)
class ClusterModel:
    name: str
    source: str  # the inventory file, repo-relative: named in every generated file's header
    settings: ClusterSettings
    nodes: tuple[NodeModel, ...]
    # Filled by the fleet stage (forge.fleet), which owns the component registry: the typed
    # settings of the enabled components (a component's Settings instance, validated once) and
    # the frozen facts each derived once. Components read them through Component.settings/facts.
    component_settings: Mapping[str, Any]
    component_facts: Mapping[str, Any] = field(default_factory=dict)
    # Other clusters whose inventories this one's outputs read (components.kueue.burst: forge.fleet.links).
    linked: Mapping[str, "ClusterModel"] = field(default_factory=dict)
    served: Served = Served("1.34")  # what its API server serves (forge.facts.kube_apis), and the inventory line saying so

    @property
    def kubernetes_version(self) -> str:
        return self.settings.kubernetes_version

    @property
    def cloud(self):
        """The cloud the cluster runs in (provider, region, account), or None on premises."""
        return self.settings.cloud

    @cached_property
    def pools(self) -> tuple[PoolModel, ...]:
        """A cloud cluster's node pools, in inventory order (none on premises)."""
        return tuple(dict.fromkeys(n.pool for n in self.nodes if n.pool))

    @cached_property
    def system_nodes(self) -> tuple[NodeModel, ...]:
        """Where controllers run: the control plane on premises, the system pool in a cloud."""
        if self.cloud:
            return tuple(n for n in self.nodes if "system" in n.roles)
        return self.control_plane_nodes

    @cached_property
    def gpu_nodes(self) -> tuple[NodeModel, ...]:
        return tuple(n for n in self.nodes if n.gpu)

    @cached_property
    def gpu_count(self) -> int:
        return sum(n.gpu_count for n in self.gpu_nodes)

    @cached_property
    def nvme_nodes(self) -> tuple[NodeModel, ...]:
        return tuple(n for n in self.nodes if n.nvme)

    @cached_property
    def nvme_tolerations(self) -> list[dict[str, str]]:
        """For DaemonSets that must run on every node with NVMe (the Alluxio workers)."""
        return self.tolerations_for(self.nvme_nodes)

    @cached_property
    def workload_nodes(self) -> tuple[NodeModel, ...]:
        """Nodes that run workloads: all but the control plane (which the installer taints) and a
        cloud's system pool (the controllers' managed node group)."""
        return tuple(n for n in self.nodes if "control-plane" not in n.roles and not (n.pool and n.pool.role == "system"))

    @cached_property
    def control_plane_nodes(self) -> tuple[NodeModel, ...]:
        return tuple(n for n in self.nodes if "control-plane" in n.roles)

    @cached_property
    def gpu_models(self) -> tuple[GpuModel, ...]:
        return tuple(GPU_MODELS[k] for k in sorted({n.gpu.key for n in self.gpu_nodes}))

    @cached_property
    def driver_version(self) -> str | None:
        """One driver for the whole cluster: the newest branch any of its GPU generations needs
        (the ClusterPolicy's; where generations need different branches, the GPU Operator
        component gives each pool its own: forge.components.gpu_drivers)."""
        versions = {DRIVER_BY_ARCHITECTURE[m.architecture] for m in self.gpu_models}
        return max(versions, key=lambda v: tuple(int(p) for p in v.split("."))) if versions else None

    @cached_property
    def gpudirect_nics(self) -> tuple[tuple[NodeModel, NicSpec, NicModel], ...]:
        """Compute-fabric NICs on GPU nodes that can move data straight to and from GPU memory.

        Only the compute role counts: GPUDirect RDMA is for the east-west traffic pods get through
        `rdma/rdma_network`. A storage DPU may be able to do it too, but no training pod's GPU
        buffers go over it, so it alone does not turn GPUDirect RDMA (nvidia-peermem) on.
        """
        return tuple((node, spec, model) for node in self.gpu_nodes
                     for spec, model in node.nics("compute") if model.gpudirect_rdma)

    @property
    def gpudirect_rdma(self) -> bool:
        return bool(self.gpudirect_nics)

    @cached_property
    def ofed_nodes(self) -> tuple[NodeModel, ...]:
        """Nodes with a NIC or DPU the NVIDIA DOCA/OFED driver container serves."""
        return tuple(n for n in self.nodes if any(m.ofed_driver for _, m in n.nics()))

    @property
    def ofed_driver(self) -> bool:
        """Whether the Network Operator deploys the DOCA/OFED driver container (so GPUDirect RDMA
        takes its drivers from that container, not from the host)."""
        return bool(self.ofed_nodes)

    @cached_property
    def ofed_vendor_ids(self) -> tuple[str, ...]:
        return tuple(sorted({m.vendor_id for n in self.ofed_nodes for _, m in n.nics() if m.ofed_driver}))

    @cached_property
    def rdma_resources(self) -> tuple[RdmaResource, ...]:
        """One RDMA shared device plugin resource per NIC role with RDMA-capable ports, selecting
        exactly the vendors, device IDs and interface names of that role's NICs in the fleet."""
        out = []
        for role, name in RDMA_RESOURCE_BY_ROLE.items():
            found = [(node, spec, model) for node in self.nodes for spec, model in node.nics(role) if model.rdma]
            if not found:
                continue
            out.append(RdmaResource(
                role=role, name=name,
                vendors=tuple(sorted({m.vendor_id for _, _, m in found})),
                device_ids=tuple(sorted({m.device_id for _, _, m in found})),
                interfaces=tuple(dict.fromkeys(i for _, s, _ in found for i in s.interfaces)),  # inventory order
                nic_models=tuple(sorted({m.key for _, _, m in found})),
                nodes=tuple(sorted({n.name for n, _, _ in found})),
                link_type=found[0][1].link_type,
                hcas=tuple(dict.fromkeys(h for _, s, _ in found for h in s.hcas)),
            ))
        return tuple(out)

    def rdma_resource(self, role: str) -> RdmaResource | None:
        return next((r for r in self.rdma_resources if r.role == role), None)

    @cached_property
    def fabric_nodes(self) -> tuple[NodeModel, ...]:
        """Nodes on the compute fabric: their profile has compute-role RDMA NICs."""
        return tuple(n for n in self.nodes if fabric_nics(n.profile))

    @cached_property
    def rails(self) -> tuple[RailModel, ...]:
        """The compute fabric's rails, each on every fabric node; none without a fabric (the
        inventory's rails then have no node to run on and produce nothing)."""
        compute = self.settings.network.compute
        if not self.fabric_nodes or compute is None:
            return ()
        nodes = tuple(n.name for n in self.fabric_nodes)
        profiles = tuple(sorted({n.profile_name for n in self.fabric_nodes}))
        link = self.fabric_link_type
        return tuple(RailModel(r.name, r.interface, r.cidr, compute.mtu, compute.addresses_per_node, nodes, profiles, link)
                     for r in compute.rails)

    @property
    def fabric_link_type(self) -> str:
        """ethernet (RoCE) or infiniband: one for the whole compute fabric (forge.inventory.links)."""
        resource = self.rdma_resource("compute")
        return resource.link_type if resource else "ethernet"

    def tolerations_for(self, nodes) -> list[dict[str, str]]:
        """Tolerations for a DaemonSet that must run on these nodes, from their taints."""
        return _tolerations(t for n in nodes for t in n.taints)

    def daemon_tolerations_for(self, nodes) -> list[dict[str, str]]:
        """For the DaemonSets a node needs before its tests can pass (drivers, device plugins,
        node labelling): its taints and, where forge tests nodes, the untested taint. Never for
        workloads: that taint is what keeps them off an untested node."""
        nodes = list(nodes)
        return self.tolerations_for(nodes) + ([UNTESTED_TOLERATION] if any(n.tested_before_service for n in nodes) else [])

    @property
    def gpu_daemon_tolerations(self) -> list[dict[str, str]]:
        return self.daemon_tolerations_for(self.gpu_nodes)

    @cached_property
    def mig_layouts_used(self) -> dict[str, list[MigLayoutGroup]]:
        """Exactly the layouts some node uses, always with the 'all MIG off' layout first."""
        used = sorted({n.mig_layout for n in self.nodes if n.mig_layout} - {MIG_DISABLED})
        return {MIG_DISABLED: [], **{name: self.settings.mig_layouts[name] for name in used}}

    @cached_property
    def mig_strategy(self) -> str:
        """'single' only when every GPU node has all its GPUs cut by MIG into one profile, else 'mixed'.

        Under single the device plugin advertises MIG slices as plain nvidia.com/gpu. With whole
        GPUs anywhere in the cluster (MIG off, a GPU that cannot do MIG, a layout that leaves GPUs
        whole or mixes profiles) that merges two things under one name: quotas over nvidia.com/gpu
        add slices to whole GPUs (h200 would hand out 126 whole + 110 slices, more than its 144
        GPUs) and a job asking for 8 GPUs could be placed on 8 slices. Mixed gives every MIG
        profile its own resource (nvidia.com/mig-<profile>) with its own quota, and
        nvidia.com/gpu always means a whole GPU.
        """
        def uniform(layout: str | None) -> bool:
            groups = self.settings.mig_layouts.get(layout) if layout and layout != MIG_DISABLED else None
            return bool(groups) and len(groups) == 1 and groups[0].gpus == "all" and len(groups[0].profiles) == 1

        cut_everywhere = bool(self.gpu_nodes) and all(uniform(n.mig_layout) for n in self.gpu_nodes)
        return "single" if cut_everywhere else "mixed"

    @cached_property
    def label_namespaces(self) -> tuple[str, ...]:
        """Label prefixes forge sets on nodes (node-feature-discovery must be allowed each)."""
        return tuple(sorted({k.split("/")[0] for n in self.nodes for k in n.labels if "/" in k}))

    @cached_property
    def gpu_tolerations(self) -> list[dict[str, str]]:
        """Tolerations for DaemonSets that must run on every GPU node, from the nodes' taints."""
        return _tolerations(t for n in self.gpu_nodes for t in n.taints)

    @cached_property
    def all_node_tolerations(self) -> list[dict[str, str]]:
        """For DaemonSets that belong on every node (node labelling, log shipping)."""
        return [CONTROL_PLANE_TOLERATION, *self.daemon_tolerations_for(self.nodes)]

    @property
    def system_node_selector(self) -> dict[str, str]:
        """Where controllers run: the control-plane nodes, by the label the installer sets; in a
        cloud (no control-plane nodes: the provider runs it) the system pool's nodes."""
        if self.cloud:
            return {SYSTEM_ROLE_LABEL: "true"}
        return {CONTROL_PLANE_LABEL: ""}

    @cached_property
    def system_tolerations(self) -> list[dict[str, str]]:
        return [CONTROL_PLANE_TOLERATION, *_tolerations(t for n in self.system_nodes for t in n.taints)]


def _tolerations(taints) -> list[dict[str, str]]:
    seen = sorted({(t.key, t.value, t.effect) for t in taints})
    return [{"key": k, "operator": "Equal", "value": v, "effect": e} if v else
            {"key": k, "operator": "Exists", "effect": e} for k, v, e in seen]


def derive(loaded: LoadedInventory, component_settings: Mapping[str, Any]) -> ClusterModel:
    """The model of one checked inventory. `component_settings`: typed settings by component
    (the fleet stage validates the inventory's raw `components` blocks; this layer never reads them)."""
    inv = loaded.inventory
    nodes = []
    for node in inv.nodes:
        profile = inv.profiles[node.profile]
        nodes.append(NodeModel(
            name=node.name, rack=node.rack, roles=tuple(node.roles), profile_name=node.profile,
            profile=profile, extra_labels=dict(node.labels), taints=tuple(node.taints),
            mig_layout=mig_layout_of(node, profile),
        ))
    for pool in inv.node_pools:
        nodes.extend(pool_nodes(pool))
    return ClusterModel(name=inv.cluster.name, source=loaded.file, settings=inv.cluster, nodes=tuple(nodes),
                        component_settings=dict(component_settings), served=served_apis(loaded))


POOL_ROLES = {"system": ("system",), "gpu": ("gpu",), "cpu": ()}


def pool_nodes(pool: NodePool) -> list[NodeModel]:
    """One NodeModel per node the pool may make (max_count): quotas and the largest admissible job
    follow the pool's maximum (the fleet in a box makes only the system pool's; Karpenter the rest)."""
    model = pool_model(pool)
    profile = instance_profile(model.instance)
    width = max(3, len(str(pool.max_count)))
    return [NodeModel(name=f"{pool.name}-{i:0{width}d}", rack=pool.name, roles=POOL_ROLES[pool.role],
                      profile_name=model.instance.key, profile=profile, extra_labels=dict(pool.labels),
                      taints=tuple(pool.taints), mig_layout=model.mig_layout, pool=model)
            for i in range(1, pool.max_count + 1)]

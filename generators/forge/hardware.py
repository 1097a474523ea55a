"""Facts about hardware, in one table. Templates and emitters never hard-code these.

Sources: NVIDIA's MIG user guide (profiles per GPU), the PCI ID registry (vendor/device IDs),
the GPU Operator's platform support matrix (driver branches), NVIDIA datasheets (thermal and
power limits used by alert thresholds).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class MigProfile:
    name: str  # e.g. "1g.10gb": compute slices "g", memory in GB
    compute_slices: int  # of 7 per GPU
    memory_slices: int  # of 8 per GPU
    max_instances: int  # how many of this profile fit on one GPU on its own


@dataclass(frozen=True)
class GpuModel:
    key: str  # the name the inventory uses
    product: str  # NFD/GFD's nvidia.com/gpu.product label: the NVML name with spaces as dashes
    nvml_name: str  # NVML's device name: `nvidia-smi` and DCGM's `modelName` metric label
    architecture: str  # ampere, hopper: selects the driver branch
    memory_gib: int
    pci_device_id: str  # vendor 10de
    max_temp_c: int  # slowdown temperature: alerts fire below it
    max_power_w: int  # board power limit (TDP)
    mig_profiles: tuple[MigProfile, ...] = ()

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


@dataclass(frozen=True)
class NicModel:
    key: str
    product: str
    vendor_id: str  # PCI vendor, lower-case hex without 0x
    device_id: str  # PCI device, lower-case hex without 0x
    max_port_gbps: int
    is_dpu: bool
    rdma: bool  # RoCE/InfiniBand verbs
    gpudirect_rdma: bool  # peer-to-peer with GPU memory via nvidia-peermem (needs the DOCA/OFED driver)
    ofed_driver: bool  # served by the NVIDIA DOCA/OFED driver container
    # Link layers the ports can run (ConnectX VPI cards and BlueField DPUs: both, set per port
    # with mlxconfig LINK_TYPE_P<n>); the inventory's NIC `link_type` must be one of them.
    link_types: tuple[str, ...] = ("ethernet",)


MIG_SLICES_COMPUTE = 7
MIG_SLICES_MEMORY = 8
PCI_VENDOR_NVIDIA = "10de"
PCI_VENDOR_MELLANOX = "15b3"
PCI_VENDOR_INTEL = "8086"
LINK_TYPES = ("ethernet", "infiniband")
VPI = LINK_TYPES  # Virtual Protocol Interconnect: each port runs Ethernet or InfiniBand


def _mig(*rows: tuple[str, int, int, int]) -> tuple[MigProfile, ...]:
    return tuple(MigProfile(*row) for row in rows)


GPU_MODELS: MappingProxyType[str, GpuModel] = MappingProxyType({
    m.key: m
    for m in (
        GpuModel(
            key="A100-80GB", product="NVIDIA-A100-SXM4-80GB", nvml_name="NVIDIA A100-SXM4-80GB", architecture="ampere", memory_gib=80,
            pci_device_id="20b2", max_temp_c=85, max_power_w=400,
            mig_profiles=_mig(
                ("1g.10gb", 1, 1, 7), ("1g.20gb", 1, 2, 4), ("2g.20gb", 2, 2, 3),
                ("3g.40gb", 3, 4, 2), ("4g.40gb", 4, 4, 1), ("7g.80gb", 7, 8, 1),
            ),
        ),
        GpuModel(
            key="H100-80GB", product="NVIDIA-H100-80GB-HBM3", nvml_name="NVIDIA H100 80GB HBM3", architecture="hopper", memory_gib=80,
            pci_device_id="2330", max_temp_c=87, max_power_w=700,
            mig_profiles=_mig(
                ("1g.10gb", 1, 1, 7), ("1g.20gb", 1, 2, 4), ("2g.20gb", 2, 2, 3),
                ("3g.40gb", 3, 4, 2), ("4g.40gb", 4, 4, 1), ("7g.80gb", 7, 8, 1),
            ),
        ),
        GpuModel(
            key="H200-141GB", product="NVIDIA-H200", nvml_name="NVIDIA H200", architecture="hopper", memory_gib=141,
            pci_device_id="2335", max_temp_c=87, max_power_w=700,
            mig_profiles=_mig(
                ("1g.18gb", 1, 1, 7), ("1g.35gb", 1, 2, 4), ("2g.35gb", 2, 2, 3),
                ("3g.71gb", 3, 4, 2), ("4g.71gb", 4, 4, 1), ("7g.141gb", 7, 8, 1),
            ),
        ),
        GpuModel(
            key="L40S-48GB", product="NVIDIA-L40S", nvml_name="NVIDIA L40S", architecture="ada", memory_gib=48,
            pci_device_id="26b9", max_temp_c=88, max_power_w=350,
        ),
    )
})

NIC_MODELS: MappingProxyType[str, NicModel] = MappingProxyType({
    m.key: m
    for m in (
        NicModel("connectx-6-dx", "Mellanox ConnectX-6 Dx", PCI_VENDOR_MELLANOX, "101d", 100,
                 is_dpu=False, rdma=True, gpudirect_rdma=True, ofed_driver=True),
        NicModel("connectx-7", "NVIDIA ConnectX-7", PCI_VENDOR_MELLANOX, "1021", 400,
                 is_dpu=False, rdma=True, gpudirect_rdma=True, ofed_driver=True, link_types=VPI),
        NicModel("bluefield-2", "NVIDIA BlueField-2 DPU", PCI_VENDOR_MELLANOX, "a2d6", 100,
                 is_dpu=True, rdma=True, gpudirect_rdma=True, ofed_driver=True, link_types=VPI),
        NicModel("bluefield-3", "NVIDIA BlueField-3 DPU", PCI_VENDOR_MELLANOX, "a2dc", 400,
                 is_dpu=True, rdma=True, gpudirect_rdma=True, ofed_driver=True, link_types=VPI),
        # Intel E810 does iWARP/RoCE through irdma, but not GPUDirect RDMA with nvidia-peermem.
        NicModel("intel-e810", "Intel Ethernet E810-C", PCI_VENDOR_INTEL, "1592", 100,
                 is_dpu=False, rdma=False, gpudirect_rdma=False, ofed_driver=False),
    )
})

# Driver per GPU architecture, each within the pinned GPU Operator's support matrix
# (charts/versions.yaml pins the operator). Ampere stays on the R580 long-term branch;
# Hopper takes the operator's default production branch.
DRIVER_BY_ARCHITECTURE: MappingProxyType[str, str] = MappingProxyType({
    "ampere": "580.95.05",
    "hopper": "595.91.07",
    "ada": "595.91.07",
})

# Server models we have profiles for: how many GPUs and NVMe bays they take (capacity checks).
@dataclass(frozen=True)
class ServerModel:
    key: str
    max_gpus: int
    max_nvme: int
    gpu_models: frozenset[str] = field(default_factory=frozenset)


SERVER_MODELS: MappingProxyType[str, ServerModel] = MappingProxyType({
    m.key: m
    for m in (
        ServerModel("supermicro-as-4124go-nart+", 8, 10, frozenset({"A100-80GB"})),
        ServerModel("lenovo-sr680a-v3", 8, 16, frozenset({"H100-80GB", "H200-141GB"})),
        ServerModel("generic-1u", 0, 4),
    )
})

"""Facts about hardware: the typed API over the hardware catalogue (catalogue/hardware.yaml next to
this module). Templates and emitters never hard-code these.

The catalogue is read and checked on first use (strict pydantic: a bad entry is an error naming
the file and its line, exit 2), so importing forge never fails on it. `GPU_MODELS`, `NIC_MODELS`
and `SERVER_MODELS` are read-only mappings over it; `DRIVER_BY_ARCHITECTURE` is the GPU driver per
architecture, a pin kept in the versions file (charts/versions.yaml, `gpu_drivers`).
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from forge.facts import versions

from forge.files import datafile
from forge.facts.hardware_floors import NcclFloor, NvlinkFloor, TwoNodeFloor, floor_rules

CATALOGUE_FILE = Path(__file__).with_name("catalogue") / "hardware.yaml"
CATALOGUE_NAME = "generators/forge/facts/catalogue/hardware.yaml"  # how errors name it

# MIG cuts a GPU into 7 compute and 8 memory slices (every MIG-capable GPU in the catalogue).
MIG_SLICES_COMPUTE = 7
MIG_SLICES_MEMORY = 8
# PCI vendor IDs (PCI-SIG), lower-case hex as NFD labels them.
PCI_VENDOR_NVIDIA = "10de"
PCI_VENDOR_MELLANOX = "15b3"
PCI_VENDOR_INTEL = "8086"

Hex4 = Annotated[str, Field(pattern=r"^[0-9a-f]{4}$")]
Text = Annotated[str, Field(min_length=1)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class MigProfile(_Strict):
    name: Annotated[str, Field(pattern=r"^[1-7]g\.[0-9]+gb$")]  # e.g. "1g.10gb": compute slices "g", memory in GB
    compute_slices: Annotated[int, Field(ge=1, le=MIG_SLICES_COMPUTE)]  # of 7 per GPU
    memory_slices: Annotated[int, Field(ge=1, le=MIG_SLICES_MEMORY)]  # of 8 per GPU
    max_instances: Annotated[int, Field(ge=1, le=MIG_SLICES_COMPUTE)]  # how many fit on one GPU on their own


class GpuModel(_Strict):
    key: str  # the name the inventory uses
    source: Text  # the documents the facts come from
    product: Text  # NFD/GFD's nvidia.com/gpu.product label: the NVML name with spaces as dashes
    nvml_name: Text  # NVML's device name: `nvidia-smi` and DCGM's `modelName` metric label
    architecture: Annotated[str, Field(pattern=r"^[a-z]+$")]  # selects the driver branch (versions file)
    form_factor: Literal["sxm", "pcie"]
    memory_gib: Positive
    pci_device_id: Hex4  # vendor 10de
    max_temp_c: Positive  # slowdown temperature: alerts fire below it
    max_memory_temp_c: Positive | None = None  # HBM limit, where NVIDIA publishes one
    max_power_w: Positive  # board power limit (TDP)
    dma_buf: bool = False  # GPUDirect RDMA through DMA-BUF (open kernel modules), no nvidia-peermem
    mig_profiles: Annotated[tuple[MigProfile, ...], Field(strict=False)] = ()

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    def mig_profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


class NicModel(_Strict):
    key: str
    source: Text
    product: Text
    vendor_id: Hex4  # PCI vendor, lower-case hex without 0x
    device_id: Hex4  # PCI device, lower-case hex without 0x
    max_port_gbps: Positive
    is_dpu: bool
    rdma: bool  # RoCE/InfiniBand verbs
    gpudirect_rdma: bool  # peer-to-peer with GPU memory via nvidia-peermem (needs the DOCA/OFED driver)
    ofed_driver: bool  # served by the NVIDIA DOCA/OFED driver container
    link_types: Annotated[frozenset[Literal["ethernet", "infiniband"]], Field(strict=False, min_length=1)]


class ServerModel(_Strict):
    key: str
    source: Text
    product: Text
    max_gpus: Count
    max_nvme: Count
    pcie_slots: Count | None = None  # PCIe x16 slots for NICs and DPUs, where published
    gpu_models: Annotated[frozenset[str], Field(strict=False)] = frozenset()  # empty: any


INSTANCE_NUMBERS = ("cpu_threads", "memory_gib", "gpu_count", "nvlink", "efa_interfaces", "network_gbps",
                    "instance_store_gb", "max_pods", "on_demand_usd_per_hour")


class InstanceType(_Strict):
    """A cloud instance type: what one node of a cloud node pool is (forge.inventory's node_pools)."""

    key: str
    source: Text
    provider: Literal["aws"]
    cpu_threads: Positive  # vCPUs
    memory_gib: Positive
    gpu_model: str | None = None  # a key of `gpus`
    gpu_count: Count = 0
    nvlink: Annotated[int, Field(ge=0, le=5)] = 0
    efa_interfaces: Count = 0  # EFA network cards: vpc.amazonaws.com/efa per node
    network_gbps: Positive
    instance_store_gb: Count = 0  # local NVMe (instance store), decimal GB in total
    max_pods: Positive | None = None  # the VPC CNI's pods per node: ENIs of the default network card x (IPv4 per ENI - 1) + 2
    on_demand_usd_per_hour: Annotated[float, Field(gt=0, strict=False)] | None = None  # us-east-1, Linux
    # Where each number comes from, by field: every number given has its own (Catalogue.rules).
    # (a dict in the file, kept as pairs: an instance type is hashed with the pools that name it)
    sources: Annotated[tuple[tuple[str, Text], ...], BeforeValidator(lambda v: tuple(v.items()) if isinstance(v, dict) else v)] = ()

    def numbers(self) -> list[str]:
        """The numeric fields this entry gives (a zero count or an unset value is no claim)."""
        return [f for f in INSTANCE_NUMBERS if getattr(self, f)]


class Catalogue(_Strict):
    gpus: dict[str, GpuModel]
    nics: dict[str, NicModel]
    servers: dict[str, ServerModel]
    instances: dict[str, InstanceType] = {}
    nccl_floors: Annotated[tuple[NcclFloor, ...], Field(strict=False)] = ()
    nvlink_floors: Annotated[tuple[NvlinkFloor, ...], Field(strict=False)] = ()
    two_node_floors: Annotated[tuple[TwoNodeFloor, ...], Field(strict=False)] = ()

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data: Any) -> Any:
        """Each model's `key` is its name in the file."""
        if isinstance(data, dict):
            return {section: {k: {**v, "key": k} if isinstance(v, dict) else v for k, v in entries.items()}
                    if isinstance(entries, dict) else entries for section, entries in data.items()}
        return data

    def nccl_floor(self, gpu: str, nic: str, port_gbps: int) -> NcclFloor | None:
        return next((f for f in self.nccl_floors if (f.gpu, f.nic, f.port_gbps) == (gpu, nic, port_gbps)), None)

    def nvlink_floor(self, gpu: str, gpus: int) -> NvlinkFloor | None:
        return next((f for f in self.nvlink_floors if (f.gpu, f.gpus) == (gpu, gpus)), None)

    def two_node_floor(self, gpu: str, nic: str, port_gbps: int, nics: int) -> TwoNodeFloor | None:
        return next((f for f in self.two_node_floors if (f.gpu, f.nic, f.port_gbps, f.nics) == (gpu, nic, port_gbps, nics)), None)

    def _floor_rules(self) -> Iterator[tuple[datafile.Key, str]]:
        sections = {"nccl_floors": self.nccl_floors, "nvlink_floors": self.nvlink_floors,
                    "two_node_floors": self.two_node_floors}
        yield from floor_rules(sections, self.gpus, self.nics, unknown_model)

    def rules(self) -> Iterator[tuple[datafile.Key, str]]:
        """What spans entries: names point at catalogued models, facts agree with each other."""
        vendors = (PCI_VENDOR_NVIDIA, PCI_VENDOR_MELLANOX, PCI_VENDOR_INTEL)
        for key, server in self.servers.items():
            for gpu in sorted(server.gpu_models - set(self.gpus)):
                yield ("servers", key, "gpu_models"), unknown_model("GPU model", gpu, self.gpus)
        for key, gpu in self.gpus.items():
            names = [p.name for p in gpu.mig_profiles]
            for name in sorted({n for n in names if names.count(n) > 1}):
                yield ("gpus", key, "mig_profiles"), f"MIG profile '{name}' listed twice"
        for key, inst in self.instances.items():
            if inst.gpu_model is not None and inst.gpu_model not in self.gpus:
                yield ("instances", key, "gpu_model"), unknown_model("GPU model", inst.gpu_model, self.gpus)
            if (inst.gpu_model is None) != (inst.gpu_count == 0):
                yield ("instances", key, "gpu_count"), "gpu_model and a gpu_count above 0 go together"
            yield from _instance_sources(key, inst)
        for key, nic in self.nics.items():
            if nic.vendor_id not in vendors:
                yield ("nics", key, "vendor_id"), f"'{nic.vendor_id}' is not a vendor forge knows ({', '.join(vendors)})"
            if nic.gpudirect_rdma and not nic.rdma:
                yield ("nics", key, "gpudirect_rdma"), "GPUDirect RDMA needs rdma: true"
        yield from self._floor_rules()


def _instance_sources(key: str, inst: InstanceType) -> Iterator[tuple[datafile.Key, str]]:
    for field in inst.numbers():
        if field not in dict(inst.sources):
            yield ("instances", key, field), f"no source for {field}: add sources.{field} (where the number comes from)"
    for field in sorted(set(dict(inst.sources)) - set(INSTANCE_NUMBERS)):
        yield ("instances", key, "sources", field), f"'{field}' is not a number of an instance type (one of: {', '.join(INSTANCE_NUMBERS)})"


def load_catalogue(path: Path = CATALOGUE_FILE, name: str = CATALOGUE_NAME) -> Catalogue:
    return datafile.load(path, Catalogue, name, rules=Catalogue.rules)


@cache
def catalogue() -> Catalogue:
    return load_catalogue(CATALOGUE_FILE, CATALOGUE_NAME)


def unknown_model(what: str, value: str, known: Mapping[str, Any] | set[str]) -> str:
    """`unknown server model 'x' (did you mean: y?; known: ...)`: the closest names first."""
    by_folded = {k.casefold(): k for k in known}
    close = [by_folded[k] for k in difflib.get_close_matches(value.casefold(), list(by_folded), n=3, cutoff=0.6)]
    hint = f"did you mean: {', '.join(close)}?; " if close else ""
    return f"unknown {what} '{value}' ({hint}known: {', '.join(sorted(known))})"


V = TypeVar("V")


class _Lazy(Mapping[str, V]):
    """A read-only mapping over data read on first use."""

    def __init__(self, get: Callable[[], Mapping[str, V]]):
        self._get = get

    def __getitem__(self, key: str) -> V:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._get())!r})"


GPU_MODELS: Mapping[str, GpuModel] = _Lazy(lambda: catalogue().gpus)
NIC_MODELS: Mapping[str, NicModel] = _Lazy(lambda: catalogue().nics)
SERVER_MODELS: Mapping[str, ServerModel] = _Lazy(lambda: catalogue().servers)
INSTANCE_TYPES: Mapping[str, InstanceType] = _Lazy(lambda: catalogue().instances)
DRIVER_BY_ARCHITECTURE: Mapping[str, str] = _Lazy(lambda: versions.versions().gpu_drivers)


# Physical ceilings of one server, whatever its model: bounds on inventory numbers, so a typo
# (or a hostile 10**20) is refused with a message instead of reaching a quota or a loop.
# 8-socket servers reach 32 TiB of memory and 8 x 128 cores x 2 threads; the largest NVMe drive
# sold holds 122.88 TB; a PCIe server has at most about 16 NIC or GPU slots, a NIC at most 8
# ports, and no Ethernet or InfiniBand port runs faster than 1.6 Tb/s. Per-model limits
# (ServerModel.max_gpus, NicModel.max_port_gbps) are checked after these, with their own messages.
MAX_GPUS_PER_SERVER = 16
MAX_PORT_GBPS = 1600
MAX_SERVER_MEMORY_GIB = 32 * 1024
MAX_SERVER_CPU_THREADS = 2048
MAX_NVME_SIZE_GB = 250_000
MAX_NICS_PER_SERVER = 16
MAX_PORTS_PER_NIC = 8

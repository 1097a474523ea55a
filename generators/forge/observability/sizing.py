"""Sizing formulas for Prometheus and Loki, from the cluster's size. Pure arithmetic, no I/O.

Prometheus storage (the formula from Prometheus' storage docs, with our series estimates):

    node_series  = NODE_EXPORTER_BASE + KUBELET_SERIES
                   + SERIES_PER_CPU_THREAD * cpu threads      (node_cpu_seconds_total's 8 modes,
                     guest time, cpufreq, schedstat, softnet: per thread)
                   + SERIES_PER_INTERFACE * network interfaces (netdev and netclass)
                   + SERIES_PER_RDMA_PORT * interfaces of RDMA NICs (the infiniband collector)
                   + SERIES_PER_NVME * NVMe devices          (diskstats, filesystem)
    series_other = SERIES_FIXED + sum of node_series over the nodes
    series_gpu   = SERIES_PER_GPU * gpus
    samples/s    = series_other / scrape_interval_s + series_gpu / dcgm_interval_s
    bytes        = samples/s * retention_days * 86400 * BYTES_PER_SAMPLE
    volume_gib   = max(MIN_VOLUME_GIB, ceil_to(bytes * HEADROOM / 2^30, VOLUME_STEP_GIB))
    retentionSize = floor(volume_gib * RETENTION_SIZE_SHARE) GB   (Prometheus' GB is 2^30 bytes)

retentionSize makes Prometheus drop its oldest blocks before the volume fills, whatever the
estimate got wrong. Memory: MEMORY_PER_SERIES_KIB per active series (head block, index, query
headroom), at least MIN_MEMORY_GIB.

Loki (deployment mode and replicas from the daily log volume):

    daily_gb = the inventory's daily_log_gb, or GB_PER_GPU_NODE_DAY * gpu_nodes
               + GB_PER_OTHER_NODE_DAY * other_nodes
    mode     = SingleBinary below SINGLE_BINARY_MAX_GB_DAY, SimpleScalable up to
               SIMPLE_SCALABLE_MAX_GB_DAY, else Distributed (the Loki chart's own guidance)
    replicas = per target, max(floor, ceil(daily_gb / GB_DAY_PER_REPLICA)) (LOKI_TARGETS)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from forge.model.cluster import NodeModel
from forge.observability.metrics import DCGM_FIELDS

# ---- Prometheus ---------------------------------------------------------------------------------
SERIES_FIXED = 60_000  # API server, etcd, scheduler, CoreDNS, operators, Alertmanager, Grafana, Loki
# Per node, from its profile: node-exporter scales with CPU threads (about 4,000 series on a
# 192-thread server), interfaces and disks; kubelet/cAdvisor with its pods (a GPU node runs few).
NODE_EXPORTER_BASE = 800  # memory, vmstat, filesystems of the system mounts, conntrack, systemd
KUBELET_SERIES = 1_500
SERIES_PER_CPU_THREAD = 18
SERIES_PER_INTERFACE = 40
SERIES_PER_RDMA_PORT = 30
SERIES_PER_NVME = 30
# One series per DCGM field and GPU, doubled for MIG instances' profiling series and the pod
# labels dcgm-exporter attaches (every new job on a GPU starts new series).
# The exporter's own XID count (DCGM_EXP_*) has a series only per XID code a GPU reported: none on
# a healthy GPU.
SERIES_PER_GPU = 2 * sum(1 for field, kind, _ in DCGM_FIELDS if kind != "label" and not field.startswith("DCGM_EXP_"))
DCGM_INTERVAL_S = 15  # the GPU Operator's ServiceMonitor interval (chart default, kept)
BYTES_PER_SAMPLE = 2  # compressed TSDB: 1-2 bytes per sample; take the high end
HEADROOM = 1.5  # WAL, compaction's temporary copies, series churn
MIN_VOLUME_GIB = 10
VOLUME_STEP_GIB = 5
RETENTION_SIZE_SHARE = 0.85
MEMORY_PER_SERIES_KIB = 8
MIN_MEMORY_GIB = 2


@dataclass(frozen=True)
class PrometheusSize:
    active_series: int
    samples_per_second: float
    volume_gib: int
    retention_size_gb: int
    memory_gib: int


def node_series(*, cpu_threads: int, interfaces: int, rdma_ports: int, nvme: int) -> int:
    """Series node-exporter and the kubelet export for one node (DCGM's are counted per GPU)."""
    return (NODE_EXPORTER_BASE + KUBELET_SERIES + SERIES_PER_CPU_THREAD * cpu_threads + SERIES_PER_INTERFACE * interfaces
            + SERIES_PER_RDMA_PORT * rdma_ports + SERIES_PER_NVME * nvme)


def series_of(node: NodeModel) -> int:
    nics = node.nics()
    return node_series(cpu_threads=node.profile.cpu_threads, interfaces=sum(len(spec.interfaces) for spec, _ in nics),
                       rdma_ports=sum(len(spec.interfaces) for spec, model in nics if model.rdma), nvme=len(node.profile.nvme))


def prometheus_size(*, node_series: int, gpus: int, scrape_interval_s: int, retention_days: int) -> PrometheusSize:
    """`node_series`: the sum of node_series() over the cluster's nodes."""
    series_other = SERIES_FIXED + node_series
    series_gpu = SERIES_PER_GPU * gpus
    samples = series_other / scrape_interval_s + series_gpu / DCGM_INTERVAL_S
    raw_gib = samples * retention_days * 86_400 * BYTES_PER_SAMPLE * HEADROOM / 2**30
    volume = max(MIN_VOLUME_GIB, VOLUME_STEP_GIB * math.ceil(raw_gib / VOLUME_STEP_GIB))
    series = series_other + series_gpu
    memory = max(MIN_MEMORY_GIB, math.ceil(series * MEMORY_PER_SERIES_KIB / 2**20))
    return PrometheusSize(series, round(samples, 1), volume, math.floor(volume * RETENTION_SIZE_SHARE), memory)


# ---- Loki ---------------------------------------------------------------------------------------
GB_PER_GPU_NODE_DAY = 4.0  # training stdout of 8 ranks, NCCL warnings, kubelet, kernel/journal
GB_PER_OTHER_NODE_DAY = 1.0  # control plane: API server, controllers, journal
SINGLE_BINARY_MAX_GB_DAY = 20.0
SIMPLE_SCALABLE_MAX_GB_DAY = 1_000.0

# Per target: (minimum replicas, GB/day one replica handles).
LOKI_TARGETS: dict[str, dict[str, tuple[int, float]]] = {
    "SingleBinary": {"singleBinary": (1, SINGLE_BINARY_MAX_GB_DAY)},
    # write: 3 for replication_factor 3; read and backend: 2 so a restart is not an outage.
    "SimpleScalable": {"write": (3, 50.0), "read": (2, 100.0), "backend": (2, 250.0)},
    "Distributed": {
        "ingester": (3, 100.0), "distributor": (2, 250.0), "querier": (2, 200.0),
        "queryFrontend": (2, 1_000.0), "queryScheduler": (2, 1_000.0), "indexGateway": (2, 500.0),
        "compactor": (1, math.inf),
    },
}


@dataclass(frozen=True)
class LokiLayout:
    daily_gb: float
    mode: str  # the chart's deploymentMode
    replicas: dict[str, int]  # values key of each target -> replicas
    replication_factor: int


def loki_daily_gb(*, gpu_nodes: int, other_nodes: int) -> float:
    return GB_PER_GPU_NODE_DAY * gpu_nodes + GB_PER_OTHER_NODE_DAY * other_nodes


def loki_layout(daily_gb: float) -> LokiLayout:
    if daily_gb < SINGLE_BINARY_MAX_GB_DAY:
        mode = "SingleBinary"
    elif daily_gb <= SIMPLE_SCALABLE_MAX_GB_DAY:
        mode = "SimpleScalable"
    else:
        mode = "Distributed"
    replicas = {target: max(floor, math.ceil(daily_gb / per)) for target, (floor, per) in LOKI_TARGETS[mode].items()}
    return LokiLayout(daily_gb, mode, replicas, 1 if mode == "SingleBinary" else 3)

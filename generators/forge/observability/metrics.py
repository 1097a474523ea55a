"""Metric names the rules and dashboards read, in one place, with where each comes from.

Every series forge's rules use carries a `node` label (the Kubernetes node name): the scrape
objects add it from `__meta_kubernetes_pod_node_name` (NODE_RELABELING), so GPU, NIC and disk
series of one machine join on it, and on the inventory's `forge:node_info` (rack, profile).
"""
from __future__ import annotations

from typing import Any

NODE_LABEL = "node"
RACK_LABEL = "rack"

# Added to every ServiceMonitor/PodMonitor forge configures: the scraped pod's node as `node`.
NODE_RELABELING: dict[str, Any] = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": NODE_LABEL,
    "action": "replace",
}

# ---- DCGM exporter (GPU Operator) ---------------------------------------------------------------
# The exporter's default field list leaves out the double-bit ECC and NVLink error counters, so the
# GPU Operator is given this list instead (gpu-operator component, dcgmExporter.config).
# (field, Prometheus type, help) as dcgm-exporter's CSV wants them.
DCGM_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_MEM_MAX_OP_TEMP", "gauge", "Maximum operating temperature of the memory (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    # dcgm-exporter's own counter per XID code (label `xid`) within its --xid-count-window-size
    # (default 5 minutes): a repeat of the same XID counts again, where the last-value gauge above
    # does not change.
    ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "Count of XID Errors within user-specified time window (see xid-count-window-size param)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors."),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors."),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus in bytes per second."),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
)
DCGM_CONFIG_NAME = "forge-dcgm-metrics"  # the ConfigMap the GPU Operator creates from DCGM_FIELDS

GPU_TEMP = "DCGM_FI_DEV_GPU_TEMP"
GPU_MEMORY_TEMP = "DCGM_FI_DEV_MEMORY_TEMP"  # HBM
# The HBM limit the GPU itself reports (NVML's memory max-operating threshold, the one DCGM's
# diagnostics check): the HBM alerts' limit for models the catalogue has no published value for.
GPU_MEMORY_MAX_TEMP = "DCGM_FI_DEV_MEM_MAX_OP_TEMP"
GPU_POWER = "DCGM_FI_DEV_POWER_USAGE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GPU_FB_USED = "DCGM_FI_DEV_FB_USED"
GPU_FB_FREE = "DCGM_FI_DEV_FB_FREE"
GPU_XID = "DCGM_FI_DEV_XID_ERRORS"
GPU_XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
XID_LABEL = "xid"
GPU_ECC_DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
GPU_ROW_REMAP_FAILURE = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
GPU_UNCORRECTABLE_REMAPPED_ROWS = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"
NVLINK_CRC_DATA = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
NVLINK_REPLAY = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"
NVLINK_RECOVERY = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
DCGM_MODEL_LABEL = "modelName"  # NVML's device name, hardware.GpuModel.nvml_name
DCGM_GPU_LABEL = "gpu"  # GPU index on the node

# ---- node-exporter (kube-prometheus-stack) ------------------------------------------------------
# netclass/netdev collectors are keyed by interface name (`device`), the names the inventory lists.
NIC_UP = "node_network_up"
NIC_INFO = "node_network_info"
NIC_CARRIER_CHANGES = "node_network_carrier_changes_total"
NIC_RX_ERRORS = "node_network_receive_errs_total"
NIC_TX_ERRORS = "node_network_transmit_errs_total"
# The infiniband collector reads the HCA port counters, which count RDMA traffic (RoCE bypasses
# the kernel's netdev counters). Keyed by HCA (`device`=mlx5_0, `port`), not by interface name.
IB_RX_BYTES = "node_infiniband_port_data_received_bytes_total"
IB_TX_BYTES = "node_infiniband_port_data_transmitted_bytes_total"
IB_SYMBOL_ERRORS = "node_infiniband_symbol_error_total"
IB_LINK_DOWNED = "node_infiniband_link_downed_total"
IB_RX_ERRORS = "node_infiniband_port_errors_received_total"
# InfiniBand link layer (node-exporter's infiniband collector, collector/infiniband_linux.go):
# the port's logical state (4: active) and the link-recovery counter of the IB port counters.
IB_STATE = "node_infiniband_state_id"
IB_STATE_ACTIVE = 4
IB_LINK_ERROR_RECOVERY = "node_infiniband_link_error_recovery_total"
FS_AVAIL = "node_filesystem_avail_bytes"
FS_SIZE = "node_filesystem_size_bytes"

# ---- Alluxio (namespace alluxio, release alluxio; Alluxio 2.9 PrometheusMetricsServlet) ---------
# Where they are scraped (ports, path, pod selector): forge.components.alluxio.SCRAPES.
# Assumption: the alluxio component enables metrics.PrometheusMetricsServlet; Dropwizard names
# ("Cluster.BytesReadLocal") come out with dots as underscores, counters without a suffix.
ALLUXIO_NAMESPACE = "alluxio"
ALLUXIO_WORKER_POD = "alluxio-worker-.+"  # {{fullname}}-worker with release and chart "alluxio"
ALLUXIO_HIT_BYTES = ("Cluster_BytesReadLocal", "Cluster_BytesReadDomain", "Cluster_BytesReadAlluxio")
ALLUXIO_MISS_BYTES = "Cluster_BytesReadUfsAll"

# ---- Flyte (namespace flyte, release flyte; flytepropeller's own metric names) -------------------
# Where they are scraped: forge.components.flyte.SCRAPES.
FLYTE_NAMESPACE = "flyte"
FLYTE_PROPELLER_POD = "(flytepropeller|flyte-binary|flyte-flyte-binary).*"
FLYTE_SYSTEM_ERRORS = "flyte:propeller:all:round:system_error_unlabeled"
FLYTE_PANICS = "flyte:propeller:all:round:panic_unlabeled"
FLYTE_ABORT_ERRORS = "flyte:propeller:all:round:abort_error_unlabeled"

# ---- MIG (dcgm-exporter) -----------------------------------------------------------------------
# DCGM_FI_DEV_GPU_UTIL is not reported for a GPU in MIG mode; the graphics-engine activity is, per
# MIG instance (label GPU_I_ID). Utilisation on a cluster with MIG slices reads both.
MIG_INSTANCE_LABEL = "GPU_I_ID"
GPU_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

# ---- Kueue (namespace kueue-system; sigs.k8s.io/kueue pkg/metrics) ------------------------------
# The per-resource series need the manager's metrics.enableClusterQueueResources (forge sets it).
KUEUE_PENDING = "kueue_pending_workloads"  # cluster_queue, status: active | inadmissible
KUEUE_ADMITTED_ACTIVE = "kueue_admitted_active_workloads"  # cluster_queue
KUEUE_EVICTED = "kueue_evicted_workloads_total"  # cluster_queue, reason
KUEUE_RESOURCE_USAGE = "kueue_cluster_queue_resource_usage"  # cohort, cluster_queue, flavor, resource
KUEUE_NOMINAL_QUOTA = "kueue_cluster_queue_nominal_quota"  # cohort, cluster_queue, flavor, resource
KUEUE_ADMISSION_WAIT = "kueue_admission_wait_time_seconds_bucket"  # cluster_queue, le

# ---- GPU Operator upgrade controller (gpu-operator controllers/operator_metrics.go) --------------
GPU_UPGRADES = {state: f"gpu_operator_nodes_upgrades_{state}"
                for state in ("pending", "available", "in_progress", "done", "failed")}

# ---- kube-state-metrics: node labels it exports (kube-state-metrics.metricLabelsAllowlist) -------
KSM_NODE_LABELS = "kube_node_labels"
# The GPU Operator's upgrade library writes each node's driver-upgrade state as the node label
# nvidia.com/gpu-driver-upgrade-state (forge.model.day_two.UPGRADE_STATE_LABEL); on kube_node_labels:
KSM_GPU_UPGRADE_STATE = "label_nvidia_com_gpu_driver_upgrade_state"  # as kube-state-metrics names it
# The states in which the driver really is out: GPU pods deleted, the node drained, the driver
# reloaded and validated (k8s-operator-libs pkg/upgrade, in that order): GPUs vanish and exporters
# restart on purpose. Not upgrade-required, cordon-required nor wait-for-jobs-required: the node is
# cordoned but its driver still runs training jobs (for up to waitForCompletion's day), and a
# GPU, NIC or NVMe fault then must page. Not upgrade-done, nor upgrade-failed (a broken node pages).
GPU_UPGRADE_BUSY_STATES = ("pod-deletion-required", "drain-required", "pod-restart-required", "validation-required",
                           "uncordon-required")

# ---- External Secrets Operator (its own metric names) --------------------------------------------
ESO_CONDITION = "externalsecret_status_condition"  # name, namespace, condition, status: 1 for the current one

# ---- recording rules forge writes (forge.observability.rules) -----------------------------------
NODE_INFO = "forge:node_info"  # 1 per inventory node: node, rack, profile
NODE_GPUS_EXPECTED = "forge:node_gpus_expected"  # GPUs the inventory says a node has
NODE_GPU_UPGRADING = "forge:node_gpu_driver_upgrading"  # 1 per node whose GPU driver is being upgraded
ALLUXIO_HIT_RATIO = "forge:alluxio_cache_hit_ratio:rate15m"
ALLUXIO_READ_BYTES = "forge:alluxio_read_bytes:rate15m"


def dcgm_metrics_csv() -> str:
    """dcgm-exporter's metrics file: `field, type, help` per line."""
    lines = ["# Written by forge (forge.observability.metrics.DCGM_FIELDS): the fields forge's alerts and dashboards read."]
    lines += [f"{field}, {kind}, {help_text}" for field, kind, help_text in DCGM_FIELDS]
    return "\n".join(lines) + "\n"

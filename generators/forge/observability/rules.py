"""The cluster's PrometheusRule: thresholds from the hardware table, targets from the inventory.

* GPU temperature and power limits come from `forge.facts.hardware` per GPU model; a cluster with
  several models gets one rule per model, matched on DCGM's `modelName` (GpuModel.nvml_name).
* "GPU fell off the bus" compares the GPUs reporting on each node with the inventory's count,
  written into Prometheus as one constant recording rule per node (`forge:node_gpus_expected`).
* NIC rules watch exactly the interfaces each profile lists, on exactly the nodes of that
  profile (node-exporter's netclass/netdev collectors are keyed by interface name); RDMA counters
  come from its infiniband collector on nodes whose profile has RDMA-capable NICs.
* NVMe rules watch the mount paths each profile lists.
* "The nodes of a profile" is a join on forge:node_info{profile=...} (of_profile), never a regex
  of node names: adding a node adds its own forge:node_info rule and changes no alert.
* Alluxio and Flyte rules use those projects' standard metric names (forge.observability.metrics).

Every alert has a `severity` label and `summary` and `runbook` annotations. Annotations use
only `$labels` and `$value`, so tests can expand them.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from forge.facts.hardware import GpuModel
from forge.model.cluster import ClusterModel, NodeModel
from forge.observability import metrics as m
from forge.observability.infiniband import infiniband_hcas, infiniband_rules
from forge.observability.lifecycle import node_test_rules, upgrade_rules
from forge.observability.platform_rules import platform_rule_groups
from forge.observability.promql import alert, on_nodes_of, regex_alternation, selector  # noqa: F401 (re-exported)

RULE_NAME = "forge-fleet"
GPU_BY = f"{m.NODE_LABEL}, {m.DCGM_GPU_LABEL}, {m.DCGM_MODEL_LABEL}"

# Alert margins and thresholds (policy, not hardware facts; the limits themselves are in hardware.py).
TEMP_WARNING_MARGIN_C = 5  # warn this far below the model's slowdown temperature
NVLINK_ERROR_BURST = 100  # CRC/replay errors per 15 minutes on one GPU that a healthy link never shows
NIC_FLAPS_CARRIER_CHANGES = 4  # carrier changes in 15 minutes: two down/up cycles
NVME_WARNING_FREE = 0.10
NVME_CRITICAL_FREE = 0.03
ALLUXIO_MIN_HIT_RATIO = 0.5
ALLUXIO_MIN_READ_BYTES_PER_S = 50e6  # below this the hit ratio is noise (a few cold reads)
# NVIDIA's XID catalogue: codes that mean the GPU (not the job) is broken and must be drained or
# reset: 48 double-bit ECC, 61/62 microcontroller halt, 64 row-remapper failure, 74 NVLink error,
# 79 fallen off the bus, 92 high single-bit ECC rate, 95 uncontained ECC, 119/120 GSP errors,
# 140 unrecovered ECC. Other codes (13, 31, 43, 45 ...) are usually the application's fault.
CRITICAL_XIDS = (48, 61, 62, 64, 74, 79, 92, 95, 119, 120, 140)
NIC_ROLE_SEVERITY = {"compute": "critical", "storage": "critical", "frontend": "warning", "management": "warning"}


# ---- inventory facts as series ------------------------------------------------------------------

def inventory_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for node in cluster.nodes:
        rules.append({"record": m.NODE_INFO, "expr": "vector(1)",
                      "labels": {m.NODE_LABEL: node.name, m.RACK_LABEL: node.rack, "profile": node.profile_name}})
    for node in cluster.gpu_nodes:
        rules.append({"record": m.NODE_GPUS_EXPECTED, "expr": f"vector({node.gpu_count})",
                      "labels": {m.NODE_LABEL: node.name, m.RACK_LABEL: node.rack, "gpu_model": node.gpu.nvml_name}})
    return rules


# ---- GPUs ---------------------------------------------------------------------------------------

def gpu_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    # dcgm-exporter's per-XID count over its window (GPU_XID_COUNT, label xid): an XID fires while
    # it was seen within the window, again for a second one of the same code (the last-value gauge
    # did not change then), and the alert carries the code.
    codes = regex_alternation(str(c) for c in CRITICAL_XIDS)
    gpu = "{{ $labels.node }} GPU {{ $labels.gpu }} ({{ $labels.modelName }})"
    seen = "reported XID {{ $labels.xid }} {{ $value }} time(s) within the exporter's XID window"
    rules = [
        alert("GpuXidCriticalError", f"max by ({GPU_BY}, {m.XID_LABEL}) ({m.GPU_XID_COUNT}{selector(xid_re=codes)}) > 0", "critical",
              f"{gpu} {seen}: a hardware fault",
              "Cordon and drain the node, look up the XID in NVIDIA's XID catalogue and the kernel log "
              "(Loki: {node=\"<node>\", job=\"node/journal\"} |= \"NVRM: Xid\"); reset the GPU or RMA it."),
        alert("GpuXidError", f"max by ({GPU_BY}, {m.XID_LABEL}) ({m.GPU_XID_COUNT}{selector(xid_nre=codes)}) > 0", "warning",
              f"{gpu} {seen}",
              "Usually the application's fault (illegal address, page fault, job killed): check the job on "
              "that GPU; escalate if the same GPU repeats it with different jobs."),
        alert("GpuDoubleBitEccError", f"max by ({GPU_BY}) (increase({m.GPU_ECC_DBE}[15m])) > 0", "critical",
              f"{gpu} had an uncorrectable (double-bit) ECC error",
              "The job on this GPU may have computed on corrupted memory: drain the node, reset the GPU "
              "(nvidia-smi -r) so the row remapper applies; replace it if the errors return."),
        alert("GpuRowRemapFailure", f"max by ({GPU_BY}) ({m.GPU_ROW_REMAP_FAILURE}) > 0", "critical",
              f"{gpu} failed to remap a faulty memory row",
              "The GPU has run out of spare rows: drain the node and open an RMA with the vendor."),
        alert("GpuRowRemapPending", f"max by ({GPU_BY}) (increase({m.GPU_UNCORRECTABLE_REMAPPED_ROWS}[1h])) > 0", "warning",
              f"{gpu} remapped a row after an uncorrectable error; a GPU reset is pending",
              "Drain the node when the running job allows and reset the GPU to apply the remap."),
        alert("GpuFellOffBus",
              f"{m.NODE_GPUS_EXPECTED} - on ({m.NODE_LABEL}) group_left () (count by ({m.NODE_LABEL}) "
              f"(count by ({m.NODE_LABEL}, {m.DCGM_GPU_LABEL}) ({m.GPU_TEMP})) "
              f"or on ({m.NODE_LABEL}) ({m.NODE_GPUS_EXPECTED} * 0)) > 0",
              "critical", "{{ $labels.node }} reports {{ $value }} GPU(s) fewer than the inventory lists",
              "A GPU fell off the bus (XID 79) or the node's DCGM exporter is down: check `nvidia-smi` and "
              "the kernel log on the node; reseat/RMA the GPU. The inventory's count is the expectation.",
              for_="5m"),
    ]
    for model in cluster.gpu_models:
        rules += gpu_model_rules(model)
    if any(n.profile.gpu and n.profile.gpu.nvlink for n in cluster.gpu_nodes):
        rules += [
            alert("GpuNvlinkErrors",
                  " or ".join(f"sum by ({GPU_BY}) (increase({name}[15m])) > {NVLINK_ERROR_BURST}"
                              for name in (m.NVLINK_CRC_DATA, m.NVLINK_REPLAY)),
                  "warning", f"{gpu} shows NVLink CRC/replay errors",
                  "A degrading NVLink slows every collective on the node: check `nvidia-smi nvlink -e`, "
                  "drain and reseat the GPU/baseboard if errors keep rising."),
            alert("GpuNvlinkRecoveryErrors", f"max by ({GPU_BY}) (increase({m.NVLINK_RECOVERY}[15m])) > 0",
                  "critical", f"{gpu} had an NVLink link go down and recover",
                  "NVLink recovery errors usually precede XID 74: drain the node and run the NVIDIA field "
                  "diagnostics (dcgmi diag -r 3)."),
        ]
    return [quiet_while_upgrading(r) for r in rules]


def quiet_while_upgrading(rule: dict[str, Any]) -> dict[str, Any]:
    """A GPU alert that holds its peace on a node whose GPU driver the operator is upgrading
    (NODE_GPU_UPGRADING): the driver reload takes GPUs off the bus and restarts the exporter."""
    return {**rule, "expr": f"({rule['expr']}) unless on ({m.NODE_LABEL}) {m.NODE_GPU_UPGRADING}"}


def gpu_model_rules(model: GpuModel) -> list[dict[str, Any]]:
    only = selector(**{m.DCGM_MODEL_LABEL: model.nvml_name})
    warn_at = model.max_temp_c - TEMP_WARNING_MARGIN_C
    gpu = "{{ $labels.node }} GPU {{ $labels.gpu }}"
    extra = {"gpu_model": model.key}
    return [
        alert("GpuTemperatureHigh", f"max by ({GPU_BY}) ({m.GPU_TEMP}{only}) >= {warn_at}", "warning",
              f"{gpu} is at or above {warn_at} C ({model.key} slows down at {model.max_temp_c} C)",
              "Check the node's fans, inlet temperature and neighbours in the rack before it throttles.",
              for_="5m", labels=extra),
        alert("GpuTemperatureCritical", f"max by ({GPU_BY}) ({m.GPU_TEMP}{only}) >= {model.max_temp_c}", "critical",
              f"{gpu} reached {model.key}'s slowdown temperature of {model.max_temp_c} C",
              "The GPU is throttling: check cooling now; drain the node if it does not come down.",
              for_="2m", labels=extra),
        alert("GpuPowerOverLimit", f"max by ({GPU_BY}) ({m.GPU_POWER}{only}) > {model.max_power_w}", "warning",
              f"{gpu} draws more than {model.key}'s board limit of {model.max_power_w} W",
              "Check the power limit (`nvidia-smi -q -d POWER`) and the PSU/baseboard; a GPU above its "
              "board limit is misconfigured or misreporting.",
              for_="5m", labels=extra),
        *hbm_rules(model, only, gpu, extra),
    ]


def hbm_rules(model: GpuModel, only: str, gpu: str, extra: dict[str, str]) -> list[dict[str, Any]]:
    """HBM (memory) temperature against the model's published limit (the catalogue's
    max_memory_temp_c) or, for a model the catalogue has none for, against the limit each GPU
    reports itself (GPU_MEMORY_MAX_TEMP): never a guessed number, which would page for nothing or
    too late."""
    limit = model.max_memory_temp_c
    temp = f"max by ({GPU_BY}) ({m.GPU_MEMORY_TEMP}{only})"
    if limit is None:
        # `> 0`: a GPU that reports no limit (0) must not page at every temperature
        reported = f"max by ({GPU_BY}) ({m.GPU_MEMORY_MAX_TEMP}{only} > 0)"
        warn, crit = (f"{temp} >= on ({GPU_BY}) ({reported} - {TEMP_WARNING_MARGIN_C})",
                      f"{temp} >= on ({GPU_BY}) {reported}")
        warn_text = f"within {TEMP_WARNING_MARGIN_C} C of the memory limit the GPU reports"
        crit_text = "the memory limit the GPU reports"
    else:
        warn, crit = f"{temp} >= {limit - TEMP_WARNING_MARGIN_C}", f"{temp} >= {limit}"
        warn_text = f"at or above {limit - TEMP_WARNING_MARGIN_C} C ({model.key}'s memory limit is {limit} C)"
        crit_text = f"{model.key}'s memory limit of {limit} C"
    return [
        alert("GpuMemoryTemperatureHigh", warn, "warning", f"{gpu} HBM is {warn_text}",
              "HBM heats with memory-bound work and poor airflow across the baseboard: check fans and inlet "
              "temperature before the GPU throttles its memory clock.",
              for_="5m", labels=extra),
        alert("GpuMemoryTemperatureCritical", crit, "critical", f"{gpu} HBM reached {crit_text}",
              "The memory is throttling and may raise ECC errors: fix cooling now; drain the node if it stays.",
              for_="2m", labels=extra),
    ]


# ---- NICs ---------------------------------------------------------------------------------------

def _nodes_by_profile(nodes: Iterable[NodeModel]) -> dict[str, list[NodeModel]]:
    out: dict[str, list[NodeModel]] = defaultdict(list)
    for node in nodes:
        out[node.profile_name].append(node)
    return dict(sorted(out.items()))


def of_profile(vector: str, *profiles: str) -> str:
    """`vector` on the inventory nodes of these profiles (forge.observability.promql.on_nodes_of)."""
    return on_nodes_of(vector, m.NODE_INFO, profiles, m.NODE_LABEL)


def network_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    rdma_profiles: set[str] = set()
    for profile, nodes in _nodes_by_profile(cluster.nodes).items():
        by_role: dict[str, list[str]] = defaultdict(list)
        for spec, model in nodes[0].nics():
            by_role[spec.role] += spec.interfaces
            if model.rdma and spec.link_type == "ethernet":  # RoCE; InfiniBand ports: forge.observability.infiniband
                rdma_profiles.add(profile)
        for role, interfaces in sorted(by_role.items()):
            sel = selector(device_re=regex_alternation(interfaces))
            severity = NIC_ROLE_SEVERITY[role]
            labels = {"nic_role": role}
            port = f"{{{{ $labels.node }}}} {role} port {{{{ $labels.device }}}}"
            rules += [
                alert("NicPortDown", f"{of_profile(f'{m.NIC_UP}{sel}', profile)} == 0", severity, f"{port} is down",
                      "Check the cable, the switch port and `ip link`/`ethtool` on the node; a compute or "
                      "storage port down stalls every multi-node job on this node: drain it.",
                      for_="2m", labels=labels),
                alert("NicPortMissing",
                      f"(count by ({m.NODE_LABEL}) {of_profile(f'{m.NIC_INFO}{sel}', profile)} or on ({m.NODE_LABEL}) "
                      f"(count by ({m.NODE_LABEL}) {of_profile(m.NIC_INFO, profile)} * 0)) < {len(interfaces)}",
                      severity, f"{{{{ $labels.node }}}} shows fewer {role} ports than the {profile} profile lists ({len(interfaces)})",
                      "An interface vanished (NIC driver crash, firmware hang, renamed interface): check "
                      "`ip link` and dmesg on the node; fix the inventory if the hardware changed.",
                      for_="5m", labels=labels),
                alert("NicPortFlapping", f"{of_profile(f'increase({m.NIC_CARRIER_CHANGES}{sel}[15m])', profile)} > {NIC_FLAPS_CARRIER_CHANGES}",
                      "warning", f"{port} is flapping",
                      "A flapping link usually means a bad cable or transceiver: check optics levels "
                      "(`ethtool -m`) and the switch's port log; replace the cable.",
                      labels=labels),
                alert("NicErrorCountersRising",
                      " or ".join(f"{of_profile(f'increase({name}{sel}[15m])', profile)} > 0" for name in (m.NIC_RX_ERRORS, m.NIC_TX_ERRORS)),
                      "warning", f"{port} counts receive/transmit errors",
                      "Errors that keep rising point at the cable, transceiver or switch port: check "
                      "`ethtool -S` on the node and the switch counters.",
                      for_="10m", labels=labels),
            ]
    if rdma_profiles:
        # The infiniband collector reports RoCE and InfiniBand HCAs alike: leave the InfiniBand ones
        # to the InfiniBand rules (forge.observability.infiniband), which know their link states.
        ib = infiniband_hcas(cluster)
        sel = selector(device_nre=regex_alternation(ib)) if ib else ""
        errors = " or ".join(f"{of_profile(f'increase({name}{sel}[15m])', *rdma_profiles)} > 0"
                             for name in (m.IB_SYMBOL_ERRORS, m.IB_LINK_DOWNED, m.IB_RX_ERRORS))
        rules.append(alert("RdmaPortErrors", errors, "warning",
                           "{{ $labels.node }} RDMA device {{ $labels.device }} port {{ $labels.port }} counts link errors",
                           "Symbol errors and link-downed events on an RDMA port slow NCCL and storage traffic: "
                           "check `ibv_devinfo`, `mlxlink` and the cable; drain the node if they keep rising.",
                           for_="10m"))
    return rules


# ---- NVMe cache ---------------------------------------------------------------------------------

def storage_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for profile, nodes in _nodes_by_profile(cluster.nodes).items():
        mounts = [d.mount for d in nodes[0].nvme]
        if not mounts:
            continue
        sel = selector(mountpoint_re=regex_alternation(mounts))
        free = of_profile(f"{m.FS_AVAIL}{sel} / {m.FS_SIZE}{sel}", profile)
        where = "{{ $labels.node }}:{{ $labels.mountpoint }}"
        rules += [
            alert("NvmeCacheFilesystemAlmostFull", f"{free} < {NVME_WARNING_FREE}", "warning",
                  f"NVMe cache {where} has less than {NVME_WARNING_FREE:.0%} free",
                  "Check the Alluxio worker's quota on this path and what else writes there (`du -xsh`); "
                  "the cache must evict before the disk fills.",
                  for_="15m"),
            alert("NvmeCacheFilesystemFull", f"{free} < {NVME_CRITICAL_FREE}", "critical",
                  f"NVMe cache {where} is full (less than {NVME_CRITICAL_FREE:.0%} free)",
                  "Writes to the cache are failing: free space now (stop the offender, shrink the Alluxio "
                  "quota) and find what bypassed the cache's quota.",
                  for_="5m"),
            alert("NvmeCacheNotMounted",
                  f"(count by ({m.NODE_LABEL}) {of_profile(f'{m.FS_SIZE}{sel}', profile)} or on ({m.NODE_LABEL}) "
                  f"(count by ({m.NODE_LABEL}) {of_profile(m.FS_SIZE, profile)} * 0)) < {len(mounts)}",
                  "warning", f"{{{{ $labels.node }}}} has fewer NVMe cache mounts than the {profile} profile lists ({len(mounts)})",
                  "A cache disk is not mounted (failed disk, fstab, wiped by reinstall): check `lsblk` and "
                  "`mount` on the node; the cache runs short until it is back.",
                  for_="15m"),
        ]
    return rules


# ---- Alluxio and Flyte --------------------------------------------------------------------------

def _sum_rates(names: Iterable[str], namespace: str, window: str) -> str:
    """Sum of the rates of several counters. Not `rate({__name__=~"a|b"})`: two counters with the
    same labels collide once rate() drops their names. A counter not exported counts as 0."""
    return " + ".join(f"(sum(rate({name}{selector(namespace=namespace)}[{window}])) or vector(0))" for name in names)


def alluxio_worker_pods(cluster: ClusterModel) -> str:
    """The Alluxio worker pods' name pattern: the main release's, and on clusters whose NVMe
    profiles differ, each worker pool release's (<release>-worker-...; forge.components.alluxio.pools)."""
    pools = getattr(cluster.component_facts.get("alluxio"), "extra_pools", ())
    # Release names are DNS labels (profile names): no regex specials to escape.
    return "|".join([m.ALLUXIO_WORKER_POD, *(f"{p.release}-worker-.+" for p in pools)])


def alluxio_rules(worker_pods: str = m.ALLUXIO_WORKER_POD) -> list[dict[str, Any]]:
    ns = m.ALLUXIO_NAMESPACE
    workers = selector(namespace=ns, pod_re=worker_pods)
    ready = selector(namespace=ns, pod_re=worker_pods, condition="true")
    return [
        {"record": m.ALLUXIO_READ_BYTES, "expr": _sum_rates([*m.ALLUXIO_HIT_BYTES, m.ALLUXIO_MISS_BYTES], ns, "15m")},
        {"record": m.ALLUXIO_HIT_RATIO, "expr": f"({_sum_rates(m.ALLUXIO_HIT_BYTES, ns, '15m')}) / {m.ALLUXIO_READ_BYTES}"},
        alert("AlluxioWorkerDown", f"up{workers} == 0 or kube_pod_status_ready{ready} == 0", "critical",
              "Alluxio worker {{ $labels.pod }} is down",
              "Reads it cached now go to S3: check the pod's events and logs (Loki: namespace=\"alluxio\"), "
              "its NVMe cache mounts and the node.",
              for_="5m"),
        alert("AlluxioCacheHitRateCollapsed",
              f"{m.ALLUXIO_HIT_RATIO} < {ALLUXIO_MIN_HIT_RATIO} and {m.ALLUXIO_READ_BYTES} > {ALLUXIO_MIN_READ_BYTES_PER_S:.0f}",
              "warning", f"Alluxio serves less than {ALLUXIO_MIN_HIT_RATIO:.0%} of reads from cache",
              "Training reads are going to S3: check for lost workers, a full or unmounted NVMe cache, or a "
              "new dataset larger than the cache; pre-load it (`alluxio fs distributedLoad`).",
              for_="15m"),
    ]


def flyte_rules() -> list[dict[str, Any]]:
    ns = m.FLYTE_NAMESPACE
    return [
        alert("FlytePropellerSystemErrors",
              " or ".join(f"sum by (namespace) (rate({name}{selector(namespace=ns)}[5m])) > 0"
                          for name in (m.FLYTE_SYSTEM_ERRORS, m.FLYTE_ABORT_ERRORS)), "warning",
              "Flyte propeller fails to reconcile workflows (system errors)",
              "Look at flytepropeller's logs (Loki: namespace=\"flyte\") for the failing workflows; common "
              "causes are S3 access, the Kubernetes API and plugin errors.",
              for_="15m"),
        alert("FlytePropellerPanics", f"sum by (namespace) (increase({m.FLYTE_PANICS}{selector(namespace=ns)}[10m])) > 0",
              "critical", "Flyte propeller panicked while handling a workflow",
              "A panic aborts the round for that workflow: find the stack trace in propeller's logs and the "
              "workflow it names; file it upstream if it is not our plugin configuration."),
        alert("FlytePropellerDown", f"up{selector(namespace=ns, pod_re=m.FLYTE_PROPELLER_POD)} == 0", "critical",
              "Flyte propeller {{ $labels.pod }} cannot be scraped",
              "No workflow advances while propeller is down: check the pod's events, restarts and logs.",
              for_="5m"),
    ]


# Groups that watch a component forge deploys, by the component: a cluster that does not enable it
# (h200-burst runs no Alluxio) gets none of its rules, which would watch pods that never exist.
COMPONENT_GROUPS = {"forge-alluxio": "alluxio", "forge-flyte": "flyte"}


def rule_groups(cluster: ClusterModel) -> list[dict[str, Any]]:
    enabled = cluster.component_settings
    groups = [
        ("forge-inventory", inventory_rules(cluster)),
        ("forge-gpu", gpu_rules(cluster)),
        ("forge-network", network_rules(cluster)),
        ("forge-infiniband", infiniband_rules(cluster)),
        ("forge-nvme", storage_rules(cluster)),
        ("forge-alluxio", alluxio_rules(alluxio_worker_pods(cluster))),
        ("forge-flyte", flyte_rules()),
        ("forge-node-lifecycle", upgrade_rules(cluster) + node_test_rules(cluster)),
        *platform_rule_groups(cluster),
    ]
    return [{"name": name, "rules": rules} for name, rules in groups
            if rules and (name not in COMPONENT_GROUPS or COMPONENT_GROUPS[name] in enabled)]


def prometheus_rule(cluster: ClusterModel, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": namespace},
        "spec": {"groups": rule_groups(cluster)},
    }

"""The generated alert rules under promtool: `check rules`, and `test rules` with synthetic series.

Every alert rule of each real fleet's PrometheusRule has a case where it fires (with its exact
labels and expanded annotations) and one where it stays quiet; a rule without a case fails
test_every_alert_rule_has_a_case. Thresholds are read from forge.facts.hardware, never restated here.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from forge.facts.hardware import GPU_MODELS
from forge.model.cluster import ClusterModel
from forge.observability import metrics as m
from forge.observability.rules import rule_groups
from tests.helpers import fixture_model, generated

CLUSTERS = ["a100", "h200", "h200-burst", "ib-small"]  # ib-small: the InfiniBand fixture (tests/fixtures)
DCGM_JOB = {"job": "nvidia-dcgm-exporter", "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x1"}
NODE_JOB = {"job": "node-exporter", "instance": "10.0.0.9:9100"}


@dataclass
class Case:
    alert: str
    rule_labels: dict[str, str]  # picks the rule among those with this alert name (severity, gpu_model, nic_role)
    fire: list[tuple[str, str]]  # (series, values) where the alert fires
    quiet: list[tuple[str, str]]  # ... and where it stays quiet
    labels: list[dict[str, str]]  # expected alert labels minus the rule's own (one dict per alert)
    eval_time: str = "10m"
    value: str = ""  # what {{ $value }} expands to
    name: str = ""
    extra_quiet: list[list[tuple[str, str]]] = field(default_factory=list)
    interval: str = "1m"  # the step of the input series (alerts held for a day: longer steps)


@pytest.fixture(scope="module")
def fleets(clusters) -> dict[str, ClusterModel]:
    """The shipped fleets and the InfiniBand fixture."""
    ib = fixture_model("ib-small")
    return {**clusters, ib.name: ib}


def series(metric: str, **labels: str) -> str:
    return metric + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def alert_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    return [r for g in rule_groups(cluster) for r in g["rules"] if "alert" in r]


def find_rule(cluster: ClusterModel, alert: str, labels: dict[str, str]) -> dict[str, Any]:
    found = [r for r in alert_rules(cluster) if r["alert"] == alert and labels.items() <= r["labels"].items()]
    assert len(found) == 1, f"{alert} {labels}: {len(found)} rules match"
    return found[0]


def expand(template: str, labels: dict[str, str], value: str) -> str:
    out = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda mt: labels[mt.group(1)], template)
    return out.replace("{{ $value }}", value)


STRANGER = "stranger-01"  # a node that is in no inventory: the profile rules' join on forge:node_info leaves it out


def elsewhere(inputs: list[tuple[str, str]], node: str, other: str = STRANGER) -> list[tuple[str, str]]:
    """The same series on another node (one of another profile, or in no inventory)."""
    return [(s.replace(f'node="{node}"', f'node="{other}"'), v) for s, v in inputs]


def upgrading(node: str, state: str) -> list[tuple[str, str]]:
    """kube-state-metrics' node label series of the GPU Operator's upgrade state."""
    return [(series(m.KSM_NODE_LABELS, job="kube-state-metrics", node=node, **{m.KSM_GPU_UPGRADE_STATE: state}), "1x20")]


def gpu_cases(cluster: ClusterModel) -> list[Case]:
    node = cluster.gpu_nodes[0]
    model = node.gpu
    gpu = {"node": node.name, "gpu": "0", "modelName": model.nvml_name}
    dcgm = {**gpu, "UUID": "GPU-0000", "Hostname": node.name, **DCGM_JOB}

    def one(metric: str, values: str) -> list[tuple[str, str]]:
        return [(series(metric, **dcgm), values)]

    def xid(code: str, values: str) -> list[tuple[str, str]]:
        return [(series(m.GPU_XID_COUNT, **dcgm, xid=code), values)]

    cases = [
        # dcgm-exporter's per-XID count (issue 22 item 11): a second XID 79 on the same GPU, after
        # the first left the window, fires again (the last-value gauge stayed 79 and never did);
        # the other class's XID never fires this one; nothing on a node in a driver upgrade.
        Case("GpuXidCriticalError", {}, xid("79", "1x4 0x4 1x6"), xid("79", "0x15"), [{**gpu, "xid": "79"}], "12m", "1",
             extra_quiet=[xid("13", "1x15"), xid("79", "1x15") + upgrading(node.name, "pod-restart-required")]),
        Case("GpuXidCriticalError", {}, xid("79", "2x15") + upgrading(node.name, "upgrade-required"), xid("79", "0x15"),
             [{**gpu, "xid": "79"}], "12m", "2", name="not-yet-draining"),
        # issue 34: cordoned and waiting for its jobs, the node still trains on its driver: it pages.
        Case("GpuXidCriticalError", {}, xid("79", "2x15") + upgrading(node.name, "wait-for-jobs-required"), xid("79", "0x15"),
             [{**gpu, "xid": "79"}], "12m", "2", name="waiting-for-jobs",
             extra_quiet=[xid("79", "2x15") + upgrading(node.name, "drain-required")]),
        Case("GpuXidError", {}, xid("13", "0x5 3x10"), xid("13", "0x15"), [{**gpu, "xid": "13"}], "12m", "3",
             extra_quiet=[xid("79", "1x15"), xid("13", "1x15") + upgrading(node.name, "validation-required")]),
        Case("GpuDoubleBitEccError", {}, one(m.GPU_ECC_DBE, "0 0 0 1x10"), one(m.GPU_ECC_DBE, "3x20"), [gpu], "5m"),
        Case("GpuRowRemapFailure", {}, one(m.GPU_ROW_REMAP_FAILURE, "1x5"), one(m.GPU_ROW_REMAP_FAILURE, "0x5"), [gpu], "2m"),
        Case("GpuRowRemapPending", {}, one(m.GPU_UNCORRECTABLE_REMAPPED_ROWS, "0 0 1x10"),
             one(m.GPU_UNCORRECTABLE_REMAPPED_ROWS, "2x20"), [gpu], "10m"),
    ]
    # Fell off the bus: every GPU of every node reports, except GPU 7 of the first node.
    everything = [(series(m.GPU_TEMP, node=n.name, gpu=str(i), modelName=n.gpu.nvml_name, **DCGM_JOB), "40x15")
                  for n in cluster.gpu_nodes for i in range(n.gpu_count)]
    missing = [s for s in everything if s[0] != series(m.GPU_TEMP, node=node.name, gpu=str(node.gpu_count - 1),
                                                        modelName=model.nvml_name, **DCGM_JOB)]
    assert len(missing) == len(everything) - 1
    cases.append(Case("GpuFellOffBus", {}, missing, everything,
                      [{"node": node.name, "rack": node.rack, "gpu_model": model.nvml_name}], "10m", "1",
                      # The driver reloading for an upgrade takes the GPUs off the bus on purpose.
                      extra_quiet=[missing + upgrading(node.name, "pod-restart-required")]))
    for gm in cluster.gpu_models:
        n = next(x for x in cluster.gpu_nodes if x.gpu == gm)
        g = {"node": n.name, "gpu": "3", "modelName": gm.nvml_name}
        d = {**g, "UUID": "GPU-0003", **DCGM_JOB}
        warn = gm.max_temp_c - 5
        cases += [
            Case("GpuTemperatureHigh", {"gpu_model": gm.key}, [(series(m.GPU_TEMP, **d), f"{warn}x10")],
                 [(series(m.GPU_TEMP, **d), f"{warn - 1}x10")], [g], "10m"),
            Case("GpuTemperatureCritical", {"gpu_model": gm.key}, [(series(m.GPU_TEMP, **d), f"{gm.max_temp_c}x10")],
                 [(series(m.GPU_TEMP, **d), f"{gm.max_temp_c - 1}x10")], [g], "5m"),
            Case("GpuPowerOverLimit", {"gpu_model": gm.key}, [(series(m.GPU_POWER, **d), f"{gm.max_power_w + 1}x10")],
                 [(series(m.GPU_POWER, **d), f"{gm.max_power_w}x10")], [g], "10m"),
        ]
        if gm.max_memory_temp_c is not None:  # HBM limit from the catalogue, where published
            hbm = gm.max_memory_temp_c
            cases += [
                Case("GpuMemoryTemperatureHigh", {"gpu_model": gm.key}, [(series(m.GPU_MEMORY_TEMP, **d), f"{hbm - 5}x10")],
                     [(series(m.GPU_MEMORY_TEMP, **d), f"{hbm - 6}x10")], [g], "10m",
                     extra_quiet=[[(series(m.GPU_TEMP, **d), f"{hbm}x10")]]),  # the GPU's own temperature is another alert
                Case("GpuMemoryTemperatureCritical", {"gpu_model": gm.key}, [(series(m.GPU_MEMORY_TEMP, **d), f"{hbm}x10")],
                     [(series(m.GPU_MEMORY_TEMP, **d), f"{hbm - 1}x10")], [g], "5m"),
            ]
        else:  # no published limit: the one each GPU reports (93 C here, any value the GPU gives)
            def hbm_at(temp: int, limit: int = 93) -> list[tuple[str, str]]:
                return [(series(m.GPU_MEMORY_TEMP, **d), f"{temp}x10"), (series(m.GPU_MEMORY_MAX_TEMP, **d), f"{limit}x10")]
            cases += [
                Case("GpuMemoryTemperatureHigh", {"gpu_model": gm.key}, hbm_at(88), hbm_at(87), [g], "10m",
                     extra_quiet=[hbm_at(88, limit=100),  # another GPU's higher limit
                                  [(series(m.GPU_MEMORY_TEMP, **d), "99x10")],  # no reported limit: no alert
                                  hbm_at(40, limit=0)]),  # a limit of 0 (none reported) neither
                Case("GpuMemoryTemperatureCritical", {"gpu_model": gm.key}, hbm_at(93), hbm_at(92), [g], "5m"),
            ]
    if any(n.profile.gpu.nvlink for n in cluster.gpu_nodes):
        cases += [
            Case("GpuNvlinkErrors", {}, one(m.NVLINK_CRC_DATA, "0+20x20") + one(m.NVLINK_REPLAY, "0x20"),
                 one(m.NVLINK_CRC_DATA, "0+1x20") + one(m.NVLINK_REPLAY, "0+1x20"), [gpu], "15m",
                 extra_quiet=[one(m.NVLINK_REPLAY, "0+6x20")]),  # 90 retries in 15m: under the burst
            Case("GpuNvlinkRecoveryErrors", {}, one(m.NVLINK_RECOVERY, "0 0 0 1x10"), one(m.NVLINK_RECOVERY, "0x20"), [gpu], "5m"),
        ]
    return cases


def network_cases(cluster: ClusterModel) -> list[Case]:
    cases: list[Case] = []
    seen_profiles = set()
    rdma_node = None
    for node in cluster.nodes:
        if node.profile_name in seen_profiles or not node.nics():
            continue
        seen_profiles.add(node.profile_name)
        roles: dict[str, list[str]] = {}
        for spec, model in node.nics():
            roles.setdefault(spec.role, []).extend(spec.interfaces)
            if model.rdma and spec.link_type == "ethernet" and rdma_node is None:
                rdma_node = node
        for role, ifaces in roles.items():
            rl = {"nic_role": role}
            port = {"node": node.name, "device": ifaces[0], **NODE_JOB}
            # Every interface of the node (all roles) and lo: only this role's first port is missing.
            info = [(series(m.NIC_INFO, node=node.name, device=i, operstate="up", **NODE_JOB), "1x10")
                    for spec, _ in node.nics() for i in spec.interfaces]
            lo = [(series(m.NIC_INFO, node=node.name, device="lo", operstate="unknown", **NODE_JOB), "1x10")]
            gone = series(m.NIC_INFO, node=node.name, device=ifaces[0], operstate="up", **NODE_JOB)
            down = [(series(m.NIC_UP, **port), "0x10")]
            missing = [x for x in info if x[0] != gone] + lo
            flapping = [(series(m.NIC_CARRIER_CHANGES, **port), "0+2x10")]
            errors = [(series(m.NIC_RX_ERRORS, **port), "0+5x20")]
            cases += [
                # Quiet too: the same readings on a node of no inventory (the profile is a join, not a node list).
                Case("NicPortDown", rl, down, [(series(m.NIC_UP, **port), "1x10")],
                     [port], "5m", name=f"{role}", extra_quiet=[elsewhere(down, node.name)]),
                Case("NicPortMissing", rl, missing, info + lo, [{"node": node.name}], "8m", name=f"{role}",
                     # a node whose exporter reports nothing is TargetDown's business, not this rule's
                     extra_quiet=[[], elsewhere(missing, node.name)]),
                Case("NicPortFlapping", rl, flapping,
                     [(series(m.NIC_CARRIER_CHANGES, **port), "2x10")], [port], "6m", name=f"{role}",
                     extra_quiet=[elsewhere(flapping, node.name)]),
                Case("NicErrorCountersRising", rl, errors,
                     [(series(m.NIC_RX_ERRORS, **port), "7x20")], [port], "15m", name=f"{role}",
                     extra_quiet=[[(series(m.NIC_TX_ERRORS, **port), "0x20")], elsewhere(errors, node.name)]),
                Case("NicErrorCountersRising", rl, [(series(m.NIC_TX_ERRORS, **port), "0+5x20")],
                     [(series(m.NIC_TX_ERRORS, **port), "7x20")], [port], "15m", name=f"{role} transmit"),
            ]
    if rdma_node:
        ib = sorted({h for spec, _ in rdma_node.nics() if spec.link_type == "infiniband" for h in spec.hcas})
        roce = next(f"mlx5_{i}" for i in range(64) if f"mlx5_{i}" not in ib)  # an Ethernet port's HCA
        hca = {"node": rdma_node.name, "device": roce, "port": "1", **NODE_JOB}
        symbol = [(series(m.IB_SYMBOL_ERRORS, **hca), "0+3x20")]
        cases.append(Case("RdmaPortErrors", {}, symbol,
                          [(series(m.IB_SYMBOL_ERRORS, **hca), "4x20")], [hca], "15m",
                          # an InfiniBand HCA's errors are the InfiniBand rules' business; a node of no
                          # inventory, or of a profile without RoCE NICs, is not watched
                          extra_quiet=[[(series(m.IB_SYMBOL_ERRORS, **{**hca, "device": h}), "0+3x20")] for h in ib[:1]]
                          + [elsewhere(symbol, rdma_node.name)]
                          + [elsewhere(symbol, rdma_node.name, n.name) for n in cluster.nodes[:1] if not _roce(n)]))
    return cases + infiniband_cases(cluster)


def _roce(node) -> bool:
    return any(model.rdma and spec.link_type == "ethernet" for spec, model in node.nics())


def infiniband_cases(cluster: ClusterModel) -> list[Case]:
    cases: list[Case] = []
    seen = set()
    for node in cluster.nodes:
        hcas = {}
        for spec, _ in node.nics():
            if spec.link_type == "infiniband":
                hcas.setdefault(spec.role, []).extend(spec.hcas)
        if node.profile_name in seen or not hcas:
            continue
        seen.add(node.profile_name)
        for role, devices in hcas.items():
            rl = {"nic_role": role}
            port = {"node": node.name, "device": devices[0], "port": "1", **NODE_JOB}
            states = [(series(m.IB_STATE, node=node.name, device=d, port="1", **NODE_JOB), "4x10") for d in devices]

            def one(metric: str, values: str) -> list[tuple[str, str]]:
                return [(series(metric, **port), values)]

            away = node.name
            cases += [
                Case("InfinibandPortNotActive", rl, one(m.IB_STATE, "1x10"), one(m.IB_STATE, "4x10"), [port], "5m", "1",
                     name=role, extra_quiet=[one(m.IB_STATE, "2 2 4x10"),  # INIT for 2m while the SM configures it
                                             elsewhere(one(m.IB_STATE, "1x10"), away)]),
                Case("InfinibandPortMissing", rl, states[1:], states, [{"node": node.name}], "8m", name=role,
                     extra_quiet=[[], elsewhere(states[1:], away)]),
                Case("InfinibandLinkDowned", rl, one(m.IB_LINK_DOWNED, "0 0 1x10"), one(m.IB_LINK_DOWNED, "1x20"), [port], "5m", name=role,
                     extra_quiet=[elsewhere(one(m.IB_LINK_DOWNED, "0 0 1x10"), away)]),
                Case("InfinibandLinkErrors", rl, one(m.IB_SYMBOL_ERRORS, "0+3x20"), one(m.IB_SYMBOL_ERRORS, "4x20"), [port], "15m",
                     name=f"{role} symbol", extra_quiet=[one(m.IB_LINK_ERROR_RECOVERY, "2x20") + one(m.IB_RX_ERRORS, "0x20"),
                                                         elsewhere(one(m.IB_SYMBOL_ERRORS, "0+3x20"), away)]),
                Case("InfinibandLinkErrors", rl, one(m.IB_LINK_ERROR_RECOVERY, "0+1x20"), one(m.IB_LINK_ERROR_RECOVERY, "5x20"),
                     [port], "15m", name=f"{role} recovery"),
                Case("InfinibandLinkErrors", rl, one(m.IB_RX_ERRORS, "0+1x20"), one(m.IB_RX_ERRORS, "5x20"),
                     [port], "15m", name=f"{role} receive"),
            ]
    return cases


def storage_cases(cluster: ClusterModel) -> list[Case]:
    cases: list[Case] = []
    seen = set()
    for node in cluster.nodes:
        if node.profile_name in seen or not node.nvme:
            continue
        seen.add(node.profile_name)
        mounts = [d.mount for d in node.nvme]
        fs = {"node": node.name, "mountpoint": mounts[0], "device": "/dev/nvme0n1", "fstype": "xfs", **NODE_JOB}

        def disk(avail: int) -> list[tuple[str, str]]:
            return [(series(m.FS_AVAIL, **fs), f"{avail}x25"), (series(m.FS_SIZE, **fs), "100x25")]

        sizes = [(series(m.FS_SIZE, node=node.name, mountpoint=p, **NODE_JOB), "100x25") for p in mounts]
        root = [(series(m.FS_SIZE, node=node.name, mountpoint="/", **NODE_JOB), "100x25")]
        cases += [
            Case("NvmeCacheFilesystemAlmostFull", {}, disk(5), disk(20), [fs], "20m", extra_quiet=[elsewhere(disk(5), node.name)]),
            Case("NvmeCacheFilesystemFull", {}, disk(2), disk(5), [fs], "10m", extra_quiet=[elsewhere(disk(2), node.name)]),
            Case("NvmeCacheNotMounted", {}, sizes[:-1] + root, sizes + root, [{"node": node.name}], "20m",
                 extra_quiet=[elsewhere(sizes[:-1] + root, node.name)]),
        ]
    return cases


def service_cases(cluster: ClusterModel) -> list[Case]:
    """The Alluxio and Flyte alerts' cases, for the components the cluster enables (only those
    get their rule groups: forge.observability.rules.COMPONENT_GROUPS)."""
    enabled = cluster.component_settings
    return [c for c in _service_cases() if ("alluxio" if c.alert.startswith("Alluxio") else "flyte") in enabled]


def _service_cases() -> list[Case]:
    worker = {"namespace": "alluxio", "pod": "alluxio-worker-3", "job": "forge-alluxio-worker", "instance": "10.1.0.3:30000"}
    ksm = {"namespace": "alluxio", "pod": "alluxio-worker-4", "condition": "true", "job": "kube-state-metrics"}
    master = {"namespace": "alluxio", "pod": "alluxio-master-0", "job": "forge-alluxio-master"}

    def reads(hit_mb_s: float, miss_mb_s: float) -> list[tuple[str, str]]:
        per_min = lambda mb: f"0+{int(mb * 60e6)}x40"  # noqa: E731 - counters in bytes, 1m steps
        return [(series("Cluster_BytesReadLocal", **master), per_min(hit_mb_s)),
                (series(m.ALLUXIO_MISS_BYTES, **master), per_min(miss_mb_s))]

    def remote(mb_s: float) -> list[tuple[str, str]]:  # hits served by another worker count as hits
        return [(series("Cluster_BytesReadAlluxio", **master), f"0+{int(mb_s * 60e6)}x40")]

    propeller = {"namespace": "flyte", "pod": "flytepropeller-7d9f", "job": "forge-flyte-propeller", "instance": "10.2.0.1:10254"}
    admin = {**propeller, "pod": "flyteadmin-5c4b"}
    return [
        Case("AlluxioWorkerDown", {}, [(series("up", **worker), "0x10")], [(series("up", **worker), "1x10")],
             [worker], "10m", name="scrape"),
        Case("AlluxioWorkerDown", {}, [(series("kube_pod_status_ready", **ksm), "0x10")],
             [(series("kube_pod_status_ready", **ksm), "1x10")], [ksm], "10m", name="not-ready"),
        # 100 MB/s from cache, 300 MB/s from S3: 25 % hits on a busy cache.
        Case("AlluxioCacheHitRateCollapsed", {}, reads(100, 300), reads(300, 100) + remote(200), [{}], "35m",
             extra_quiet=[reads(1, 9)]),  # idle: 10 % hits on 10 MB/s is noise
        Case("FlytePropellerSystemErrors", {}, [(series(m.FLYTE_SYSTEM_ERRORS, **propeller), "0+2x25"),
                                                 (series(m.FLYTE_ABORT_ERRORS, **propeller), "1x25")],
             [(series(m.FLYTE_SYSTEM_ERRORS, **propeller), "9x25"), (series(m.FLYTE_ABORT_ERRORS, **propeller), "1x25")],
             [{"namespace": "flyte"}], "22m", name="system"),
        Case("FlytePropellerSystemErrors", {}, [(series(m.FLYTE_ABORT_ERRORS, **propeller), "0+1x25")],
             [(series(m.FLYTE_ABORT_ERRORS, **propeller), "3x25")], [{"namespace": "flyte"}], "22m", name="abort"),
        Case("FlytePropellerPanics", {}, [(series(m.FLYTE_PANICS, **propeller), "0 0 1x10")],
             [(series(m.FLYTE_PANICS, **propeller), "0x10")], [{"namespace": "flyte"}], "5m"),
        Case("FlytePropellerDown", {}, [(series("up", **propeller), "0x10")],
             [(series("up", **propeller), "1x10"), (series("up", **admin), "0x10")], [propeller], "10m"),
    ]


def platform_cases(cluster: ClusterModel) -> list[Case]:
    """issue 22 item 11: ExternalSecrets that cannot sync, workloads Kueue cannot admit."""
    es = {"namespace": "flyte", "name": "flyte-db", "job": "forge-external-secrets"}
    cases = [Case("ExternalSecretNotSynced", {}, [(series(m.ESO_CONDITION, **es, condition="Ready", status="False"), "1x15")],
                  [(series(m.ESO_CONDITION, **es, condition="Ready", status="True"), "1x15"),
                   (series(m.ESO_CONDITION, **es, condition="Ready", status="False"), "0x15")],
                  [{"namespace": "flyte", "name": "flyte-db"}], "12m",
                  extra_quiet=[[(series(m.ESO_CONDITION, **es, condition="Ready", status="False"), "0x3 1x9")]])]  # 9m: retrying
    node = cluster.gpu_nodes[0].name
    cases.append(Case("GpuDriverUpgradeInProgress", {}, upgrading(node, "drain-required"), upgrading(node, "upgrade-done"),
                      [{"node": node}], "5m", extra_quiet=[upgrading(node, "upgrade-failed"), upgrading(node, "upgrade-required")]))
    # issue 34: muted from the moment the driver's pods go (pod deletion, drain), not while the
    # cordoned node still runs jobs on its driver (cordon, the wait for jobs: up to a day).
    cases.append(Case("GpuDriverUpgradeInProgress", {}, upgrading(node, "pod-deletion-required"),
                      upgrading(node, "wait-for-jobs-required"), [{"node": node}], "5m", name="pod-deletion",
                      extra_quiet=[upgrading(node, "cordon-required")]))
    if "kueue" in cluster.component_settings:
        q = {"cluster_queue": "training", "job": "kueue-controller-manager-metrics-service"}
        cases.append(Case("KueueWorkloadsInadmissible", {}, [(series(m.KUEUE_PENDING, **q, status="inadmissible"), "2x20")],
                          [(series(m.KUEUE_PENDING, **q, status="inadmissible"), "0x20"),
                           (series(m.KUEUE_PENDING, **q, status="active"), "5x20")],  # waiting for quota is not inadmissible
                          [{"cluster_queue": "training"}], "17m", "2"))
    return cases


def cases_for(cluster: ClusterModel) -> list[Case]:
    from tests.observability.lifecycle_cases import lifecycle_cases  # it builds on this module's Case
    return (gpu_cases(cluster) + network_cases(cluster) + storage_cases(cluster) + service_cases(cluster) + platform_cases(cluster)
            + lifecycle_cases(cluster))


def promtool_tests(cluster: ClusterModel, cases: list[Case]) -> list[dict[str, Any]]:
    tests = []
    for case in cases:
        rule = find_rule(cluster, case.alert, case.rule_labels)
        expected = []
        for labels in case.labels:
            all_labels = {**labels, **rule["labels"]}
            expected.append({"exp_labels": all_labels,
                             "exp_annotations": {k: expand(v, all_labels, case.value) for k, v in rule["annotations"].items()}})

        def block(inputs: list[tuple[str, str]], exp: list[dict[str, Any]], what: str) -> dict[str, Any]:
            return {"name": f"{case.alert} {case.name} {case.rule_labels} {what}", "interval": case.interval,
                    "input_series": [{"series": s, "values": v} for s, v in inputs],
                    "alert_rule_test": [{"eval_time": case.eval_time, "alertname": case.alert, "exp_alerts": exp}]}

        tests.append(block(case.fire, expected, "fires"))
        for i, quiet in enumerate([case.quiet, *case.extra_quiet]):
            tests.append(block(quiet, [], f"stays quiet ({i})"))
    return tests


def write_rules(tmp_path, cluster: ClusterModel):
    path = tmp_path / f"rules-{cluster.name}.yaml"
    path.write_text(yaml.safe_dump({"groups": rule_groups(cluster)}, sort_keys=False))
    return path


@pytest.mark.parametrize("name", CLUSTERS)
def test_promtool_check_rules(name, fleets, promtool, tmp_path):
    path = write_rules(tmp_path, fleets[name])
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    count = sum(len(g["rules"]) for g in rule_groups(fleets[name]))
    assert f"SUCCESS: {count} rules found" in r.stdout


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_alert_fires_and_stays_quiet(name, fleets, promtool, tmp_path):
    cluster = fleets[name]
    rules = write_rules(tmp_path, cluster)
    test_file = tmp_path / f"tests-{name}.yaml"
    test_file.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                         # cases with their own step: tests/observability/test_lifecycle.py
                                         "tests": promtool_tests(cluster, [c for c in cases_for(cluster) if c.interval == "1m"])},
                                        sort_keys=False))
    r = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    assert "SUCCESS" in r.stdout


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_alert_rule_has_a_case(name, fleets):
    cluster = fleets[name]
    keys = [(c.alert, c.rule_labels) for c in cases_for(cluster)]
    missing = [(r["alert"], r["labels"]) for r in alert_rules(cluster)
               if not any(alert == r["alert"] and labels.items() <= r["labels"].items() for alert, labels in keys)]
    assert missing == []


def test_every_alert_has_severity_summary_and_runbook(fleets):
    for cluster in fleets.values():
        for rule in alert_rules(cluster):
            # info: only what inhibits others in Alertmanager, routed nowhere (forge.observability.alerting)
            allowed = ("info",) if rule["alert"] == "GpuDriverUpgradeInProgress" else ("warning", "critical")
            assert rule["labels"]["severity"] in allowed, rule["alert"]
            assert rule["annotations"]["summary"].strip() and len(rule["annotations"]["runbook"]) > 40, rule["alert"]


def test_every_gpu_alert_stays_quiet_on_a_node_in_a_driver_upgrade(clusters):
    for cluster in clusters.values():
        gpu = next(g for g in rule_groups(cluster) if g["name"] == "forge-gpu")["rules"]
        assert gpu and all(r["expr"].endswith(") unless on (node) forge:node_gpu_driver_upgrading") for r in gpu)
        record = next(g for g in rule_groups(cluster) if g["name"] == "forge-upgrades")["rules"][:1]
        assert record == [{"record": "forge:node_gpu_driver_upgrading", "expr": (
            'max by (node) (kube_node_labels{label_nvidia_com_gpu_driver_upgrade_state=~"drain-required|'
            'pod-deletion-required|pod-restart-required|uncordon-required|validation-required"})')}]
    # kube-state-metrics exports the upgrade-state label of each driver the cluster runs: the GPU
    # driver everywhere, the DOCA/OFED driver where the Network Operator runs it (the H200 fleet).
    assert not clusters["a100"].ofed_driver and clusters["h200"].ofed_driver
    assert generated_values("a100")["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[nvidia.com/gpu-driver-upgrade-state]"]
    assert generated_values("h200")["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "nodes=[nvidia.com/gpu-driver-upgrade-state,nvidia.com/ofed-driver-upgrade-state]"]


def test_xid_alerts_read_the_per_xid_count_which_the_exporter_is_told_to_export(clusters):
    for cluster in clusters.values():
        for name in ("GpuXidCriticalError", "GpuXidError"):
            assert f"{m.GPU_XID_COUNT}{{xid" in find_rule(cluster, name, {})["expr"]
    assert any(f == m.GPU_XID_COUNT for f, _, _ in m.DCGM_FIELDS)
    assert "DCGM_EXP_XID_ERRORS_COUNT, gauge," in m.dcgm_metrics_csv()


def test_kueue_metrics_are_scraped_and_external_secrets_too():
    from tests.helpers import generated
    for cluster in ("h200", "a100"):
        assert generated(f"overlays/{cluster}/kueue/values.yaml")["enablePrometheus"] is True
        monitor = generated(f"overlays/{cluster}/prometheus/podmonitor-forge-external-secrets.yaml")
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["external-secrets"]}
        assert monitor["spec"]["podMetricsEndpoints"][0]["targetPort"] == 8080


def generated_values(cluster: str) -> dict:
    from tests.helpers import generated
    return generated(f"overlays/{cluster}/prometheus/values.yaml")


def test_the_issue_asks_for_these_alerts_on_both_fleets(clusters):
    wanted = {"GpuXidCriticalError", "GpuXidError", "GpuDoubleBitEccError", "GpuRowRemapFailure", "GpuTemperatureHigh",
              "GpuTemperatureCritical", "GpuPowerOverLimit", "GpuFellOffBus", "GpuNvlinkErrors", "NicPortDown",
              "NicErrorCountersRising", "NvmeCacheFilesystemAlmostFull", "AlluxioWorkerDown",
              "AlluxioCacheHitRateCollapsed", "FlytePropellerSystemErrors"}
    fleets = [clusters["a100"], clusters["h200"]]  # the two on-premises fleets the issue names
    for cluster in fleets:
        assert wanted <= {r["alert"] for r in alert_rules(cluster)}, cluster.name
    # The cloud burst cluster (h200-burst) has no inventory NICs or NVMe caches to watch (EFA, no
    # Alluxio: docs/burst.md), but its GPUs get every GPU alert.
    burst = {r["alert"] for r in alert_rules(clusters["h200-burst"])}
    assert {a for a in wanted if a.startswith("Gpu")} | {"FlytePropellerSystemErrors"} <= burst
    assert not {"NicPortDown", "NicErrorCountersRising", "NvmeCacheFilesystemAlmostFull"} & burst
    # HBM temperature on both: against the catalogue's limit where NVIDIA publishes one (the A100-80GB),
    # else against the limit the GPU reports (the H200).
    assert GPU_MODELS["A100-80GB"].max_memory_temp_c is not None and GPU_MODELS["H200-141GB"].max_memory_temp_c is None
    for cluster in [*fleets, clusters["h200-burst"]]:
        hbm = [r for r in alert_rules(cluster) if r["alert"].startswith("GpuMemoryTemperature")]
        assert {r["alert"] for r in hbm} == {"GpuMemoryTemperatureHigh", "GpuMemoryTemperatureCritical"}, cluster.name
    reported = [r["expr"] for r in alert_rules(clusters["h200"]) if r["alert"].startswith("GpuMemoryTemperature")]
    assert all(m.GPU_MEMORY_MAX_TEMP in e for e in reported), reported
    # RDMA counters only where the inventory lists RDMA NICs: the H200 fleet's ConnectX-7/BlueField-3.
    assert "RdmaPortErrors" in {r["alert"] for r in alert_rules(clusters["h200"])}
    assert "RdmaPortErrors" not in {r["alert"] for r in alert_rules(clusters["a100"])}


def test_infiniband_alerts_only_on_infiniband_fleets(fleets):
    ib = {"InfinibandPortNotActive", "InfinibandPortMissing", "InfinibandLinkDowned", "InfinibandLinkErrors"}
    assert ib <= {r["alert"] for r in alert_rules(fleets["ib-small"])}
    for name in ("a100", "h200"):
        assert not ib & {r["alert"] for r in alert_rules(fleets[name])}, name
    # the fixture's Ethernet BlueField ports keep the RoCE rule
    assert "RdmaPortErrors" in {r["alert"] for r in alert_rules(fleets["ib-small"])}


def test_gpu_limits_come_from_the_hardware_table_and_differ_between_fleets(clusters):
    a100, h200 = GPU_MODELS["A100-80GB"], GPU_MODELS["H200-141GB"]
    assert (a100.max_temp_c, a100.max_power_w) != (h200.max_temp_c, h200.max_power_w)
    for name, model in (("a100", a100), ("h200", h200)):
        cluster = clusters[name]
        assert [g.key for g in cluster.gpu_models] == [model.key]
        crit = find_rule(cluster, "GpuTemperatureCritical", {"gpu_model": model.key})
        power = find_rule(cluster, "GpuPowerOverLimit", {"gpu_model": model.key})
        quiet = ") unless on (node) forge:node_gpu_driver_upgrading"  # every GPU alert (issue 22 item 11)
        assert crit["expr"].endswith(f'{{modelName="{model.nvml_name}"}}) >= {model.max_temp_c}{quiet}')
        assert power["expr"].endswith(f'{{modelName="{model.nvml_name}"}}) > {model.max_power_w}{quiet}')
        assert f"{model.max_temp_c} C" in crit["annotations"]["summary"]


def test_same_reading_different_verdict_per_fleet(clusters, promtool, tmp_path):
    """85 C is the A100's slowdown temperature but below the H200's: only the A100 fleet pages."""
    temp = GPU_MODELS["A100-80GB"].max_temp_c
    assert temp < GPU_MODELS["H200-141GB"].max_temp_c
    for name, fires in (("a100", True), ("h200", False)):
        cluster = clusters[name]
        node = cluster.gpu_nodes[0]
        labels = {"node": node.name, "gpu": "1", "modelName": node.gpu.nvml_name}
        case = Case("GpuTemperatureCritical", {"gpu_model": node.gpu.key},
                    [(series(m.GPU_TEMP, **labels, **DCGM_JOB), f"{temp}x10")], [], [labels] if fires else [], "5m")
        test = promtool_tests(cluster, [case])[0]
        rules = write_rules(tmp_path, cluster)
        path = tmp_path / f"verdict-{name}.yaml"
        path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [test]}))
        r = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def test_promtool_fails_a_wrong_expectation(clusters, promtool, tmp_path):
    """The harness can fail: a quiet input that claims the alert fires must make promtool exit non-zero."""
    cluster = clusters["h200"]
    case = gpu_cases(cluster)[0]
    wrong = Case(case.alert, case.rule_labels, case.quiet, [], case.labels, case.eval_time, case.value)
    rules = write_rules(tmp_path, cluster)
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m",
                                    "tests": promtool_tests(cluster, [wrong])[:1]}))
    r = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True)
    assert r.returncode != 0 and "GpuXidCriticalError" in r.stdout + r.stderr


def test_component_rule_groups_follow_the_enabled_components(fleets, clusters):
    """h200-burst runs no Alluxio (docs/burst.md): it gets no Alluxio rules, which would watch pods
    that never exist; a100 and h200 run it and get them. Flyte's follow Flyte the same way."""
    def groups(cluster: ClusterModel) -> set[str]:
        return {g["name"] for g in rule_groups(cluster)}

    burst = clusters["h200-burst"]
    assert "alluxio" not in burst.component_settings and "flyte" in burst.component_settings
    assert "forge-alluxio" not in groups(burst) and "forge-flyte" in groups(burst)
    assert not {r.get("alert", r.get("record")) for r in alert_rules(burst)} & {"AlluxioWorkerDown", "AlluxioCacheHitRateCollapsed"}
    for name in ("a100", "h200"):
        assert {"forge-alluxio", "forge-flyte"} <= groups(clusters[name]), name
    bare = fixture_model("no-fabric")  # a fixture fleet without Alluxio and Flyte
    assert not {"alluxio", "flyte"} & set(bare.component_settings)
    assert not {"forge-alluxio", "forge-flyte"} & groups(bare)
    shipped = generated("overlays/h200-burst/prometheus/prometheusrule-forge-fleet.yaml")
    assert "forge-alluxio" not in {g["name"] for g in shipped["spec"]["groups"]}
    assert "forge-alluxio" in {g["name"] for g in generated("overlays/a100/prometheus/prometheusrule-forge-fleet.yaml")["spec"]["groups"]}


def test_pod_monitors_follow_the_enabled_components_too():
    """Prometheus scrapes Alluxio only where Alluxio runs: no PodMonitor for pods that never exist."""
    from tests.helpers import REPO

    def monitors(cluster: str) -> set[str]:
        return {p.name for p in (REPO / f"overlays/{cluster}/prometheus").glob("podmonitor-*.yaml")}

    assert monitors("h200-burst") == {"podmonitor-forge-flyte-propeller.yaml", "podmonitor-forge-external-secrets.yaml"}
    assert {"podmonitor-forge-alluxio-master.yaml", "podmonitor-forge-alluxio-worker.yaml"} <= monitors("a100")


def test_adding_a_node_changes_no_alert_only_that_node_s_records():
    """Issue 24 wall 9: one added node gave ~40 changed lines of alert expressions that listed every
    node of its profile; the profile is now a join on forge:node_info, so only the new node's own
    recording rules appear."""
    from tests.helpers import edit, inventory_text, model

    text = inventory_text("h200")
    start = text.index("  - name: h200-gpu-18\n")
    block = text[start:text.index("\n\n", start) + 1]
    grown = edit(text, block, block + block.replace("h200-gpu-18", "h200-gpu-19"))
    before, after = rule_groups(model("h200")), rule_groups(model("h200", grown))
    assert [g["name"] for g in before] == [g["name"] for g in after]

    def alerts(groups):
        return [(g["name"], r) for g in groups for r in g["rules"] if "alert" in r]

    assert alerts(before) == alerts(after)
    old = [r for g in before for r in g["rules"] if "record" in r]
    new = [r for g in after for r in g["rules"] if "record" in r]
    added = [r for r in new if r not in old]
    assert [r for r in old if r not in new] == []
    assert [(r["record"], r["labels"]["node"]) for r in added] == [(m.NODE_INFO, "h200-gpu-19"), (m.NODE_GPUS_EXPECTED, "h200-gpu-19")]
    assert not any("h200-gpu-0" in r.get("expr", "") for g in after for r in g["rules"])

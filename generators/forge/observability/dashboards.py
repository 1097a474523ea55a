"""Grafana dashboards as ConfigMaps that kube-prometheus-stack's Grafana sidecar picks up.

The fleet overview shows GPU utilisation (MIG slices included), memory and temperature per node
and per rack, RDMA throughput (fleets with RDMA NICs) and Alluxio's cache hit rate (with Alluxio);
the queues dashboard Kueue's queues, the upgrades dashboard the GPU Operator's driver upgrades. Racks come from the inventory through the
`forge:node_info` recording rule (forge.observability.rules), joined on `node`.
"""
from __future__ import annotations

import json
from typing import Any

from forge.model.cluster import ClusterModel
from forge.observability import metrics as m

# kube-prometheus-stack's defaults for grafana.sidecar.dashboards.label / labelValue.
SIDECAR_LABEL = "grafana_dashboard"
SIDECAR_LABEL_VALUE = "1"
FLEET_OVERVIEW = "forge-fleet-overview"
QUEUES = "forge-queues"
UPGRADES = "forge-driver-upgrades"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RACKS = f'{m.NODE_INFO}{{{m.RACK_LABEL}=~"$rack"}}'
WIDTH = 24


def _by_rack(expr: str) -> str:
    """expr (per-GPU or per-port series with a `node` label) with the node's rack joined on."""
    return f"({expr}) * on ({m.NODE_LABEL}) group_left ({m.RACK_LABEL}) {RACKS}"


def _panel(kind: str, title: str, targets: list[tuple[str, str]], unit: str, w: int, h: int = 8,
           description: str = "", thresholds: list[tuple[str, float | None]] | None = None,
           max_value: float | None = None) -> dict[str, Any]:
    """One panel; its place on the grid is given by _grid, in the order the panels are listed."""
    steps = [{"color": color, "value": value} for color, value in (thresholds or [("green", None)])]
    defaults: dict[str, Any] = {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}}
    if max_value is not None:
        defaults["min"] = 0
        defaults["max"] = max_value
    panel: dict[str, Any] = {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(targets)],
    }
    if kind == "timeseries":
        panel["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
    return panel


def _grid(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Place panels left to right in rows of WIDTH, a row as tall as its tallest panel; number them.
    Panels a fleet has no hardware for are left out before, so no row keeps a hole."""
    x = y = row_height = 0
    for i, panel in enumerate(panels, start=1):
        w, h = panel["gridPos"]["w"], panel["gridPos"]["h"]
        if x + w > WIDTH:
            x, y, row_height = 0, y + row_height, 0
        panel["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
        panel["id"] = i
        x, row_height = x + w, max(row_height, h)
    return panels


def gpu_utilisation(cluster: ClusterModel) -> str:
    """Per-GPU utilisation in %; with MIG slices in use, per MIG instance too (the engine activity:
    DCGM does not report DCGM_FI_DEV_GPU_UTIL for a GPU in MIG mode)."""
    if len(cluster.mig_layouts_used) <= 1:  # only the layout that keeps MIG off
        return m.GPU_UTIL
    return f'({m.GPU_UTIL} or 100 * {m.GPU_ENGINE_ACTIVE}{{{m.MIG_INSTANCE_LABEL}!=""}})'


def _has(cluster: ClusterModel, component: str) -> bool:
    return component in cluster.component_settings


def _overview_panels(cluster: ClusterModel) -> list[dict[str, Any]]:
    # Colour thresholds at the lowest limits among the cluster's GPU models (hardware table).
    models = cluster.gpu_models
    slowdown = min((g.max_temp_c for g in models), default=85)
    util = gpu_utilisation(cluster)
    mem_used = f"{m.GPU_FB_USED}"
    mem_total = f"({m.GPU_FB_USED} + {m.GPU_FB_FREE})"
    rdma = f"rate({m.IB_RX_BYTES}[5m]) + rate({m.IB_TX_BYTES}[5m])"
    per_gpu_node = f"count by ({m.NODE_LABEL}, {m.DCGM_GPU_LABEL}) ({m.GPU_TEMP})"
    temp_steps = [("green", None), ("orange", slowdown - 5), ("red", slowdown)]
    alluxio = _has(cluster, "alluxio")
    stat = 24 // (4 if alluxio else 3)
    panels = [
        _panel("stat", "GPUs reporting", [(f"count({per_gpu_node})", "reporting"),
                                           (f"sum({m.NODE_GPUS_EXPECTED})", "in inventory")],
               "none", stat, 4, "GPUs DCGM reports against the inventory's count: a gap is a GPU off the bus."),
        _panel("stat", "Fleet GPU utilisation", [(f"avg({util})", "")], "percent", stat, 4, max_value=100,
               description="Whole GPUs and, where the fleet cuts GPUs into MIG slices, each slice's engine activity."),
        _panel("stat", "Fleet GPU memory used", [(f"sum({mem_used}) / sum({mem_total})", "")], "percentunit", stat, 4,
               max_value=1),
    ]
    if alluxio:
        panels.append(_panel("stat", "Alluxio cache hit rate (now)", [(m.ALLUXIO_HIT_RATIO, "")], "percentunit", stat, 4,
                             thresholds=[("red", None), ("orange", 0.5), ("green", 0.8)], max_value=1))
    panels += [
        _panel("timeseries", "GPU utilisation per node", [(f"avg by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(util)})",
                                                             "{{rack}} / {{node}}")], "percent", 12, max_value=100),
        _panel("timeseries", "GPU utilisation per rack", [(f"avg by ({m.RACK_LABEL}) ({_by_rack(util)})", "{{rack}}")],
               "percent", 12, max_value=100),
        _panel("timeseries", "GPU memory used per node",
               [(f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(mem_used)}) / "
                 f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(mem_total)})", "{{rack}} / {{node}}")],
               "percentunit", 12, max_value=1),
        _panel("timeseries", "GPU memory used per rack",
               [(f"sum by ({m.RACK_LABEL}) ({_by_rack(mem_used)}) / sum by ({m.RACK_LABEL}) ({_by_rack(mem_total)})", "{{rack}}")],
               "percentunit", 12, max_value=1),
        _panel("timeseries", "GPU temperature per node (hottest GPU)",
               [(f"max by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(m.GPU_TEMP)})", "{{rack}} / {{node}}")],
               "celsius", 12, thresholds=temp_steps,
               description=f"Orange/red at {slowdown - 5}/{slowdown} C: the lowest slowdown temperature of this cluster's GPU models."),
        _panel("timeseries", "GPU temperature per rack (hottest GPU)",
               [(f"max by ({m.RACK_LABEL}) ({_by_rack(m.GPU_TEMP)})", "{{rack}}")], "celsius", 12, thresholds=temp_steps),
    ]
    if cluster.rdma_resources:  # HCA port counters exist only where the inventory has RDMA NICs
        panels += [
            _panel("timeseries", "RDMA throughput per node (rx+tx)",
                   [(f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(rdma)})", "{{rack}} / {{node}}")], "Bps", 12,
                   description="HCA port counters (node-exporter infiniband collector): RDMA traffic included."),
            _panel("timeseries", "RDMA throughput per rack (rx+tx)",
                   [(f"sum by ({m.RACK_LABEL}) ({_by_rack(rdma)})", "{{rack}}")], "Bps", 12),
        ]
    if alluxio:
        panels += [
            _panel("timeseries", "Alluxio cache hit rate", [(m.ALLUXIO_HIT_RATIO, "hit rate")], "percentunit", 12,
                   max_value=1, description="Bytes served from Alluxio's cache (local, domain socket, remote worker) over all bytes read."),
            _panel("timeseries", "Alluxio read throughput", [(m.ALLUXIO_READ_BYTES, "read")], "Bps", 12),
        ]
    return _grid(panels)


def _dashboard(uid: str, title: str, cluster: ClusterModel, panels: list[dict[str, Any]],
               variables: list[dict[str, Any]] = ()) -> dict[str, Any]:
    return {
        "uid": f"{uid}-{cluster.name}",
        "title": f"{title} ({cluster.name})",
        "tags": ["forge", "gpu", cluster.name],
        "timezone": "utc",
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
             "current": {"text": "Prometheus", "value": "prometheus"}},
            *variables,
        ]},
        "panels": panels,
    }


def fleet_overview(cluster: ClusterModel) -> dict[str, Any]:
    racks = {"name": "rack", "label": "Rack", "type": "query", "datasource": DATASOURCE,
             "query": {"query": f"label_values({m.NODE_INFO}, {m.RACK_LABEL})", "refId": "racks"},
             "definition": f"label_values({m.NODE_INFO}, {m.RACK_LABEL})",
             "multi": True, "includeAll": True, "allValue": ".*", "refresh": 1, "sort": 1,
             "current": {"text": "All", "value": "$__all"}}
    return _dashboard(FLEET_OVERVIEW, "Fleet overview", cluster, _overview_panels(cluster), [racks])


def queues_dashboard(cluster: ClusterModel) -> dict[str, Any]:
    """Kueue's queues: what waits (and why it cannot be admitted), what runs, GPUs used against
    each queue's nominal quota (above 100 %: borrowed), evictions and the time to admission."""
    by_queue = "cluster_queue"
    gpu = 'resource=~"nvidia.com/.*"'
    panels = [
        _panel("timeseries", "Pending workloads per queue", [(f"sum by ({by_queue}, status) ({m.KUEUE_PENDING})",
                                                              "{{cluster_queue}} ({{status}})")], "none", 12,
               description="inadmissible: asks for a resource or a size no queue of the cohort can give (it waits for ever)."),
        _panel("timeseries", "Admitted workloads per queue", [(f"sum by ({by_queue}) ({m.KUEUE_ADMITTED_ACTIVE})",
                                                               "{{cluster_queue}}")], "none", 12),
        _panel("timeseries", "GPUs in use per queue and flavor",
               [(f"sum by ({by_queue}, flavor) ({m.KUEUE_RESOURCE_USAGE}{{{gpu}}})", "{{cluster_queue}} / {{flavor}}")],
               "none", 12),
        _panel("timeseries", "GPU use against nominal quota",
               [(f"sum by ({by_queue}) ({m.KUEUE_RESOURCE_USAGE}{{{gpu}}}) / sum by ({by_queue}) ({m.KUEUE_NOMINAL_QUOTA}{{{gpu}}})",
                 "{{cluster_queue}}")], "percentunit", 12, description="Above 100 %: the queue borrows from the cohort."),
        _panel("timeseries", "Evictions per queue and reason",
               [(f"sum by ({by_queue}, reason) (increase({m.KUEUE_EVICTED}[1h]))", "{{cluster_queue}} ({{reason}})")],
               "none", 12, description="Preempted: taken back by a higher priority or the owner's quota."),
        _panel("timeseries", "Time to admission (p90)",
               [(f"histogram_quantile(0.9, sum by ({by_queue}, le) (rate({m.KUEUE_ADMISSION_WAIT}[1h])))", "{{cluster_queue}}")],
               "s", 12),
    ]
    return _dashboard(QUEUES, "Queues", cluster, _grid(panels))


def upgrades_dashboard(cluster: ClusterModel) -> dict[str, Any]:
    """The GPU Operator's driver upgrades: nodes per upgrade state, and failures."""
    counts = [(m.GPU_UPGRADES[state], state.replace("_", " ")) for state in ("pending", "available", "in_progress", "done", "failed")]
    panels = [
        _panel("stat", "Driver upgrades failed", [(m.GPU_UPGRADES["failed"], "")], "none", 8, 4,
               thresholds=[("green", None), ("red", 1)]),
        _panel("stat", "Driver upgrades in progress", [(m.GPU_UPGRADES["in_progress"], "")], "none", 8, 4),
        _panel("stat", "Driver upgrades pending", [(m.GPU_UPGRADES["pending"], "")], "none", 8, 4),
        _panel("timeseries", "GPU nodes per driver upgrade state", counts, "none", 24,
               description="The GPU Operator's upgrade controller; a node long in progress holds every later one."),
    ]
    return _dashboard(UPGRADES, "Driver upgrades", cluster, _grid(panels))


def dashboards(cluster: ClusterModel) -> dict[str, dict[str, Any]]:
    """Every dashboard this cluster gets, by ConfigMap name: the queues' only with Kueue, the
    upgrades' only with GPU nodes."""
    out = {FLEET_OVERVIEW: fleet_overview(cluster)}
    if _has(cluster, "kueue"):
        out[QUEUES] = queues_dashboard(cluster)
    if cluster.gpu_nodes:
        out[UPGRADES] = upgrades_dashboard(cluster)
    return out


def dashboard_configmap(name: str, namespace: str, dashboard: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {SIDECAR_LABEL: SIDECAR_LABEL_VALUE}},
        "data": {f"{name}.json": json.dumps(dashboard, indent=2, sort_keys=True) + "\n"},
    }

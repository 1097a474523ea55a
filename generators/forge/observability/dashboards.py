"""Grafana dashboards as ConfigMaps that kube-prometheus-stack's Grafana sidecar picks up.

The fleet overview shows GPU utilisation, memory and temperature per node and per rack, RDMA
throughput and Alluxio's cache hit rate. Racks come from the inventory through the
`forge:node_info` recording rule (forge.observability.rules), joined on `node`.
"""
from __future__ import annotations

import json
from typing import Any

from forge.model import ClusterModel
from forge.observability import metrics as m

# kube-prometheus-stack's defaults for grafana.sidecar.dashboards.label / labelValue.
SIDECAR_LABEL = "grafana_dashboard"
SIDECAR_LABEL_VALUE = "1"
FLEET_OVERVIEW = "forge-fleet-overview"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RACKS = f'{m.NODE_INFO}{{{m.RACK_LABEL}=~"$rack"}}'
WIDTH = 24


def _by_rack(expr: str) -> str:
    """expr (per-GPU or per-port series with a `node` label) with the node's rack joined on."""
    return f"({expr}) * on ({m.NODE_LABEL}) group_left ({m.RACK_LABEL}) {RACKS}"


def _panel(kind: str, title: str, targets: list[tuple[str, str]], unit: str, x: int, y: int, w: int, h: int = 8,
           description: str = "", thresholds: list[tuple[str, float | None]] | None = None,
           max_value: float | None = None) -> dict[str, Any]:
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
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(targets)],
    }
    if kind == "timeseries":
        panel["options"] = {"legend": {"displayMode": "table", "placement": "right", "calcs": ["lastNotNull", "max"]},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
    return panel


def _overview_panels(cluster: ClusterModel) -> list[dict[str, Any]]:
    # Colour thresholds at the lowest limits among the cluster's GPU models (hardware table).
    models = cluster.gpu_models
    slowdown = min((g.max_temp_c for g in models), default=85)
    util = f"{m.GPU_UTIL}"
    mem_used = f"{m.GPU_FB_USED}"
    mem_total = f"({m.GPU_FB_USED} + {m.GPU_FB_FREE})"
    rdma = f"rate({m.IB_RX_BYTES}[5m]) + rate({m.IB_TX_BYTES}[5m])"
    per_gpu_node = f"count by ({m.NODE_LABEL}, {m.DCGM_GPU_LABEL}) ({m.GPU_TEMP})"
    temp_steps = [("green", None), ("orange", slowdown - 5), ("red", slowdown)]
    pct_steps = [("green", None)]
    panels = [
        _panel("stat", "GPUs reporting", [(f"count({per_gpu_node})", "reporting"),
                                           (f"sum({m.NODE_GPUS_EXPECTED})", "in inventory")],
               "none", 0, 0, 6, 4, "GPUs DCGM reports against the inventory's count: a gap is a GPU off the bus."),
        _panel("stat", "Fleet GPU utilisation", [(f"avg({util})", "")], "percent", 6, 0, 6, 4, max_value=100),
        _panel("stat", "Fleet GPU memory used", [(f"sum({mem_used}) / sum({mem_total})", "")], "percentunit", 12, 0, 6, 4,
               max_value=1),
        _panel("stat", "Alluxio cache hit rate (now)", [(m.ALLUXIO_HIT_RATIO, "")], "percentunit", 18, 0, 6, 4,
               thresholds=[("red", None), ("orange", 0.5), ("green", 0.8)], max_value=1),
        _panel("timeseries", "GPU utilisation per node", [(f"avg by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(util)})",
                                                             "{{rack}} / {{node}}")], "percent", 0, 4, 12, max_value=100),
        _panel("timeseries", "GPU utilisation per rack", [(f"avg by ({m.RACK_LABEL}) ({_by_rack(util)})", "{{rack}}")],
               "percent", 12, 4, 12, max_value=100),
        _panel("timeseries", "GPU memory used per node",
               [(f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(mem_used)}) / "
                 f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(mem_total)})", "{{rack}} / {{node}}")],
               "percentunit", 0, 12, 12, max_value=1, thresholds=pct_steps),
        _panel("timeseries", "GPU memory used per rack",
               [(f"sum by ({m.RACK_LABEL}) ({_by_rack(mem_used)}) / sum by ({m.RACK_LABEL}) ({_by_rack(mem_total)})", "{{rack}}")],
               "percentunit", 12, 12, 12, max_value=1),
        _panel("timeseries", "GPU temperature per node (hottest GPU)",
               [(f"max by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(m.GPU_TEMP)})", "{{rack}} / {{node}}")],
               "celsius", 0, 20, 12, thresholds=temp_steps,
               description=f"Orange/red at {slowdown - 5}/{slowdown} C: the lowest slowdown temperature of this cluster's GPU models."),
        _panel("timeseries", "GPU temperature per rack (hottest GPU)",
               [(f"max by ({m.RACK_LABEL}) ({_by_rack(m.GPU_TEMP)})", "{{rack}}")], "celsius", 12, 20, 12,
               thresholds=temp_steps),
        _panel("timeseries", "RDMA throughput per node (rx+tx)",
               [(f"sum by ({m.RACK_LABEL}, {m.NODE_LABEL}) ({_by_rack(rdma)})", "{{rack}} / {{node}}")], "Bps", 0, 28, 12,
               description="HCA port counters (node-exporter infiniband collector): RDMA traffic included."),
        _panel("timeseries", "RDMA throughput per rack (rx+tx)",
               [(f"sum by ({m.RACK_LABEL}) ({_by_rack(rdma)})", "{{rack}}")], "Bps", 12, 28, 12),
        _panel("timeseries", "Alluxio cache hit rate", [(m.ALLUXIO_HIT_RATIO, "hit rate")], "percentunit", 0, 36, 12,
               max_value=1, description="Bytes served from Alluxio's cache (local, domain socket, remote worker) over all bytes read."),
        _panel("timeseries", "Alluxio read throughput", [(m.ALLUXIO_READ_BYTES, "read")], "Bps", 12, 36, 12),
    ]
    for i, panel in enumerate(panels, start=1):
        panel["id"] = i
    return panels


def fleet_overview(cluster: ClusterModel) -> dict[str, Any]:
    return {
        "uid": f"{FLEET_OVERVIEW}-{cluster.name}",
        "title": f"Fleet overview ({cluster.name})",
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
            {"name": "rack", "label": "Rack", "type": "query", "datasource": DATASOURCE,
             "query": {"query": f"label_values({m.NODE_INFO}, {m.RACK_LABEL})", "refId": "racks"},
             "definition": f"label_values({m.NODE_INFO}, {m.RACK_LABEL})",
             "multi": True, "includeAll": True, "allValue": ".*", "refresh": 1, "sort": 1,
             "current": {"text": "All", "value": "$__all"}},
        ]},
        "panels": _overview_panels(cluster),
    }


def dashboard_configmap(name: str, namespace: str, dashboard: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {SIDECAR_LABEL: SIDECAR_LABEL_VALUE}},
        "data": {f"{name}.json": json.dumps(dashboard, indent=2, sort_keys=True) + "\n"},
    }

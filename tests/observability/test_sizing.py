"""Sizing formulas (forge.observability.sizing) on both fleets, and how they scale."""
from __future__ import annotations

import dataclasses
import math

import pytest
import yaml

from forge.components.loki import Loki
from forge.components.prometheus import Prometheus
from forge.errors import ForgeError
from forge.observability import sizing
from forge.observability.sizing import loki_layout, prometheus_size
from tests.helpers import REPO


def overlay_values(cluster: str, component: str) -> dict:
    return yaml.safe_load((REPO / "overlays" / cluster / component / "values.yaml").read_text())


def test_series_per_node_by_hand_from_the_profile(clusters):
    # An H200 node: 192 threads, 8 ConnectX-7 + 2 BlueField-3 ports (all RDMA), 4 NVMe drives.
    node = next(n for n in clusters["h200"].nodes if n.profile_name == "sr680a-h200")
    interfaces = sum(len(spec.interfaces) for spec, _ in node.nics())
    assert (node.profile.cpu_threads, interfaces, len(node.profile.nvme)) == (192, 10, 4)
    assert sizing.series_of(node) == 800 + 1_500 + 18 * 192 + 40 * 10 + 30 * 10 + 30 * 4 == 6_576
    # node-exporter alone on it: its base and CPU threads are about 4,000 series, not the 1,000 once assumed.
    assert 4_000 <= 800 + 18 * 192 <= 4_500
    # More threads, interfaces, RDMA ports or drives: more series.
    ref = sizing.node_series(cpu_threads=64, interfaces=2, rdma_ports=0, nvme=1)
    for key in ("cpu_threads", "interfaces", "rdma_ports", "nvme"):
        grown = {"cpu_threads": 64, "interfaces": 2, "rdma_ports": 0, "nvme": 1}
        grown[key] += 1
        assert sizing.node_series(**grown) > ref, key


def test_prometheus_size_by_hand_for_a100(clusters):
    # 3 control-plane nodes (32 threads, 2 ports) + 10 GPU nodes (96 threads), 80 GPUs, 30 s, 15 days.
    node_series = sum(sizing.series_of(n) for n in clusters["a100"].nodes)
    assert node_series == 3 * 2_876 + 10 * 4_168 == 50_308
    size = prometheus_size(node_series=node_series, gpus=80, scrape_interval_s=30, retention_days=15)
    per_gpu = sizing.SERIES_PER_GPU
    assert per_gpu == 56  # 28 DCGM fields (the driver-version label is no series) x 2
    samples = (60_000 + 50_308) / 30 + per_gpu * 80 / 15
    assert size.samples_per_second == round(samples, 1) == 3975.6
    gib = samples * 15 * 86_400 * 2 * 1.5 / 2**30  # 14.4 GiB
    assert size.volume_gib == 15 == 5 * math.ceil(gib / 5)
    assert size.retention_size_gb == 12  # 85 % of the volume
    assert size.active_series == 60_000 + 50_308 + 4_480
    assert size.memory_gib == 2  # 114,788 series x 8 KiB = 0.87 GiB, floor of 2


def test_fleets_get_their_own_prometheus_size(clusters):
    a100 = overlay_values("a100", "prometheus")["prometheus"]["prometheusSpec"]
    h200 = overlay_values("h200", "prometheus")["prometheus"]["prometheusSpec"]
    # a100: 15 days of 13 nodes/80 GPUs; h200: 30 days of 21 nodes/144 GPUs (inventory settings).
    assert (a100["retention"], a100["retentionSize"]) == ("15d", "12GB")
    assert a100["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "15Gi"
    assert (h200["retention"], h200["retentionSize"]) == ("30d", "42GB")
    assert h200["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "50Gi"
    for cluster, spec in (("a100", a100), ("h200", h200)):
        c = clusters[cluster]
        s = Prometheus().settings(c)
        want = prometheus_size(node_series=sum(sizing.series_of(n) for n in c.nodes), gpus=c.gpu_count, scrape_interval_s=s.scrape_interval_seconds,
                               retention_days=s.retention_days)
        assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == f"{want.volume_gib}Gi"
        assert spec["scrapeInterval"] == f"{s.scrape_interval_seconds}s"
        assert spec["externalLabels"] == {"cluster": cluster}


def test_prometheus_size_grows_with_gpus_nodes_retention_and_shorter_scrapes():
    base = dict(node_series=250_000, gpus=800, scrape_interval_s=30, retention_days=30)
    ref = prometheus_size(**base).volume_gib
    assert ref == 100  # (60,000 + 250,000) / 30 + 44,800 / 15 = 13,320 samples/s -> 96.5 GiB
    for key, value in (("node_series", 500_000), ("gpus", 1600), ("retention_days", 60), ("scrape_interval_s", 15)):
        assert prometheus_size(**{**base, key: value}).volume_gib > ref, key
    big = prometheus_size(node_series=250_000, gpus=800, scrape_interval_s=30, retention_days=30)
    assert big.memory_gib == math.ceil(big.active_series * 8 / 2**20) == 3


def test_loki_layout_by_volume():
    assert loki_layout(10).mode == "SingleBinary" and loki_layout(10).replicas == {"singleBinary": 1}
    assert loki_layout(10).replication_factor == 1
    mid = loki_layout(400)
    assert mid.mode == "SimpleScalable" and mid.replicas == {"write": 8, "read": 4, "backend": 2}
    assert mid.replication_factor == 3
    big = loki_layout(3000)
    assert big.mode == "Distributed"
    assert big.replicas["ingester"] == 30 and big.replicas["compactor"] == 1 and big.replicas["distributor"] == 12


def test_fleets_get_their_loki_layout(clusters):
    # a100: 10 GPU nodes x 4 + 3 others x 1 = 43 GB/day; h200: 18 x 4 + 3 = 75 GB/day.
    assert sizing.loki_daily_gb(gpu_nodes=10, other_nodes=3) == 43
    assert sizing.loki_daily_gb(gpu_nodes=18, other_nodes=3) == 75
    for name, writers in (("a100", 3), ("h200", 3)):
        v = overlay_values(name, "loki")
        assert v["deploymentMode"] == "SimpleScalable"
        assert (v["write"]["replicas"], v["read"]["replicas"], v["backend"]["replicas"]) == (writers, 2, 2)
        assert v["singleBinary"]["replicas"] == 0 and v["ingester"]["replicas"] == 0
        assert v["loki"]["commonConfig"]["replication_factor"] == 3


def test_loki_layout_that_does_not_fit_the_system_nodes_is_an_error():
    from forge.errors import InventoryError
    from forge.fleet import load_plan_text
    from tests.helpers import inventory_text

    text = inventory_text("a100").replace("  loki:\n", "  loki:\n    daily_log_gb: 400.0\n", 1)
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/a100/inventory.yaml")
    line = text[:text.index("  loki:\n")].count("\n") + 1
    assert [str(p) for p in err.value.problems] == [
        f"clusters/a100/inventory.yaml:{line}: components.loki: the SimpleScalable layout for 400 GB/day of logs needs "
        "8 write and 4 read replicas, one per node, but the cluster has 3 control-plane nodes; add control-plane nodes or set "
        "daily_log_gb to the measured volume"]

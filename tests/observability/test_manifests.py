"""What the observability components emit: dashboards, the log shipper, values against the charts,
custom resources against the CRDs, no credentials anywhere, and inventory settings errors."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from forge.argocd.config import credential_keys, is_argocd_config
from forge.components import COMPONENTS
from forge.components.alloy import Alloy
from forge.components.gpu_operator import GpuOperator
from forge.components.loki import Loki
from forge.components.prometheus import CRDS_ONLY_OFF, Prometheus, PrometheusCrds
from forge.errors import InventoryError
from forge.fleet import load_plan_text
from forge.observability import metrics as m
from forge.observability.dashboards import SIDECAR_LABEL, dashboards
from forge.observability.rules import rule_groups
from forge.render.overlays import render_all
from forge.validate.crd import CrdSchemas
from forge.validate.kube import KubeSchemas
from forge.validate.values import check_values, coalesce
from tests.helpers import REPO, without_mig_shares

CLUSTERS = ["a100", "h200"]
KPS = "kube-prometheus-stack-88.5.3"


def component(name: str):
    return next(c for c in COMPONENTS if c.name == name)


# ---- dashboards ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CLUSTERS)
def test_fleet_dashboard_configmap_is_valid_json_with_the_named_panels(name, clusters):
    cm = next(o for o in Prometheus().manifests(clusters[name]) if o["kind"] == "ConfigMap")
    assert cm["metadata"]["labels"] == {SIDECAR_LABEL: "1"} and cm["metadata"]["namespace"] == "monitoring"
    (key, text), = cm["data"].items()
    assert key.endswith(".json")
    dash = json.loads(text)
    titles = [p["title"] for p in dash["panels"]]
    for wanted in ("GPU utilisation per node", "GPU utilisation per rack", "GPU memory used per node",
                   "GPU memory used per rack", "GPU temperature per node (hottest GPU)",
                   "GPU temperature per rack (hottest GPU)", "Alluxio cache hit rate"):
        assert wanted in titles
    assert len(set(titles)) == len(titles) and len({p["id"] for p in dash["panels"]}) == len(titles)
    assert dash["uid"] == f"forge-fleet-overview-{name}"
    for panel in dash["panels"]:
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"])
        if "rack" in panel["title"] and "per" in panel["title"]:
            assert all(f"group_left (rack) {m.NODE_INFO}" in t["expr"] for t in panel["targets"])
    # Temperature colours at the fleet's own GPU limit (hardware table).
    temp = next(p for p in dash["panels"] if p["title"].startswith("GPU temperature per node"))
    limit = clusters[name].gpu_models[0].max_temp_c
    assert temp["fieldConfig"]["defaults"]["thresholds"]["steps"][-1]["value"] == limit


def boards(cluster) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: json.loads(next(iter(o["data"].values())))
            for o in Prometheus().manifests(cluster) if o["kind"] == "ConfigMap"}


def test_panels_only_for_hardware_the_fleet_has(clusters):
    rdma = {"RDMA throughput per node (rx+tx)", "RDMA throughput per rack (rx+tx)"}
    titles = {name: {p["title"] for p in boards(clusters[name])["forge-fleet-overview"]["panels"]} for name in CLUSTERS}
    assert rdma <= titles["h200"]
    assert not rdma & titles["a100"]  # the A100s' NICs do no RDMA: no HCA counters to show


def test_panels_tile_the_grid_without_overlap(clusters):
    for cluster in clusters.values():
        for board in boards(cluster).values():
            cells = set()
            for p in board["panels"]:
                g = p["gridPos"]
                assert g["x"] + g["w"] <= 24
                here = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
                assert not cells & here, p["title"]
                cells |= here


def test_gpu_utilisation_counts_mig_slices_where_gpus_are_cut(clusters):
    from forge.observability.dashboards import gpu_utilisation
    h200 = gpu_utilisation(clusters["h200"])
    assert f'{m.GPU_ENGINE_ACTIVE}{{{m.MIG_INSTANCE_LABEL}!=""}}' in h200 and m.GPU_UTIL in h200
    text = without_mig_shares((REPO / "clusters/h200/inventory.yaml").read_text()).replace("    mig_layout: all-1g\n", "")
    no_mig = load_plan_text(text, "clusters/h200/inventory.yaml").cluster
    assert gpu_utilisation(no_mig) == m.GPU_UTIL


def test_queue_and_upgrade_dashboards(clusters):
    for cluster in clusters.values():
        got = boards(cluster)
        assert set(got) == {"forge-fleet-overview", "forge-queues", "forge-driver-upgrades"}
        queue_exprs = " ".join(t["expr"] for p in got["forge-queues"]["panels"] for t in p["targets"])
        for metric in (m.KUEUE_PENDING, m.KUEUE_ADMITTED_ACTIVE, m.KUEUE_RESOURCE_USAGE, m.KUEUE_NOMINAL_QUOTA):
            assert metric in queue_exprs
        upgrade_exprs = " ".join(t["expr"] for p in got["forge-driver-upgrades"]["panels"] for t in p["targets"])
        assert all(metric in upgrade_exprs for metric in m.GPU_UPGRADES.values())


def test_every_dashboard_expression_parses(clusters, promtool, tmp_path):
    # promtool checks PromQL inside rule files: each panel's query becomes a recording rule.
    exprs = sorted({t["expr"].replace("$rack", ".*") for c in clusters.values() for b in boards(c).values()
                    for p in b["panels"] for t in p["targets"]})
    rules = {"groups": [{"name": "dashboards", "rules": [{"record": f"forge:dashboard_{i}", "expr": e}
                                                          for i, e in enumerate(exprs)]}]}
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    proc = __import__("subprocess").run([promtool, "check", "rules", str(tmp_path / "rules.yaml")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_metric_the_rules_and_dashboard_read_from_dcgm_is_exported(clusters):
    exported = {f for f, kind, _ in m.DCGM_FIELDS if kind != "label"}
    for cluster in clusters.values():
        text = json.dumps(rule_groups(cluster)) + json.dumps(dashboards(cluster))
        used = set(re.findall(r"DCGM_FI_[A-Z0-9_]+", text))
        assert used and used <= exported, used - exported
    gpu_values = GpuOperator().values(clusters["h200"])["dcgmExporter"]
    csv = gpu_values["config"]["data"]
    assert gpu_values["config"]["name"] == m.DCGM_CONFIG_NAME and gpu_values["config"]["create"] is True
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter," in csv and "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, counter," in csv
    assert gpu_values["serviceMonitor"]["relabelings"] == [m.NODE_RELABELING]


# ---- log shipper --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CLUSTERS)
def test_alloy_runs_on_every_node_and_labels_cluster_node_and_rack(name, clusters):
    cluster = clusters[name]
    objs = {o["kind"]: o for o in Alloy().manifests(cluster)}
    pod = objs["DaemonSet"]["spec"]["template"]["spec"]
    assert pod["tolerations"] == cluster.all_node_tolerations
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "nodeSelector" not in pod and "affinity" not in pod
    assert re.fullmatch(r"docker\.io/grafana/alloy:v\d+\.\d+\.\d+", pod["containers"][0]["image"])
    config = objs["ConfigMap"]["data"]["config.alloy"]
    assert f'external_labels = {{cluster = "{name}"}}' in config
    assert 'target_label = "node"' in config and 'sys.env("NODE_NAME")' in config
    assert 'url = "http://loki-gateway.loki.svc.cluster.local/loki/api/v1/push"' in config
    # One rack rule per inventory rack, listing exactly that rack's nodes.
    rules = re.findall(r'regex = "([^"]+)"\n    target_label = "rack"\n    replacement = "([^"]+)"', config)
    racks: dict[str, set[str]] = {}
    for node in cluster.nodes:
        racks.setdefault(node.rack, set()).add(node.name)
    assert {rack: set(nodes.split("|")) for nodes, rack in rules} == racks
    assert config.count("{") == config.count("}")


# ---- values against the pinned charts (FORGE_UPSTREAM) ------------------------------------------

@pytest.mark.parametrize("name", CLUSTERS)
@pytest.mark.parametrize("comp,chart_dir", [("prometheus", KPS), ("prometheus-crds", KPS), ("loki", "loki-7.3.0")])
def test_values_match_the_chart(name, comp, chart_dir, clusters, upstream):
    c = component(comp)
    assert check_values(c.values(clusters[name]), upstream / chart_dir, c.declared_values) == []


@pytest.mark.parametrize("name", CLUSTERS)
def test_dcgm_exporter_values_match_the_gpu_operator_chart(name, clusters, upstream):
    ours = {"dcgmExporter": GpuOperator().values(clusters[name])["dcgmExporter"]}
    assert check_values(ours, upstream / "gpu-operator-v26.7.0", GpuOperator.declared_values) == []


def test_values_check_catches_a_misplaced_key(clusters, upstream):
    values = Loki().values(clusters["a100"])
    values["loki"]["storage"]["s3"]["endpont"] = "x"  # misspelt
    problems = check_values(values, upstream / "loki-7.3.0", Loki.declared_values)
    assert any(path == "loki.storage.s3.endpont" and "did you mean 'endpoint'" in why for path, why in problems)


def test_crds_only_release_switches_off_everything_else(upstream):
    defaults = yaml.safe_load((upstream / KPS / "values.yaml").read_text())
    enabled = {k for k, v in defaults.items() if isinstance(v, dict) and v.get("enabled") is True} - {"crds"}
    assert enabled <= set(CRDS_ONLY_OFF)
    assert PrometheusCrds().values(None)["defaultRules"] == {"create": False}


def test_prometheus_selects_from_every_namespace_and_release(clusters, upstream):
    defaults = yaml.safe_load((upstream / KPS / "values.yaml").read_text())
    spec = Prometheus().values(clusters["a100"])["prometheus"]["prometheusSpec"]
    nil_switches = {k for k in defaults["prometheus"]["prometheusSpec"] if k.endswith("SelectorNilUsesHelmValues")}
    assert nil_switches and all(spec[k] is False for k in nil_switches)


# ---- custom resources against CRDs; plain objects against Kubernetes ----------------------------

@pytest.fixture(scope="module")
def crds(upstream) -> CrdSchemas:
    schemas = CrdSchemas()
    assert schemas.add_dir(upstream / KPS / "crds") >= 10
    return schemas


@pytest.mark.parametrize("name", CLUSTERS)
def test_custom_resources_match_their_crds(name, clusters, crds):
    objs = Prometheus().manifests(clusters[name]) + Alloy().manifests(clusters[name])
    checked = [o for o in objs if o["apiVersion"].startswith("monitoring.coreos.com/")]
    assert {o["kind"] for o in checked} == {"PrometheusRule", "PodMonitor"}
    for obj in checked:
        assert crds.validate(obj) == [], obj["metadata"]["name"]


def test_crd_check_catches_a_bad_rule(clusters, crds):
    rule = Prometheus().manifests(clusters["a100"])[0]
    rule["spec"]["groups"][1]["rules"][0]["severity"] = "critical"  # belongs under labels
    assert any("severity" in path for path, _ in crds.validate(rule))


@pytest.mark.parametrize("name", CLUSTERS)
def test_plain_objects_match_kubernetes_schemas(name, clusters):
    kube = KubeSchemas(clusters[name].kubernetes_version)
    objs = [o for o in Alloy().manifests(clusters[name]) + Prometheus().manifests(clusters[name])
            if "monitoring.coreos.com" not in o["apiVersion"]]
    assert {o["kind"] for o in objs} >= {"DaemonSet", "ConfigMap", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    for obj in objs:
        assert kube.validate(obj) == [], obj["kind"]


# ---- no credentials -----------------------------------------------------------------------------

# Default or sample passwords of the charts involved (kube-prometheus-stack's old Grafana default,
# Loki's MinIO subchart, sample values) and the obvious ones.
KNOWN_DEFAULTS = ("prom-operator", "supersecretpassword", "strongpassword", "changeme", "admin123", "test-password")
CREDENTIAL_KEY = re.compile(r"(?i)^(.*password|.*secret_?access_?key|access_?key_?id|.*token|rootUser)$")
# An environment variable Loki expands at start-up, or an ExternalSecret template taking one
# property of the remote secret (the value is filled in by External Secrets in the cluster).
REFERENCE = re.compile(r'^(\$\{[A-Z_][A-Z0-9_]*\}|\{\{ index \. "[A-Za-z0-9_.-]+" \}\})$')


def credential_problems(docs: list[Any]) -> list[str]:
    out: list[str] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("kind") == "Secret" and is_argocd_config(node):
                # an Argo CD repository entry: where and what only (forge.argocd.config)
                out.extend(f"{path}.stringData.{key}: credential in a repository Secret" for key in credential_keys(node))
            elif node.get("kind") == "Secret" and (node.get("data") or node.get("stringData")):
                out.append(f"{path}: Secret with data")
            for key, value in node.items():
                here = f"{path}.{key}"
                if isinstance(value, str) and CREDENTIAL_KEY.match(str(key)) and value and not REFERENCE.match(value):
                    out.append(f"{here}: literal credential")
                walk(value, here)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")
        elif isinstance(node, str):
            out.extend(f"{path}: contains default password '{d}'" for d in KNOWN_DEFAULTS if d in node.lower())

    for i, doc in enumerate(docs):
        walk(doc, f"doc{i}")
    return out


def test_no_rendered_object_or_values_file_carries_a_password(tmp_path):
    render_all(REPO, out=tmp_path / "rendered")
    files = sorted((tmp_path / "rendered").rglob("*.yaml")) + sorted((REPO / "overlays").rglob("values.yaml"))
    assert len(files) >= 2 * 7 + 2 * 5
    problems = [f"{f.name}: {p}" for f in files for p in credential_problems(list(yaml.safe_load_all(f.read_text())))]
    assert problems == []


def test_credential_scan_catches_planted_passwords():
    planted = [{"grafana": {"adminPassword": "hunter2"}},
               {"kind": "Secret", "stringData": {"x": "y"}},
               {"kind": "Secret", "metadata": {"name": "r", "labels": {"app.kubernetes.io/part-of": "argocd",
                                                                       "argocd.argoproj.io/secret-type": "repository"}},
                "stringData": {"url": "https://example.com/charts", "password": "x"}},
               {"loki": {"storage": {"s3": {"secretAccessKey": "AKIA-literal"}}}},
               {"note": "login with prom-operator"}]
    assert len(credential_problems(planted)) == 6  # the repository Secret's password: as both
    assert credential_problems([{"s3": {"secretAccessKey": "${AWS_SECRET_ACCESS_KEY}"}}]) == []


@pytest.mark.parametrize("name", CLUSTERS)
def test_grafana_admin_only_from_an_existing_secret(name, clusters, upstream):
    ours = Prometheus().values(clusters[name])
    assert ours["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    # What the chart's templates see: defaults merged with ours (Helm's coalesce).
    defaults = yaml.safe_load((upstream / KPS / "values.yaml").read_text())
    grafana_defaults = yaml.safe_load((upstream / KPS / "subcharts" / "grafana" / "values.yaml").read_text())
    merged = coalesce(coalesce(grafana_defaults, defaults["grafana"]), ours["grafana"])
    assert "adminPassword" not in merged and merged["admin"]["existingSecret"] == "grafana-admin"
    assert credential_problems([coalesce(defaults, ours)]) == []


def test_loki_reads_s3_credentials_from_the_inventory_secret(clusters):
    for cluster in clusters.values():
        v = Loki().values(cluster)
        assert v["global"]["extraEnvFrom"] == [{"secretRef": {"name": cluster.settings.s3.credentials_secret}}]
        assert "-config.expand-env=true" in v["global"]["extraArgs"]
        assert v["loki"]["storage"]["bucketNames"]["chunks"] == cluster.settings.s3.buckets["loki"]
        assert v["loki"]["limits_config"]["retention_period"] == f"{Loki().settings(cluster).retention_days * 24}h"
        assert v["loki"]["compactor"]["retention_enabled"] is True


# ---- inventory settings -------------------------------------------------------------------------

def _inventory_with(block: str) -> str:
    text = (REPO / "clusters" / "a100" / "inventory.yaml").read_text()
    head, _, _ = text.partition("\ncomponents:\n")
    return head + "\ncomponents:\n" + block


def test_bad_prometheus_settings_are_reported_with_file_and_line():
    text = _inventory_with("  prometheus:\n    retention_days: 0\n    grafana_admin_pasword: x\n")
    line = text.splitlines().index("    retention_days: 0") + 1
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/a100/inventory.yaml")
    lines = str(err.value).splitlines()
    assert any(l.startswith(f"clusters/a100/inventory.yaml:{line}: components.prometheus.retention_days:")
               and "greater than or equal to 1" in l for l in lines), lines
    assert any(f"clusters/a100/inventory.yaml:{line + 1}: components.prometheus.grafana_admin_pasword:" in l for l in lines), lines


def test_bad_loki_settings_are_reported_with_file_and_line():
    text = _inventory_with("  loki:\n    retention_days: 30\n    daily_log_gb: -5.0\n")
    line = text.splitlines().index("    daily_log_gb: -5.0") + 1
    with pytest.raises(InventoryError) as err:
        load_plan_text(text, "clusters/a100/inventory.yaml")
    assert f"clusters/a100/inventory.yaml:{line}: components.loki.daily_log_gb:" in str(err.value)
    assert "greater than 0" in str(err.value)

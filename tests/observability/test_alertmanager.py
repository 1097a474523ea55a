"""issue 22 item 12 (and 10's dead-man's switch): Alertmanager's route tree, inhibitions and
receivers generated from the inventory, checked by the real amtool (check-config, routes test);
only the receivers' keys come from the secret store; every alert links its runbook."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from forge.components.prometheus import Prometheus
from tests.helpers import edit, generated, inventory_file, inventory_text, line_of, model, only_problem, problems_of

CLUSTERS = ["h200", "a100"]


# What External Secrets puts in place of each receiver's key (the secret store's values).
KEYS = {"critical": "pd-routing-key-0123", "warning": "https://hooks.slack.com/services/T0/B0/x", "heartbeat": "genie-key-0123"}


def template(cluster: str) -> str:
    es = generated(f"overlays/{cluster}/prometheus/externalsecret-alertmanager-config.yaml")
    return es["spec"]["target"]["template"]["data"]["alertmanager.yaml"]


def config(cluster: str) -> dict:
    """The configuration as Alertmanager reads it once External Secrets filled in the keys."""
    text = template(cluster)
    for slot, value in KEYS.items():
        text = text.replace(f'{{{{ index . "{slot}" }}}}', value)
    assert "{{" not in text  # nothing else for ESO's template engine to evaluate
    return yaml.safe_load(text)


def write(tmp_path, cfg: dict):
    path = tmp_path / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def route(amtool: str, path, **labels: str) -> str:
    r = subprocess.run([amtool, "config", "routes", "test", f"--config.file={path}", *(f"{k}={v}" for k, v in labels.items())],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_amtool_accepts_the_generated_configuration(cluster, amtool, tmp_path):
    r = subprocess.run([amtool, "check-config", str(write(tmp_path, config(cluster)))], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout and "2 inhibit rules" in r.stdout and "4 receivers" in r.stdout


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_routes_watchdog_outside_the_cluster_critical_to_the_pager_the_rest_to_chat(cluster, amtool, tmp_path):
    path = write(tmp_path, config(cluster))
    assert route(amtool, path, alertname="Watchdog", severity="none") == "heartbeat"
    assert route(amtool, path, alertname="GpuFellOffBus", severity="critical", node="n1") == "critical"
    assert route(amtool, path, alertname="NicPortFlapping", severity="warning", node="n1") == "warning"
    assert route(amtool, path, alertname="GpuDriverUpgradeInProgress", severity="info", node="n1") == "null"
    assert route(amtool, path, alertname="KubePodCrashLooping") == "warning"  # the chart's alerts too


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_heartbeat_repeats_every_minute_and_the_receivers_get_their_keys_from_the_store(cluster):
    cfg = config(cluster)
    watchdog = cfg["route"]["routes"][0]
    assert (watchdog["receiver"], watchdog["repeat_interval"], watchdog["group_interval"]) == ("heartbeat", "1m", "1m")
    by_name = {r["name"]: r for r in cfg["receivers"]}
    assert by_name["critical"]["pagerduty_configs"][0]["routing_key"] == KEYS["critical"]
    assert by_name["warning"]["slack_configs"][0] == {"api_url": KEYS["warning"], "channel": f"#gpu-fleet-{cluster}",
                                                       "send_resolved": True}
    hb = by_name["heartbeat"]["webhook_configs"][0]
    assert hb["url"] == f"https://api.opsgenie.com/v2/heartbeats/forge-{cluster}/ping"
    assert hb["http_config"]["authorization"] == {"type": "GenieKey", "credentials": KEYS["heartbeat"]}
    assert hb["send_resolved"] is False
    # In Git, each key is only External Secrets' placeholder for its property.
    for slot in KEYS:
        assert template(cluster).count(f"'{{{{ index . \"{slot}\" }}}}'") == 1
    spec = generated(f"overlays/{cluster}/prometheus/values.yaml")["alertmanager"]
    assert "config" not in spec and spec["alertmanagerSpec"]["configSecret"] == "alertmanager-config"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_only_the_receivers_keys_come_from_the_secret_store(cluster):
    es = generated(f"overlays/{cluster}/prometheus/externalsecret-alertmanager-config.yaml")
    assert [d["secretKey"] for d in es["spec"]["data"]] == ["critical", "warning", "heartbeat"]
    assert [d["remoteRef"]["property"] for d in es["spec"]["data"]] == ["critical", "warning", "heartbeat"]
    assert {d["remoteRef"]["key"] for d in es["spec"]["data"]} == {f"forge/{cluster}/alertmanager"}
    assert list(es["spec"]["target"]["template"]["data"]) == ["alertmanager.yaml"]  # the Secret Alertmanager reads


def test_a_node_in_a_gpu_driver_upgrade_mutes_its_hardware_alerts_and_critical_mutes_warning():
    inhibit = config("h200")["inhibit_rules"]
    assert inhibit[0] == {"source_matchers": ['severity="critical"'], "target_matchers": ['severity="warning"'],
                          "equal": ["alertname", "node"]}
    upgrade = inhibit[1]
    assert upgrade["source_matchers"] == ['alertname="GpuDriverUpgradeInProgress"'] and upgrade["equal"] == ["node"]
    muted = upgrade["target_matchers"][0].removeprefix('alertname=~"').removesuffix('"').split("|")
    assert {"GpuFellOffBus", "GpuXidCriticalError", "NicPortDown", "RdmaPortErrors", "NvmeCacheNotMounted"} <= set(muted)
    assert "AlluxioWorkerDown" not in muted and "ExternalSecretNotSynced" not in muted  # not the node's hardware
    assert "RdmaPortErrors" not in config("a100")["inhibit_rules"][1]["target_matchers"][0]  # from the inventory: no RDMA NICs


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_forge_alert_links_its_runbook_under_the_inventorys_base(cluster):
    rule = generated(f"overlays/{cluster}/prometheus/prometheusrule-forge-fleet.yaml")
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert alerts and all(r["annotations"]["runbook_url"] == f"https://github.com/exa-labs/forge/wiki/runbooks/{r['alert']}"
                          for r in alerts)


def test_without_alerting_the_whole_configuration_stays_in_the_secret_store():
    text = inventory_text("h200")
    start = text.index("    alerting:\n")
    end = text.index("  # Logs in S3")
    use = next(u for u in Prometheus().secrets(model("h200", text[:start] + text[end:])) if u.role in ("", "alertmanager")
               and u.kind.startswith("alertmanager"))
    assert (use.kind, use.data) == ("alertmanager", ())


@pytest.mark.parametrize("old, new, path, message", [
    ('warning: {type: slack, channel: "#gpu-fleet-h200"}', "warning: {type: slack}", "components.prometheus.alerting.warning",
     "a slack receiver needs channel (its webhook URL comes from the secret store)"),
    (", auth_scheme: GenieKey}", "}", "components.prometheus.alerting.heartbeat",
     "a webhook receiver needs url and auth_scheme (e.g. GenieKey, Bearer): the key comes from the secret store, the URL is in the inventory"),
    ("critical: {type: pagerduty}", "critical: {type: opsgenie}", "components.prometheus.alerting.critical.type", None),
    ("critical: {type: pagerduty}", 'critical: {type: pagerduty, url: "https://x.example"}', "components.prometheus.alerting.critical",
     "url and auth_scheme are for webhook receivers, not pagerduty"),
    ("runbook_base_url: https://github.com", "runbook_base_url: http://github.com", "components.prometheus.alerting.runbook_base_url", None),
])
def test_rejects_a_bad_receiver_at_its_line(old, new, path, message):
    text = edit(inventory_text("h200"), old, new)
    p = only_problem(problems_of("h200", text), path)
    needle = {"}": "heartbeat: {type: webhook"}.get(new, new)
    assert (p.file, p.line) == (inventory_file("h200"), line_of(text, needle))
    if message:
        assert p.message == message

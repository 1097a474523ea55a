"""Alertmanager's configuration in Git, from the inventory (`components.prometheus.alerting`): the
route tree, the inhibitions and the receivers; only the receivers' keys live in the secret store.

- Receivers: three slots, each a PagerDuty service, a Slack channel or a webhook: `critical` (pages),
  `warning` (the default), and `heartbeat`, the dead-man's switch outside the cluster (e.g. an
  Opsgenie heartbeat or healthchecks.io), which gets the always-firing `Watchdog` of the chart's
  general rules every HEARTBEAT_REPEAT and pages when it stops arriving (Prometheus, Alertmanager
  or the node under them gone). Their credentials (routing key, webhook URL, heartbeat key) are the
  properties critical, warning and heartbeat of remote role alertmanager in the secret store.
- Where it lives: the template of the ExternalSecret that makes Alertmanager's config Secret
  (`alertmanager_config_secret`, key alertmanager.yaml): External Secrets fills in the three keys;
  the rest is this generated configuration, in Git. (Not the chart's `alertmanager.config`: that
  renders a Secret from Git, which the hydrated Secret policy refuses; Alertmanager 0.25, the one
  amtool checks with, reads no webhook URL from a file.)
- Routes: Watchdog -> heartbeat; info and none severities (InfoInhibitor, GpuDriverUpgradeInProgress)
  -> nowhere; critical -> critical; everything else -> warning.
- Inhibitions: a critical alert mutes the warning of the same name on the same node; a node whose GPU
  driver is being upgraded (GpuDriverUpgradeInProgress, info) mutes its node hardware alerts (the
  alert names of this cluster's GPU, NIC, InfiniBand and NVMe rules): the reload takes them down
  on purpose.
- Runbook links: every forge alert gets `runbook_url: <runbook_base_url>/<alert name>`.

`amtool check-config` checks the result (tests, ci).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from forge.inventory.schema import Strict

SLOTS = ("critical", "warning", "heartbeat")  # the receivers, and the Secret's keys
HEARTBEAT_REPEAT = "1m"
NULL_RECEIVER = "null"
UPGRADE_ALERT = "GpuDriverUpgradeInProgress"
NODE_HARDWARE_GROUPS = ("forge-gpu", "forge-network", "forge-infiniband", "forge-nvme")
_URL = r"^https://\S+$"


class Receiver(Strict):
    type: Literal["pagerduty", "slack", "webhook"]
    channel: Annotated[str, Field(pattern=r"^[#@]\S+$")] | None = None  # slack
    url: Annotated[str, Field(pattern=_URL)] | None = None  # webhook: the URL itself is no secret
    auth_scheme: Annotated[str, Field(pattern=r"^[A-Za-z]+$")] | None = None  # webhook: Authorization scheme of the key

    @model_validator(mode="after")
    def _fields_of_the_type(self) -> "Receiver":
        if self.type == "slack" and not self.channel:
            raise ValueError("a slack receiver needs channel (its webhook URL comes from the secret store)")
        if self.type == "webhook" and not (self.url and self.auth_scheme):
            raise ValueError("a webhook receiver needs url and auth_scheme (e.g. GenieKey, Bearer): the key comes "
                             "from the secret store, the URL is in the inventory")
        if self.type != "webhook" and (self.url or self.auth_scheme):
            raise ValueError(f"url and auth_scheme are for webhook receivers, not {self.type}")
        if self.type != "slack" and self.channel:
            raise ValueError(f"channel is for slack receivers, not {self.type}")
        return self


class AlertingSettings(Strict):
    runbook_base_url: Annotated[str, Field(pattern=_URL)]
    critical: Receiver
    warning: Receiver
    heartbeat: Receiver


def key_placeholder(slot: str) -> str:
    """Where External Secrets puts the receiver's key (property `slot` of remote role alertmanager)."""
    return f'{{{{ index . "{slot}" }}}}'


def receiver(name: str, spec: Receiver) -> dict[str, Any]:
    key = key_placeholder(name)
    if spec.type == "pagerduty":
        body: dict[str, Any] = {"pagerduty_configs": [{"routing_key": key, "send_resolved": True}]}
    elif spec.type == "slack":
        body = {"slack_configs": [{"api_url": key, "channel": spec.channel, "send_resolved": True}]}
    else:
        body = {"webhook_configs": [{"url": spec.url, "send_resolved": name != "heartbeat",
                                     "http_config": {"authorization": {"type": spec.auth_scheme, "credentials": key}}}]}
    return {"name": name, **body}


def hardware_alerts(groups: list[dict[str, Any]]) -> list[str]:
    return sorted({r["alert"] for g in groups if g["name"] in NODE_HARDWARE_GROUPS for r in g["rules"] if "alert" in r})


def alertmanager_config(settings: AlertingSettings, groups: list[dict[str, Any]]) -> dict[str, Any]:
    hardware = "|".join(hardware_alerts(groups))
    return {
        "route": {
            "receiver": "warning",
            "group_by": ["alertname", "cluster", "node"],
            "group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h",
            "routes": [
                {"receiver": "heartbeat", "matchers": ['alertname="Watchdog"'],
                 "group_wait": "0s", "group_interval": HEARTBEAT_REPEAT, "repeat_interval": HEARTBEAT_REPEAT},
                {"receiver": NULL_RECEIVER, "matchers": ['severity=~"info|none"']},
                {"receiver": "critical", "matchers": ['severity="critical"']},
            ],
        },
        "inhibit_rules": [
            {"source_matchers": ['severity="critical"'], "target_matchers": ['severity="warning"'], "equal": ["alertname", "node"]},
            *([{"source_matchers": [f'alertname="{UPGRADE_ALERT}"'], "target_matchers": [f'alertname=~"{hardware}"'],
                "equal": ["node"]}] if hardware else []),
        ],
        "receivers": [{"name": NULL_RECEIVER}, *(receiver(slot, getattr(settings, slot)) for slot in SLOTS)],
    }


def with_runbook_links(groups: list[dict[str, Any]], base: str) -> list[dict[str, Any]]:
    """Every alert with a runbook_url of its own under the inventory's runbook base."""
    return [{**g, "rules": [{**r, "annotations": {**r["annotations"], "runbook_url": f"{base.rstrip('/')}/{r['alert']}"}}
                            if "alert" in r else r for r in g["rules"]]} for g in groups]

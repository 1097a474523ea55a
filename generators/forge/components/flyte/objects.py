"""The objects Flyte's component writes beside the chart: per project-domain namespaces with
quota, limits and pod template, the metrics Service, and the Grafana log links in its values."""
from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from forge.model.capacity import quantity
from forge.components.base import Scrape
from forge.components.flyte.plan import FlyteSettings, Quota, TaskDefaults
from forge.model.queues import FLYTE_PROJECT_LABEL

POD_TEMPLATE = "forge-default"
RELEASE = "flyte"
METRICS_PORT = 10254  # propeller's profiler port: /metrics in flyte-binary
METRICS_PATH = "/metrics"
API_PORTS = (8088, 8089)  # flyte-binary's HTTP (console, REST) and gRPC (Admin, DataProxy) ports
WEBHOOK_PORT = 9443  # flyte-binary's pod webhook (secret injection; the chart's disableWebhook: false)
PSA_LEVEL = "baseline"
GPU_RESOURCE = "nvidia.com/gpu"
NAMESPACE = "flyte"
# Where Prometheus scrapes propeller (the prometheus component's PodMonitor), whichever image runs it.
SCRAPES = (Scrape("forge-flyte-propeller", NAMESPACE,
                  {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["flytepropeller", "flyte-binary"]}]},
                  METRICS_PORT, METRICS_PATH),)


def log_link(s: FlyteSettings) -> dict[str, Any]:
    """A Grafana Explore link over Loki for the task's pod, from its start time until now."""
    return _explore_link(s, '{namespace="NS_", pod="POD_", container="CTR_"}')


def ray_log_link(s: FlyteSettings) -> dict[str, Any]:
    """The same for a Ray task: every pod of its RayCluster (the plugin gives the cluster's name,
    no pod name), from the RayJob's creation until now."""
    return _explore_link(s, '{namespace="NS_", pod=~"RAYCLUSTER_-.+"}')


def escape_for_tpl(value: Any) -> Any:
    """`value` with every {{ ... }} in its strings wrapped as {{`{{ ... }}`}}, which Helm's `tpl`
    (the chart renders configuration.inline with it) turns back into the original text."""
    if isinstance(value, str):
        return re.sub(r"\{\{.*?\}\}", lambda m: "{{`" + m.group(0) + "`}}", value)
    if isinstance(value, list):
        return [escape_for_tpl(v) for v in value]
    if isinstance(value, dict):
        return {k: escape_for_tpl(v) for k, v in value.items()}
    return value


def _explore_link(s: FlyteSettings, expr: str) -> dict[str, Any]:
    """The JSON is URL-encoded with stand-ins for Flyte's {{ .var }} placeholders, which must reach
    Flyte unencoded."""
    stand_ins = {"NS_": "{{ .namespace }}", "POD_": "{{ .podName }}", "CTR_": "{{ .containerName }}",
                 "RAYCLUSTER_": "{{ .rayClusterName }}", "START_": "{{ .podUnixStartTime }}"}
    pane = {"a": {
        "datasource": s.loki_datasource_uid,
        "queries": [{"refId": "A", "expr": expr, "datasource": {"type": "loki", "uid": s.loki_datasource_uid}}],
        "range": {"from": "START_000", "to": "now"},
    }}
    encoded = quote(json.dumps(pane, separators=(",", ":")), safe="")
    for stand_in, placeholder in stand_ins.items():
        encoded = encoded.replace(stand_in, placeholder)
    return {"displayName": "Logs (Grafana/Loki)",
            "templateUris": [f"{s.grafana_url.rstrip('/')}/explore?schemaVersion=1&orgId=1&panes={encoded}"]}


def project_namespace(q: Quota, psa: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, Any]:
    """`psa`: Pod Security mode -> level (forge.components.flyte.rdma.project_psa_levels);
    `extra`: more labels (the admission policy's, forge.components.flyte.rdma.fence_labels)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": q.namespace,
            "labels": {
                **{f"pod-security.kubernetes.io/{mode}": level for mode, level in psa.items()},
                **(extra or {}),
                FLYTE_PROJECT_LABEL: q.project,
                "forge.exa.ai/flyte-domain": q.domain,
            },
            # Removing a project from the inventory must not delete its running work with it.
            "annotations": {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false"},
        },
    }


def resource_quota(q: Quota) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "forge-quota", "namespace": q.namespace},
        "spec": {"hard": {f"requests.{r}": quantity(r, n) for r, n in q.hard.items()}},
    }


def limit_range(namespace: str, d: TaskDefaults) -> dict[str, Any]:
    """Containers that ask for nothing get the task defaults, so the quota can count them."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "forge-defaults", "namespace": namespace},
        "spec": {"limits": [{
            "type": "Container",
            "defaultRequest": {"cpu": str(d.cpu), "memory": f"{d.memory_gib}Gi"},
            "default": {"memory": f"{d.memory_gib}Gi"},
        }]},
    }


def pod_template(namespace: str | None, priority_class: str, image: str, defaults: TaskDefaults) -> dict[str, Any]:
    """Propeller's base for every pod in `namespace` (None: the flyte namespace, its fallback).

    Hardened as far as any task allows: no privilege escalation, every capability dropped (the
    RDMA template adds back IPC_LOCK alone), the runtime's seccomp profile. Resources are the task
    defaults, requests = limits as Flyte sets them; a task's own resources replace them."""
    meta: dict[str, Any] = {"name": POD_TEMPLATE}
    if namespace:
        meta["namespace"] = namespace
    amounts = {"cpu": str(defaults.cpu), "memory": f"{defaults.memory_gib}Gi"}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": meta,
        "template": {"spec": {
            "priorityClassName": priority_class,
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "default",
                "image": image,
                "resources": {"requests": dict(amounts), "limits": dict(amounts)},
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }],
        }},
    }


def metrics_service() -> dict[str, Any]:
    """The chart exposes no Service for propeller's metrics port; this one is for scraping."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "flyte-metrics", "namespace": NAMESPACE, "annotations": {"forge.exa.ai/metrics-path": METRICS_PATH}},
        "spec": {
            "selector": {"app.kubernetes.io/name": "flyte-binary", "app.kubernetes.io/instance": RELEASE,
                         "app.kubernetes.io/component": "flyte-binary"},
            "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": METRICS_PORT}],
        },
    }

"""Alert rules on the platform forge deploys rather than the hardware: which nodes are in a GPU
driver upgrade (what the GPU alerts stay quiet on), ExternalSecrets that fail to sync, and
workloads Kueue cannot admit.

The dead-man's switch is the chart's own `Watchdog` (kube-prometheus-stack's general rules,
always firing): forge routes it to the heartbeat receiver outside the cluster
(forge.observability.alerting), which pages when it stops arriving.
"""
from __future__ import annotations

from typing import Any

from forge.model.cluster import ClusterModel
from forge.observability import metrics as m
from forge.observability.promql import alert, regex_alternation, selector

EXTERNAL_SECRET_FOR = "10m"  # ESO retries with back-off; a store hiccup recovers well within this
INADMISSIBLE_FOR = "15m"  # a workload Kueue can never admit as the queues are (not one waiting for quota)


def upgrade_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    if not cluster.gpu_nodes:
        return []
    busy = selector(**{f"{m.KSM_GPU_UPGRADE_STATE}_re": regex_alternation(m.GPU_UPGRADE_BUSY_STATES)})
    return [
        {"record": m.NODE_GPU_UPGRADING, "expr": f"max by ({m.NODE_LABEL}) ({m.KSM_NODE_LABELS}{busy})"},
        # Routed nowhere: it only inhibits the node's hardware alerts in Alertmanager (forge.observability.alerting).
        alert("GpuDriverUpgradeInProgress", f"{m.NODE_GPU_UPGRADING} == 1", "info",
              "{{ $labels.node }} is in a GPU driver upgrade: its hardware alerts are muted",
              "Nothing to do while the GPU Operator advances the node; if it stays here for hours, the stuck "
              "upgrade alert and `kubectl get node -L nvidia.com/gpu-driver-upgrade-state` say where it hangs."),
    ]


def external_secret_rules() -> list[dict[str, Any]]:
    failed = selector(condition="Ready", status="False")
    return [
        alert("ExternalSecretNotSynced", f"max by (namespace, name) ({m.ESO_CONDITION}{failed}) == 1", "warning",
              "ExternalSecret {{ $labels.namespace }}/{{ $labels.name }} cannot sync from the secret store",
              "Its Secret keeps the last synced value, or does not exist yet: `kubectl describe externalsecret` names "
              "the cause (remote key missing, store credentials, access policy); fix it in the secret store.",
              for_=EXTERNAL_SECRET_FOR),
    ]


def kueue_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    if "kueue" not in cluster.component_settings:
        return []
    return [
        alert("KueueWorkloadsInadmissible", f"max by (cluster_queue) ({m.KUEUE_PENDING}{selector(status='inadmissible')}) > 0",
              "warning", "{{ $value }} workload(s) in ClusterQueue {{ $labels.cluster_queue }} cannot be admitted",
              "Kueue found no flavor that could ever fit them (more GPUs than the queue's reach, a flavor or "
              "LocalQueue missing, a stopped queue): `kubectl get workloads -A` and the workload's Admitted "
              "condition say why; fix the job or the queues in the inventory.",
              for_=INADMISSIBLE_FOR),
    ]


def platform_rule_groups(cluster: ClusterModel) -> list[tuple[str, list[dict[str, Any]]]]:
    return [("forge-upgrades", upgrade_rules(cluster)),
            ("forge-external-secrets", external_secret_rules() if "external-secrets" in cluster.component_settings else []),
            ("forge-kueue", kueue_rules(cluster))]

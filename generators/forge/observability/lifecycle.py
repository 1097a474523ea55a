"""Alerts on a node's way through a driver upgrade (forge.model.day_two, forge.components.driver_upgrades).

Both upgrade controllers (the GPU Operator's and the Network Operator's, NVIDIA/k8s-operator-libs)
write each node's place in the upgrade into a node label, `nvidia.com/<driver>-driver-upgrade-state`
(upgrade-required, cordon-required, wait-for-jobs-required, drain-required, validation-required,
uncordon-required, ... upgrade-done, upgrade-failed). kube-state-metrics exports those labels on
`kube_node_labels` (its metricLabelsAllowlist, set by the prometheus component from
NODE_LABEL_ALLOWLIST), as `label_nvidia_com_<driver>_driver_upgrade_state`.

* NodeDriverUpgradeStuck: a node held in a state other than done or failed for longer than the
  wait for training pods, the drain and the reload can take (held_upgrade_seconds). Grouped by
  node only, so the `for` clock keeps running as the node moves from one held state to the next.
* NodeDriverUpgradeFailed: the controller gave up on the node; it stays out of the rollout until
  someone looks (and with a percentage budget, the rollout goes on around it).
* NodeTestFailed: one of a node's test Jobs (forge.components.node_tests: DCGM diagnostics, NCCL
  all-reduce per rail) failed: the node must not serve. The test and the node come from the Job's
  name (kube-state-metrics' kube_job_status_failed).
* NodeHeldUntested: a node has carried the untested taint for longer than a test and its release
  take (kube_node_spec_taint): forgotten, it takes no work.
"""
from __future__ import annotations

from typing import Any

from forge.model.day_two import (JOB_PREFIX, TESTS, UPGRADE_DONE, UPGRADE_FAILED, UPGRADE_STATE_LABEL, gpu_upgrade_settings,
                           held_upgrade_seconds)
from forge.model.cluster import UNTESTED_TAINT_KEY, ClusterModel
from forge.observability import metrics as m
from forge.observability.promql import alert

KUBE_NODE_LABELS = m.KSM_NODE_LABELS  # one home: forge.observability.metrics
DRIVERS = ("gpu", "ofed")  # the controllers' driver names in their labels
DONE, FAILED = UPGRADE_DONE, UPGRADE_FAILED
# Past the release Job's wait (6 h) and a driver upgrade's reload with room: a node this long
# untested was forgotten.
HELD_UNTESTED = "12h"


def ksm_label(key: str) -> str:
    """The label kube-state-metrics gives a node label on kube_node_labels."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in key)


def drivers(cluster: ClusterModel) -> list[str]:
    return [d for d, on in (("gpu", bool(cluster.gpu_nodes)), ("ofed", cluster.ofed_driver)) if on]


def node_label_allowlist(cluster: ClusterModel) -> list[str]:
    """kube-state-metrics' metricLabelsAllowlist entry for the node labels the rules read."""
    keys = [UPGRADE_STATE_LABEL.format(driver=d) for d in drivers(cluster)]
    return [f"nodes=[{','.join(keys)}]"] if keys else []


def upgrade_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    held = held_upgrade_seconds(gpu_upgrade_settings(cluster))
    hours = f"{held // 3600}h{(held % 3600) // 60}m" if held % 3600 else f"{held // 3600}h"
    rules = []
    for driver in drivers(cluster):
        state = ksm_label(UPGRADE_STATE_LABEL.format(driver=driver))
        name = {"gpu": "GPU", "ofed": "DOCA/OFED"}[driver]
        held_sel = f'{KUBE_NODE_LABELS}{{{state}!~"|{DONE}|{FAILED}"}}'
        rules += [
            alert("NodeDriverUpgradeStuck", f"max by ({m.NODE_LABEL}) ({held_sel})", "warning",
                  f"{{{{ $labels.node }}}} has been held in a {name} driver upgrade for more than {hours}",
                  f"The node is out of service and takes one slot of the upgrade budget. `kubectl get node <node> "
                  f"-L {UPGRADE_STATE_LABEL.format(driver=driver)}` shows where it waits: wait-for-jobs (a job that "
                  "never ends: checkpoint and stop it), drain (a pod no controller owns, a PodDisruptionBudget), "
                  "validation (the driver or its validator pod fails on the node: read its logs).",
                  for_=hours, labels={"driver": driver}),
            alert("NodeDriverUpgradeFailed",
                  f'max by ({m.NODE_LABEL}) ({KUBE_NODE_LABELS}{{{state}="{FAILED}"}})', "critical",
                  f"The {name} driver upgrade failed on {{{{ $labels.node }}}}",
                  "The node stays cordoned out of the rollout. Read the driver pod's logs and the node's events; "
                  f"once fixed, set the node's {UPGRADE_STATE_LABEL.format(driver=driver)} label to "
                  "upgrade-required to retry it.",
                  for_="5m", labels={"driver": driver}),
        ]
    return rules


def node_test_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    if not cluster.gpu_nodes:
        return []
    name = f"{JOB_PREFIX}({'|'.join(TESTS)})-(.+)"  # the test, then the node
    failed = f'kube_job_status_failed{{job_name=~"{name}"}} > 0'
    named = f'label_replace({failed}, "{m.NODE_LABEL}", "$2", "job_name", "{name}")'
    expr = f'max by ({m.NODE_LABEL}, test) (label_replace({named}, "test", "$1", "job_name", "{name}"))'
    return [alert("NodeTestFailed", expr, "critical",
                  "{{ $labels.node }} failed its {{ $labels.test }} node test: it must not serve",
                  "The node keeps its forge.exa.ai/untested taint (its release Job fails too). `kubectl -n gpu-operator "
                  "logs job/forge-node-test-<test>-<node>` names the failing GPU and test (dcgm) or the rail below "
                  "its bandwidth floor (nccl: if the peer, label forge.exa.ai/peer, fails its own test too, suspect "
                  "the peer or the switch). The driver rollout stops here (the node gate opens no node). Repair it: "
                  "the gate tests it again once it is back; or release it on the record with `kubectl annotate node "
                  "<node> forge.exa.ai/release-reason=\"<why>\"` (docs/day-two.md).")] + held_untested_rules(cluster)


def held_untested_rules(cluster: ClusterModel) -> list[dict[str, Any]]:
    """A node forgotten with the untested taint (registered, or tainted before a change, and never
    tested) takes no work and nothing else says so."""
    if not any(n.tested_before_service for n in cluster.nodes):
        return []
    taint = f'kube_node_spec_taint{{key="{UNTESTED_TAINT_KEY}"}}'
    return [alert("NodeHeldUntested", f"max by ({m.NODE_LABEL}) ({taint})", "warning",
                  f"{{{{ $labels.node }}}} has been out of service, untested, for more than {HELD_UNTESTED}",
                  f"The node carries {UNTESTED_TAINT_KEY}: no workload lands on it until its tests pass and the "
                  "node gate removes the taint. Is the forge-node-gate Deployment in gpu-operator running (its log "
                  "says what it waits for)? If its tests ran and failed, NodeTestFailed says which (docs/day-two.md, "
                  "\"How a node returns to service\").",
                  for_=HELD_UNTESTED)]

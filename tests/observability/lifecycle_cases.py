"""promtool cases of the node-lifecycle alerts (forge.observability.lifecycle), run with every
other alert by tests/observability/test_rules.py (cases_for)."""
from __future__ import annotations

from forge.components.driver_upgrades import gpu_upgrade_settings, held_upgrade_seconds
from forge.model.cluster import ClusterModel
from forge.observability.lifecycle import UPGRADE_STATE_LABEL, drivers, ksm_label
from tests.observability.test_rules import Case, series

KSM = {"job": "kube-state-metrics", "namespace": "prometheus", "instance": "10.0.0.5:8080"}
# The stuck alert waits a day and more: its cases step by 4 minutes (under Prometheus' 5-minute
# lookback, so the series never goes stale between samples), evaluated at that interval on the
# lifecycle group alone (tests/observability/test_lifecycle.py); test_rules runs the 1m ones.
STEP_MIN = 4


def upgrade_cases(cluster: ClusterModel) -> list[Case]:
    node = cluster.gpu_nodes[0].name
    held = held_upgrade_seconds(gpu_upgrade_settings(cluster)) // 60 // STEP_MIN  # in steps
    cases = []
    for driver in drivers(cluster):
        state = ksm_label(UPGRADE_STATE_LABEL.format(driver=driver))

        def labels(value: str, who: str = node) -> str:
            return series("kube_node_labels", node=who, **{state: value}, **KSM)

        # Held past the limit, moving from one held state to the next (the clock keeps running):
        # wait-for-jobs for most of it, then drain.
        wait = held - 20
        moving = [(labels("wait-for-jobs-required"), f"1x{wait} _x30"), (labels("drain-required"), f"_x{wait} 1x30")]
        at = f"{(held + 8) * STEP_MIN}m"
        step = f"{STEP_MIN}m"
        cases += [
            Case("NodeDriverUpgradeStuck", {"driver": driver}, moving,
                 # done just before the limit: quiet
                 [(labels("wait-for-jobs-required"), f"1x{held - 10} _x30"), (labels("upgrade-done"), f"_x{held - 10} 1x30")],
                 [{"node": node}], at, name=driver, interval=step,
                 extra_quiet=[[(labels("upgrade-done"), f"1x{held + 10}"), (labels(""), f"1x{held + 10}")],  # never upgraded
                              [(labels("upgrade-failed"), f"1x{held + 10}")]]),  # failed: the other alert
            Case("NodeDriverUpgradeFailed", {"driver": driver}, [(labels("upgrade-failed"), "1x10")],
                 [(labels("validation-required"), "1x10")], [{"node": node}], "10m", name=driver,
                 extra_quiet=[[(labels("upgrade-failed"), "_x6 1x4")]]),  # failed only 3 minutes ago
        ]
    return cases


def node_test_cases(cluster: ClusterModel) -> list[Case]:
    node = cluster.gpu_nodes[0].name
    cases = []
    for test in ("dcgm", "nccl"):
        job = {"namespace": "gpu-operator", "job_name": f"forge-node-test-{test}-{node}", **KSM}
        other = {**job, "job_name": "flyte-task-abc"}
        release = {**job, "job_name": f"forge-node-release-{node}"}  # fails with the test: one alert, the test's
        cases.append(Case("NodeTestFailed", {}, [(series("kube_job_status_failed", **job), "0 0 1x5")],
                          [(series("kube_job_status_failed", **job), "0x8")], [{"node": node, "test": test}], "5m",
                          name=test,
                          extra_quiet=[[(series("kube_job_status_failed", **other), "1x8")],  # not a node test
                                       [(series("kube_job_status_failed", **release), "1x8")]]))
    return cases


def held_untested_cases(cluster: ClusterModel) -> list[Case]:
    """At the 4-minute step: 12 hours are 180 steps."""
    tested = [n.name for n in cluster.nodes if n.tested_before_service]
    if not tested:
        return []
    node = tested[0]

    def taint(key: str = "forge.exa.ai/untested") -> str:
        return series("kube_node_spec_taint", node=node, key=key, effect="NoSchedule", **KSM)

    return [Case("NodeHeldUntested", {}, [(taint(), "1x200")],
                 [(taint(), "1x170")],  # released (the series ends) before 12 hours: quiet
                 [{"node": node}], f"{190 * STEP_MIN}m", interval=f"{STEP_MIN}m",
                 extra_quiet=[[(taint("nvidia.com/gpu"), "1x200")]])]  # the inventory's own taint


def lifecycle_cases(cluster: ClusterModel) -> list[Case]:
    return upgrade_cases(cluster) + node_test_cases(cluster) + held_untested_cases(cluster)

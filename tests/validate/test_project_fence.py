"""Issue 21 item 2: no project namespace is privileged. Fabric clusters hold their project
namespaces to Pod Security baseline plus IPC_LOCK with a ValidatingAdmissionPolicy
(forge.components.flyte.fence); `forge validate` fails a privileged project namespace the policy
does not hold (forge.validate.admission.privileged_namespaces)."""
from __future__ import annotations

import copy

import pytest

from forge.components.flyte import fence
from forge.validate.admission import pod_security
from tests.helpers import rendered

PROJECT = {"forge.exa.ai/flyte-project": "team"}
FENCED = {**PROJECT, fence.POLICY_LABEL: fence.POLICY_VALUE}
IPC_LOCK_POD = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "forge-rdma", "namespace": "team-dev"},
                "template": {"spec": {"containers": [{"name": "default", "image": "pause:3.10",
                                                      "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]}}}


def namespace(enforce: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-dev", "labels": {
        "pod-security.kubernetes.io/enforce": enforce, "pod-security.kubernetes.io/warn": "baseline", **labels}}}


def check(*objs: dict) -> list[str]:
    return [p.reason for p in pod_security({"flyte": list(objs)}, {"flyte": "flyte"}, {}, list(objs))]


@pytest.mark.parametrize("cluster", ["h200", "a100"])
def test_no_shipped_project_namespace_is_privileged(cluster):
    objs = rendered(cluster, "flyte")
    projects = [o for o in objs if o["kind"] == "Namespace" and "forge.exa.ai/flyte-project" in o["metadata"]["labels"]]
    assert projects
    assert not [r for r in check(*objs) if "is privileged" in r]
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objs}
    fenced = cluster == "h200"  # the cluster with a compute fabric: RDMA pods add IPC_LOCK
    assert (("ValidatingAdmissionPolicy", fence.POLICY) in kinds) is fenced
    for ns in projects:
        labels = ns["metadata"]["labels"]
        if fenced:
            assert labels[fence.POLICY_LABEL] == fence.POLICY_VALUE
        else:
            assert labels["pod-security.kubernetes.io/enforce"] == "baseline"


def test_a_privileged_project_namespace_without_the_policy_fails():
    [reason] = check(namespace("privileged", PROJECT))
    assert reason.startswith("project namespace 'team-dev' is privileged: a task could run a privileged container")
    # labelled for the policy, but the policy and its binding are not in the output: still privileged
    [reason] = check(namespace("privileged", FENCED))
    assert "is privileged" in reason
    # a binding that only warns does not hold it either
    warn_only = copy.deepcopy(fence.binding())
    warn_only["spec"]["validationActions"] = ["Warn"]
    assert any("is privileged" in r for r in check(namespace("privileged", FENCED), fence.policy(), warn_only))
    assert check(namespace("privileged", FENCED), *fence.objects()) == []
    assert check(namespace("baseline", PROJECT)) == []


def test_the_policy_holds_a_fenced_namespace_to_baseline_with_ipc_lock_alone():
    ns = namespace("privileged", FENCED)
    assert check(ns, *fence.objects(), IPC_LOCK_POD) == []
    root = copy.deepcopy(IPC_LOCK_POD)
    root["template"]["spec"]["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
    root["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["IPC_LOCK", "SYS_ADMIN"]
    reasons = check(ns, *fence.objects(), root)
    assert reasons == [f"admission policy {fence.POLICY} (namespace team-dev) forbids capabilities: SYS_ADMIN",
                       f"admission policy {fence.POLICY} (namespace team-dev) forbids hostPath volumes: root"]


def test_the_policy_is_admissionregistration_v1_and_covers_every_baseline_control():
    policy, binding = fence.objects()
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert binding["spec"] == {"policyName": fence.POLICY, "validationActions": ["Deny"],
                               "matchResources": {"namespaceSelector": {"matchLabels": {fence.POLICY_LABEL: fence.POLICY_VALUE}}}}
    text = " ".join(v["expression"] for v in policy["spec"]["validations"])
    for field in ("hostNetwork", "hostPID", "hostIPC", "hostPath", "privileged", "capabilities", "hostPort", "seccompProfile",
                  "appArmorProfile", "seLinuxOptions", "procMount", "sysctls", "hostProcess", "container.apparmor.security"):
        assert field in text, field
    for expr in text.split(" && "):  # every list of containers is checked by itself (CEL cannot add lists of two types)
        assert "+" not in expr
    allowed = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "allowedCapabilities")
    assert "'IPC_LOCK'" in allowed and "'SYS_ADMIN'" not in allowed and "'NET_RAW'" not in allowed

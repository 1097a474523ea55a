"""The Pod Security Standards on pod specs (forge.validate.podsecurity) and their application per
namespace, with the reviewed exceptions (forge.validate.admission.pod_security)."""
from __future__ import annotations

import copy

import pytest

from forge.validate.admission import pod_security
from forge.validate.podsecurity import pod_specs, violations

RESTRICTED_POD = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "app", "image": "app:1", "securityContext": {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
    "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}],
}


def pod(**changes) -> dict:
    spec = copy.deepcopy(RESTRICTED_POD)
    spec.update(changes)
    return spec


def rules(spec: dict, level: str) -> list[tuple[str, str, str]]:
    return sorted(tuple(v) for v in violations(spec, level))


def test_a_restricted_pod_passes_every_level():
    for level in ("privileged", "baseline", "restricted"):
        assert violations(RESTRICTED_POD, level) == []


@pytest.mark.parametrize("change, expected", [
    ({"hostNetwork": True}, ("hostNetwork", "host namespaces", "hostNetwork")),
    ({"hostPID": True}, ("hostPID", "host namespaces", "hostPID")),
    ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, ("volumes[0].hostPath", "hostPath volumes", "root")),
    ({"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "Unconfined"}}},
     ("securityContext.seccompProfile.type", "seccomp", "Unconfined")),
    ({"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"},
                          "sysctls": [{"name": "kernel.msgmax", "value": "1"}]}},
     ("securityContext.sysctls[0]", "sysctls", "kernel.msgmax")),
])
def test_baseline_pod_level_controls(change, expected):
    assert expected in rules(pod(**change), "baseline")


@pytest.mark.parametrize("ctx, expected", [
    ({"privileged": True}, ("containers[0].securityContext.privileged", "privileged containers", "app")),
    ({"capabilities": {"add": ["IPC_LOCK"]}}, ("containers[0].securityContext.capabilities.add", "capabilities", "IPC_LOCK")),
    ({"capabilities": {"add": ["SYS_ADMIN"]}}, ("containers[0].securityContext.capabilities.add", "capabilities", "SYS_ADMIN")),
    ({"procMount": "Unmasked"}, ("containers[0].securityContext.procMount", "/proc mount type", "Unmasked")),
    ({"seLinuxOptions": {"type": "spc_t"}}, ("containers[0].securityContext.seLinuxOptions.type", "SELinux", "spc_t")),
    ({"appArmorProfile": {"type": "Unconfined"}}, ("containers[0].securityContext.appArmorProfile.type", "AppArmor", "Unconfined")),
    ({"windowsOptions": {"hostProcess": True}}, ("containers[0].securityContext.windowsOptions.hostProcess", "HostProcess", "hostProcess")),
])
def test_baseline_container_controls(ctx, expected):
    spec = {"containers": [{"name": "app", "image": "app:1", "securityContext": ctx}]}
    assert rules(spec, "baseline") == [expected]


def test_baseline_allows_the_default_capabilities_and_host_port_zero():
    spec = {"containers": [{"name": "app", "image": "app:1", "ports": [{"containerPort": 80, "hostPort": 0}],
                            "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"]}}}]}
    assert violations(spec, "baseline") == []
    spec["containers"][0]["ports"][0]["hostPort"] = 8080
    assert rules(spec, "baseline") == [("containers[0].ports[0].hostPort", "host ports", "8080")]


def test_restricted_controls():
    spec = {"initContainers": [{"name": "init", "image": "i:1", "securityContext": {"runAsUser": 0}}],
            "containers": [{"name": "app", "image": "app:1", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}],
            "volumes": [{"name": "nfs", "nfs": {"server": "x", "path": "/"}}]}
    assert rules(spec, "restricted") == sorted([
        ("volumes[0].nfs", "volume types", "nfs"),
        ("initContainers[0].securityContext.allowPrivilegeEscalation", "privilege escalation", "init"),
        ("initContainers[0].securityContext.runAsNonRoot", "running as non-root", "init"),
        ("initContainers[0].securityContext.runAsUser", "running as non-root user", "0"),
        ("initContainers[0].securityContext.seccompProfile.type", "seccomp", "None"),
        ("initContainers[0].securityContext.capabilities.drop", "capabilities", "drop ALL"),
        ("containers[0].securityContext.allowPrivilegeEscalation", "privilege escalation", "app"),
        ("containers[0].securityContext.runAsNonRoot", "running as non-root", "app"),
        ("containers[0].securityContext.seccompProfile.type", "seccomp", "None"),
        ("containers[0].securityContext.capabilities.drop", "capabilities", "drop ALL"),
        ("containers[0].securityContext.capabilities.add", "capabilities", "CHOWN"),
    ])
    # a container may override the pod's runAsNonRoot: true with false
    spec = pod(containers=[{**RESTRICTED_POD["containers"][0], "securityContext": {
        **RESTRICTED_POD["containers"][0]["securityContext"], "runAsNonRoot": False}}])
    assert rules(spec, "restricted") == [("containers[0].securityContext.runAsNonRoot", "running as non-root", "app")]


def test_pod_specs_are_found_in_every_kind_that_embeds_one():
    job = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": {"template": {"spec": RESTRICTED_POD}},
                                                                 "Worker": {"template": {"spec": RESTRICTED_POD}}}}}
    assert [p for p, _ in pod_specs(job)] == ["spec.pytorchReplicaSpecs.Master.template.spec",
                                              "spec.pytorchReplicaSpecs.Worker.template.spec"]
    assert [p for p, _ in pod_specs({"kind": "PodTemplate", "template": {"spec": RESTRICTED_POD}})] == ["template.spec"]
    assert list(pod_specs({"kind": "ConfigMap", "data": {"containers": "x"}})) == []


def namespace(name: str, enforce: str, warn: str | None = None, **labels: str) -> dict:
    lab = {"pod-security.kubernetes.io/enforce": enforce, **labels}
    if warn:
        lab["pod-security.kubernetes.io/warn"] = warn
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": lab}}


RDMA_TEMPLATE = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "forge-rdma", "namespace": "team-dev"},
                 "template": {"spec": {"containers": [{"name": "default", "image": "pause:3.10",
                                                       "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}]}}}


def test_ipc_lock_is_rejected_where_baseline_is_enforced():
    ns = namespace("team-dev", "baseline", "baseline")
    [problem] = pod_security({"flyte": [ns, RDMA_TEMPLATE]}, {"flyte": "flyte"}, {}, [ns, RDMA_TEMPLATE])
    assert problem.where == "PodTemplate/team-dev/forge-rdma"
    assert problem.path == "template.spec.containers[0].securityContext.capabilities.add"
    assert problem.reason == "Pod Security 'baseline' (enforced in namespace team-dev) forbids capabilities: IPC_LOCK"


def test_ipc_lock_is_a_reviewed_exception_at_the_warn_level_only_others_are_not():
    ns = namespace("team-dev", "privileged", "baseline")
    assert pod_security({"flyte": [ns, RDMA_TEMPLATE]}, {"flyte": "flyte"}, {}, [ns]) == []
    privileged = copy.deepcopy(RDMA_TEMPLATE)
    privileged["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = True
    [problem] = pod_security({"flyte": [privileged]}, {"flyte": "flyte"}, {}, [ns])
    assert problem.reason.startswith("Pod Security 'baseline' (warned in namespace team-dev) forbids privileged containers: default; ")


def test_examples_are_held_to_every_workload_namespace_and_unknown_namespaces_fail():
    example = copy.deepcopy(RDMA_TEMPLATE)
    del example["metadata"]["namespace"]
    strict = namespace("a-dev", "baseline", **{"forge.exa.ai/flyte-project": "a"})
    loose = namespace("b-dev", "privileged", "baseline", **{"forge.exa.ai/flyte-project": "b"})
    other = namespace("infra", "baseline")
    problems = pod_security({}, {"net": "net"}, {"net": [("overlays/x/net/examples/p.yaml", example)]}, [strict, loose, other])
    assert [(p.where, p.reason) for p in problems] == [(
        "overlays/x/net/examples/p.yaml PodTemplate/forge-rdma",
        "Pod Security 'baseline' (enforced in namespace a-dev) forbids capabilities: IPC_LOCK")]
    lost = copy.deepcopy(RDMA_TEMPLATE)
    lost["metadata"]["namespace"] = "nowhere"
    [problem] = pod_security({"flyte": [lost]}, {}, {}, [])
    assert problem.reason == "namespace 'nowhere' has no Namespace object in the cluster's output: its Pod Security level is unknown"

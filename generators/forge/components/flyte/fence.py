"""Pod Security `baseline` plus IPC_LOCK alone, for the project namespaces of fabric clusters.

RDMA pods (the `forge-rdma` PodTemplate) add the IPC_LOCK capability to pin memory for the NIC.
Pod Security admission knows no exception for one capability: `baseline` refuses IPC_LOCK, and
the only level that admits it, `privileged`, admits everything (privileged containers,
`hostPath: /`, the host's namespaces: root on a GPU node). A ValidatingAdmissionPolicy can only
refuse, never admit what Pod Security refused, so the namespace's Pod Security label stays at
`privileged` (warn and audit at `baseline`) and this policy, bound to every namespace labelled
`POLICY_LABEL: POLICY_VALUE`, refuses every pod that breaks a `baseline` control, with IPC_LOCK
added to the capabilities baseline allows. In effect the namespace enforces baseline + IPC_LOCK;
`forge validate` counts a namespace as privileged unless the policy and its binding are in the
cluster's output and bind it (forge.validate.admission.privileged_namespaces).

The controls are those of the Pod Security Standards' baseline level (Kubernetes 1.34): host
namespaces, privileged containers, capabilities, hostPath volumes, host ports, AppArmor,
SELinux, /proc mount type, seccomp, sysctls, Windows HostProcess. Every container list
(containers, initContainers, ephemeralContainers) is checked by itself: their element types
differ, and CEL cannot add lists of two types. The expressions are written here once per
container and spelled out per list.
"""
from __future__ import annotations

from typing import Any

from forge.components.admission import POD_CREATE, deny_binding, validating_policy

POLICY = "forge-baseline-ipc-lock"
POLICY_LABEL = "forge.exa.ai/pod-security"
POLICY_VALUE = "baseline-ipc-lock"
ALLOWED_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                        "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT", "IPC_LOCK")
SAFE_SYSCTLS = ("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes")
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
KINDS = (("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
         ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"))
_LISTS = ("containers", "initContainers", "ephemeralContainers")


def _cel_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{i}'" for i in items) + "]"


def _sc(subject: str, field: str, ok: str) -> str:
    """`ok` (about `{f}`, the field) holds, or `subject` has no securityContext.<field>."""
    f = f"{subject}.securityContext.{field}"
    return f"(!has({subject}.securityContext) || !has({f}) || {ok.format(f=f)})"


def _selinux(subject: str) -> str:
    return _sc(subject, "seLinuxOptions",
               "((!has({f}.type) || {f}.type in variables.seLinuxTypes) && (!has({f}.user) || {f}.user == '')"
               " && (!has({f}.role) || {f}.role == ''))")


# Per container (c): (control, expression that holds when the container meets baseline).
CONTAINER_RULES: tuple[tuple[str, str], ...] = (
    ("privileged containers", _sc("c", "privileged", "{f} == false")),
    ("capabilities beyond baseline and IPC_LOCK",
     _sc("c", "capabilities", "(!has({f}.add) || {f}.add.all(cap, cap in variables.allowedCapabilities))")),
    ("host ports", "(!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"),
    ("seccomp profile Unconfined", _sc("c", "seccompProfile", "{f}.type != 'Unconfined'")),
    ("AppArmor profile Unconfined", _sc("c", "appArmorProfile", "{f}.type != 'Unconfined'")),
    ("SELinux type, user or role", _selinux("c")),
    ("/proc mount type", _sc("c", "procMount", "{f} == 'Default'")),
    ("Windows HostProcess", _sc("c", "windowsOptions", "(!has({f}.hostProcess) || {f}.hostProcess == false)")),
)
_POD = "object.spec"
POD_RULES: tuple[tuple[str, str], ...] = (
    ("host namespaces (hostNetwork, hostPID, hostIPC)",
     " && ".join(f"(!has({_POD}.{f}) || {_POD}.{f} == false)" for f in ("hostNetwork", "hostPID", "hostIPC"))),
    ("hostPath volumes", f"(!has({_POD}.volumes) || {_POD}.volumes.all(v, !has(v.hostPath)))"),
    ("seccomp profile Unconfined (pod)", _sc(_POD, "seccompProfile", "{f}.type != 'Unconfined'")),
    ("AppArmor profile Unconfined (pod)", _sc(_POD, "appArmorProfile", "{f}.type != 'Unconfined'")),
    ("SELinux type, user or role (pod)", _selinux(_POD)),
    ("unsafe sysctls", _sc(_POD, "sysctls", "{f}.all(s, s.name in variables.safeSysctls)")),
    ("Windows HostProcess (pod)", _sc(_POD, "windowsOptions", "(!has({f}.hostProcess) || {f}.hostProcess == false)")),
    ("AppArmor annotation other than runtime/default or localhost/*",
     "(!has(object.metadata.annotations) || object.metadata.annotations.all(k, "
     "!k.startsWith('container.apparmor.security.beta.kubernetes.io/') || "
     "object.metadata.annotations[k] == 'runtime/default' || object.metadata.annotations[k].startsWith('localhost/')))"),
)


def _variables() -> list[dict[str, str]]:
    out = [{"name": "allowedCapabilities", "expression": _cel_list(ALLOWED_CAPABILITIES)},
           {"name": "safeSysctls", "expression": _cel_list(SAFE_SYSCTLS)},
           {"name": "seLinuxTypes", "expression": _cel_list(SELINUX_TYPES)}]
    out += [{"name": name, "expression": f"has({_POD}.{name}) ? {_POD}.{name} : []"} for name in _LISTS]
    return out


def validations() -> list[dict[str, str]]:
    out = [{"expression": expr, "reason": "Forbidden",
            "message": f"Pod Security baseline (with IPC_LOCK, policy {POLICY}) forbids {control}"}
           for control, expr in POD_RULES]
    for control, expr in CONTAINER_RULES:
        out.append({"expression": " && ".join(f"variables.{name}.all(c, {expr})" for name in _LISTS), "reason": "Forbidden",
                    "message": f"Pod Security baseline (with IPC_LOCK, policy {POLICY}) forbids {control} in any container"})
    return out


def policy() -> dict[str, Any]:
    # Pods as created; ephemeral containers as added to a running pod (Pod Security checks both).
    rules = [POD_CREATE, {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/ephemeralcontainers"]}]
    return validating_policy(POLICY, rules, _variables(), validations())


def binding() -> dict[str, Any]:
    return deny_binding(POLICY, {"matchLabels": {POLICY_LABEL: POLICY_VALUE}})


def objects() -> list[dict[str, Any]]:
    return [policy(), binding()]

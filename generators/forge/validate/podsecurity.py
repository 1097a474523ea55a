"""The Pod Security Standards (Kubernetes 1.34) applied to pod specs, as the API server's Pod
Security admission would apply them to the pods a workload creates.

Covered, per level (https://kubernetes.io/docs/concepts/security/pod-security-standards/):
- baseline: host namespaces (hostNetwork, hostPID, hostIPC), privileged containers, added
  capabilities beyond the default set, hostPath volumes, host ports, AppArmor `Unconfined`,
  SELinux type/user/role, /proc mount type, seccomp `Unconfined`, unsafe sysctls, Windows
  HostProcess;
- restricted, on top: volume types, allowPrivilegeEscalation false, runAsNonRoot true (pod or
  every container), no runAsUser 0, a seccomp profile (RuntimeDefault or Localhost) and
  capabilities dropping ALL, adding at most NET_BIND_SERVICE.
Not covered: the pod-level `metadata.annotations` forms of AppArmor and seccomp (deprecated since
1.30, forge never writes them) and the Windows-only user-name fields.

A pod spec is found wherever an object holds one: Pods, PodTemplates, every workload kind and
custom resources that embed pod templates (PyTorchJob, RayJob, ...): any mapping with a
`containers` list of named containers.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from forge.validate._schema import Link, dotted_link

LEVELS = ("privileged", "baseline", "restricted")
ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"

BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret", "image",
})
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_VOLUME_META = frozenset({"name"})


class Violation(tuple):
    """(path inside the pod spec, rule, detail): `rule` names the PSS control; `detail` is what
    tripped it (a capability name, a volume name), so an exception can name exactly one."""

    __slots__ = ()

    def __new__(cls, path: str, rule: str, detail: str) -> "Violation":
        return super().__new__(cls, (path, rule, detail))

    path = property(lambda self: self[0])
    rule = property(lambda self: self[1])
    detail = property(lambda self: self[2])


def pod_specs(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted path, pod spec) of every pod spec inside an object, in document order.

    It runs on every object validation sees, so it walks by recursion (about twice as fast as an
    explicit stack) and spells out the path of a pod spec only when it finds one. Deeper than
    Python's stack allows: the explicit stack."""
    found: list[tuple[Link, dict[str, Any]]] = []
    if not isinstance(node, (dict, list)):
        return []
    try:
        _find(node, None, found)
    except RecursionError:
        return pod_specs_deep(node, path)
    return [(dotted_link(link, path), spec) for link, spec in found]


def _is_pod_spec(node: dict[str, Any]) -> bool:
    containers = node.get("containers")
    return isinstance(containers, list) and bool(containers) and all(isinstance(c, dict) and "name" in c for c in containers)


def _find(node: Any, link: Link, found: list[tuple[Link, dict[str, Any]]]) -> None:
    if isinstance(node, dict):
        if "containers" in node and _is_pod_spec(node):
            found.append((link, node))
            return
        for key, value in node.items():
            if isinstance(value, (dict, list)):  # scalars hold none
                _find(value, (link, key if type(key) is str else str(key)), found)  # an int key is no index
    else:
        for i, value in enumerate(node):
            if isinstance(value, (dict, list)):
                _find(value, (link, i), found)


def pod_specs_deep(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """pod_specs with an explicit stack, for any depth (and the oracle tests hold pod_specs to)."""
    found: list[tuple[str, dict[str, Any]]] = []
    stack: list[tuple[str, Any]] = [(path, node)]
    while stack:  # depth first, without a generator per node
        path, node = stack.pop()
        if isinstance(node, dict):
            if _is_pod_spec(node):
                found.append((path, node))
                continue
            children = [(f"{path}.{key}" if path else str(key), value) for key, value in node.items()
                        if isinstance(value, (dict, list))]  # scalars hold none
        elif isinstance(node, list):
            children = [(f"{path}[{i}]", value) for i, value in enumerate(node) if isinstance(value, (dict, list))]
        else:
            continue
        stack += reversed(children)
    return found


class PodSpecs:
    """pod_specs of each object, found once: Pod Security and the Secret references both ask."""

    def __init__(self) -> None:
        self._found: dict[int, tuple[Any, list[tuple[str, dict[str, Any]]]]] = {}

    def none_in(self, objects: Iterable[dict[str, Any]]) -> None:
        """These objects are known to hold no pod spec (forge.validate.objects.absent_keys)."""
        for obj in objects:
            self._found[id(obj)] = (obj, [])

    def __call__(self, obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        entry = self._found.get(id(obj))
        if entry is None:  # the object is kept with its result: its id cannot be reused meanwhile
            entry = self._found[id(obj)] = (obj, pod_specs(obj))
        return entry[1]


def level_of(labels: dict[str, Any], key: str = ENFORCE) -> str:
    """A namespace's level for `key`; unlabelled means privileged (the API server's default)."""
    value = labels.get(key)
    return value if value in LEVELS else "privileged"


def violations(spec: dict[str, Any], level: str) -> list[Violation]:
    """Every control of `level` the pod spec breaks ([] for privileged)."""
    if level == "privileged":
        return []
    out = list(_baseline(spec))
    if level == "restricted":
        out += _restricted(spec)
    return out


def _containers(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for field in _CONTAINER_LISTS:
        for i, c in enumerate(spec.get(field) or []):
            if isinstance(c, dict):
                yield f"{field}[{i}]", c


def _contexts(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The pod's securityContext and every container's, with their paths."""
    yield "securityContext", spec.get("securityContext") or {}
    for at, c in _containers(spec):
        yield f"{at}.securityContext", c.get("securityContext") or {}


def _baseline(spec: dict[str, Any]) -> Iterator[Violation]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            yield Violation(field, "host namespaces", field)
    for i, v in enumerate(spec.get("volumes") or []):
        if isinstance(v, dict) and "hostPath" in v:
            yield Violation(f"volumes[{i}].hostPath", "hostPath volumes", str(v.get("name")))
    for at, c in _containers(spec):
        for j, port in enumerate(c.get("ports") or []):
            if isinstance(port, dict) and port.get("hostPort") not in (None, 0):
                yield Violation(f"{at}.ports[{j}].hostPort", "host ports", str(port["hostPort"]))
        ctx = c.get("securityContext") or {}
        if ctx.get("privileged") is True:
            yield Violation(f"{at}.securityContext.privileged", "privileged containers", c.get("name", ""))
        for cap in (ctx.get("capabilities") or {}).get("add") or []:
            if cap not in BASELINE_CAPABILITIES:
                yield Violation(f"{at}.securityContext.capabilities.add", "capabilities", str(cap))
        if ctx.get("procMount") not in (None, "Default"):
            yield Violation(f"{at}.securityContext.procMount", "/proc mount type", str(ctx["procMount"]))
    for at, ctx in _contexts(spec):
        yield from _profiles(at, ctx)
    for i, s in enumerate((spec.get("securityContext") or {}).get("sysctls") or []):
        if isinstance(s, dict) and s.get("name") not in SAFE_SYSCTLS:
            yield Violation(f"securityContext.sysctls[{i}]", "sysctls", str(s.get("name")))


def _profiles(at: str, ctx: dict[str, Any]) -> Iterator[Violation]:
    """seccomp, AppArmor, SELinux and Windows HostProcess of one securityContext (baseline)."""
    if (ctx.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield Violation(f"{at}.seccompProfile.type", "seccomp", "Unconfined")
    if (ctx.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield Violation(f"{at}.appArmorProfile.type", "AppArmor", "Unconfined")
    se = ctx.get("seLinuxOptions") or {}
    if se.get("type", "") not in SELINUX_TYPES:
        yield Violation(f"{at}.seLinuxOptions.type", "SELinux", str(se["type"]))
    for field in ("user", "role"):
        if se.get(field):
            yield Violation(f"{at}.seLinuxOptions.{field}", "SELinux", str(se[field]))
    if (ctx.get("windowsOptions") or {}).get("hostProcess") is True:
        yield Violation(f"{at}.windowsOptions.hostProcess", "HostProcess", "hostProcess")


def _restricted(spec: dict[str, Any]) -> Iterator[Violation]:
    for i, v in enumerate(spec.get("volumes") or []):
        kinds = set(v) - _VOLUME_META if isinstance(v, dict) else set()
        for kind in sorted(kinds - RESTRICTED_VOLUMES - {"hostPath"}):  # hostPath: already a baseline violation
            yield Violation(f"volumes[{i}].{kind}", "volume types", kind)
    pod = spec.get("securityContext") or {}
    pod_non_root = pod.get("runAsNonRoot") is True
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")
    if pod.get("runAsUser") == 0:
        yield Violation("securityContext.runAsUser", "running as non-root user", "0")
    for at, c in _containers(spec):
        ctx = c.get("securityContext") or {}
        if ctx.get("allowPrivilegeEscalation") is not False:
            yield Violation(f"{at}.securityContext.allowPrivilegeEscalation", "privilege escalation", c.get("name", ""))
        if ctx.get("runAsNonRoot") is False or (not pod_non_root and ctx.get("runAsNonRoot") is not True):
            yield Violation(f"{at}.securityContext.runAsNonRoot", "running as non-root", c.get("name", ""))
        if ctx.get("runAsUser") == 0:
            yield Violation(f"{at}.securityContext.runAsUser", "running as non-root user", "0")
        seccomp = (ctx.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost") and not (pod_seccomp and seccomp is None):
            yield Violation(f"{at}.securityContext.seccompProfile.type", "seccomp", str(seccomp))
        caps = ctx.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            yield Violation(f"{at}.securityContext.capabilities.drop", "capabilities", "drop ALL")
        for cap in caps.get("add") or []:
            if cap != "NET_BIND_SERVICE" and cap in BASELINE_CAPABILITIES:  # others: already baseline
                yield Violation(f"{at}.securityContext.capabilities.add", "capabilities", str(cap))

"""No Alluxio worker starts on a tier path that is not a mount point.

The NVMe probe (nvme_probe.py) takes `forge.exa.ai/nvme` off a node whose drives are not all
mounted, and the workers select that label. That acts within a probe period and through
nfd-master; in between, or when the label is stale (nfd-master down, a mount lost while the probe
is not running), a worker created on the node would cache onto its root disk: the chart writes the
tiers as `hostPath` `DirectoryOrCreate` (0.6.54), so the kubelet makes an empty folder there.

Chart 0.6.54 has no init-container value for the worker, and Argo CD renders the chart itself, so
no kustomize patch reaches its DaemonSet (the `priority_exception` of forge.components.alluxio). So
a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1beta1, as infra_priority) gives every
worker pod of a release, when it is created, a first init container that runs `mountpoint -q` on
each of that release's SSD tier paths and exits 1, naming them, when one is not a mount point: the
pod stays in Init and never writes a byte. As the probe does, it sees each path's parent folder
of the host (read-only, HostToContainer propagation), because the tier's own hostPath volume is a
bind mount in the container, a mount point whatever is under it. A JSON patch, not an apply
configuration: the API server refuses apply configurations that set atomic lists (a container's
`command`). The image is the worker's own, pinned in charts/versions.yaml (`alluxio`), whose
util-linux has `mountpoint`.
"""
from __future__ import annotations

import posixpath
from typing import Any

from forge.facts import versions
from forge.components.admission import mutating_binding, mutating_policy

KINDS = (("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
         ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"))
INIT_CONTAINER = "forge-tier-mounts"
HOST = "/host"
VOLUME_PREFIX = "forge-tier-parent-"
IMAGE = "alluxio"  # charts/versions.yaml: the workers' own image


def policy_name(release: str) -> str:
    return f"forge-{release}-worker-mounts"


def parents(paths: list[str]) -> list[str]:
    return sorted({posixpath.dirname(p.rstrip("/")) or "/" for p in paths})


def script(paths: list[str]) -> str:
    """Every tier path a mount point (seen under HOST), else exit 1 naming the ones that are not."""
    listed = " ".join(f"{HOST}{p}" for p in paths)
    return "\n".join([
        "set -u",
        "missing=",
        f"for p in {listed}; do mountpoint -q \"$p\" || missing=\"$missing ${{p#{HOST}}}\"; done",
        "if [ -n \"$missing\" ]; then",
        "  echo \"forge: Alluxio tier path(s)$missing not mounted: refusing to cache onto the root disk "
        "(mount the NVMe drives, then delete this pod)\" >&2",
        "  exit 1",
        "fi",
    ]) + "\n"


def _cel(value: str) -> str:
    """A CEL string literal (single-quoted; backslashes, quotes and newlines escaped)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _container(paths: list[str], image: str) -> str:
    c = "Object.spec.initContainers"
    mounts = ", ".join(f"{c}.volumeMounts{{name: {_cel(f'{VOLUME_PREFIX}{i}')}, mountPath: {_cel(HOST + parent)}, "
                       f"readOnly: true, mountPropagation: 'HostToContainer'}}" for i, parent in enumerate(parents(paths)))
    return (f"{c}{{name: {_cel(INIT_CONTAINER)}, image: {_cel(image)}, "
            f"command: ['/bin/bash', '-c', {_cel(script(paths))}], volumeMounts: [{mounts}], "
            f"securityContext: {c}.securityContext{{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, "
            f"capabilities: {c}.securityContext.capabilities{{drop: ['ALL']}}}}}}")


def policy(release: str, selector: dict[str, str], paths: list[str]) -> dict[str, Any]:
    # First of the pod's init containers (inserted at 0; an empty list made first when it has none).
    # Inline: policy variables cannot name the Object types of a patch, and cel.bind is not there.
    first = ("(has(object.spec.initContainers) ? [] : [JSONPatch{op: 'add', path: '/spec/initContainers', value: []}]) + "
             f"[JSONPatch{{op: 'add', path: '/spec/initContainers/0', value: {_container(paths, versions.image(IMAGE).ref)}}}]")
    volumes = ", ".join(f"JSONPatch{{op: 'add', path: '/spec/volumes/-', value: Object.spec.volumes{{name: {_cel(f'{VOLUME_PREFIX}{i}')}, "
                        f"hostPath: Object.spec.volumes.hostPath{{path: {_cel(parent)}, type: 'Directory'}}}}}}"
                        for i, parent in enumerate(parents(paths)))
    patch = f"{first} + [{volumes}]"
    selects = " && ".join(f"'{k}' in object.metadata.labels && object.metadata.labels['{k}'] == '{v}'" for k, v in sorted(selector.items()))
    return mutating_policy(policy_name(release), [{"name": "alluxio-worker", "expression": f"has(object.metadata.labels) && {selects}"}],
                           [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}])


def objects(namespace: str, workers: list[tuple[str, dict[str, str], list[str]]]) -> list[dict[str, Any]]:
    """A policy and its binding per worker release: (release, its worker pods' labels, its tier paths)."""
    out: list[dict[str, Any]] = []
    for release, selector, paths in workers:
        if paths:
            out += [policy(release, selector, paths), mutating_binding(policy_name(release), {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [namespace]}]})]
    return out

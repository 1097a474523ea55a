"""After a scenario: everything it left in the project namespaces deleted, and a wait until the
cluster is idle again (no pod or Workload there, and every ClusterQueue reserving nothing), so
the next scenario starts as the first did.

It is done as Kueue's own integration suites clean up between tests (test/util:
DeleteAllPodsInNamespace, DeleteWorkloadsInNamespace): one DeleteCollection per namespace and
kind, then Kueue's finalizers taken off what still stands (`kueue.x-k8s.io/managed` on pods,
`kueue.x-k8s.io/resource-in-use` on Workloads). Kueue releases the quota when it sees the Workload
deleted, whoever took the finalizer off. Pods go with no grace period: no kubelet would run their
termination, and kwok deletes a terminating pod at once anyway. Waiting instead for the
controllers' own deletion chain (the owner, the garbage collector, Kueue's finalizer, kwok) took
up to 50 s after a 3 s scenario.
"""
from __future__ import annotations

import time
from typing import Any

from forge.twin.kube import Kube

KUEUE = "kueue.x-k8s.io/v1beta2"
POD_FINALIZER = "kueue.x-k8s.io/managed"
WORKLOAD_FINALIZER = "kueue.x-k8s.io/resource-in-use"
POLL_SECONDS = 0.2
# (api, kind) a scenario submits, deleted by its label; then whatever they made
SUBMITTED = (("kubeflow.org/v1", "PyTorchJob"), ("v1", "Pod"), (KUEUE, "Workload"), ("v1", "PersistentVolumeClaim"))
LEFT = (("v1", "Pod", POD_FINALIZER), (KUEUE, "Workload", WORKLOAD_FINALIZER))


def delete_submitted(kube: Kube, projects: set[str], selector: str) -> None:
    for ns in sorted(projects):
        for api, kind in SUBMITTED:
            kube.delete_all(api, kind, ns, selector, grace_seconds=0 if kind == "Pod" else None)
        for api, kind, _ in LEFT:  # the pods and Workloads the jobs made (no scenario label)
            kube.delete_all(api, kind, ns, grace_seconds=0 if kind == "Pod" else None)


def _left(kube: Kube, projects: set[str]) -> int:
    """Pods and Workloads still in the project namespaces; Kueue's finalizer taken off those
    being deleted."""
    count = 0
    for ns in sorted(projects):
        for api, kind, finalizer in LEFT:
            listed = kube.list(api, kind, ns)
            count += len(listed)
            for obj in listed:
                kube.remove_finalizer(api, kind, obj, finalizer)
            if any(not obj["metadata"].get("deletionTimestamp") for obj in listed):
                # made after the collection was deleted (a job's controller racing it)
                kube.delete_all(api, kind, ns, grace_seconds=0 if kind == "Pod" else None)
    return count


def _busy_queues(kube: Kube) -> list[str]:
    """ClusterQueues whose status still counts a Workload (Kueue has not caught up yet)."""
    out = []
    for cq in kube.list(KUEUE, "ClusterQueue"):
        status: dict[str, Any] = cq.get("status") or {}
        if any(status.get(k) for k in ("reservingWorkloads", "admittedWorkloads", "pendingWorkloads")):
            out.append(cq["metadata"]["name"])
    return out


def clean(kube: Kube, projects: set[str], selector: str, seconds: float) -> tuple[float, str]:
    """(seconds it took, what is still there: empty when idle within `seconds`)."""
    started = time.monotonic()
    delete_submitted(kube, projects, selector)
    while True:
        left = _left(kube, projects)
        busy = [] if left else _busy_queues(kube)
        if not left and not busy:
            return time.monotonic() - started, ""
        if time.monotonic() - started > seconds:
            what = f"{left} pods and Workloads" if left else f"ClusterQueues {', '.join(busy[:5])} still count Workloads"
            return time.monotonic() - started, what
        time.sleep(POLL_SECONDS)


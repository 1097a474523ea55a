"""A pre-empted plain pod counts though its Workload is gone by the next poll.

Kueue evicts a plain pod by deleting it, and its Workload goes with it; on a busy machine that
happened between two polls of the box's judge, which then saw "0 pre-empted" for a pre-emption
that had happened (a fresh-clone CI run: h200/urgent-finetune-preempts-batch, after 180 s). Kueue's
scheduler records an Event (reason Preempted) on the Workload, which outlives it: the judge reads
those too. A stand-in for the API server here (no box needed): the Event's shape is what Kueue
v0.19.2 writes (pkg/scheduler/preemption: recorder.Eventf(target, nil, Normal, "Preempted", ...)).
"""
from __future__ import annotations

from types import SimpleNamespace

from forge.twin.run import KUEUE, Runner, Submitted
from forge.twin.scenario import Expect, Job

NS = "embeddings-production"


class FakeKube:
    def __init__(self) -> None:
        self.workloads: list[dict] = []
        self.events: list[dict] = []

    def list(self, api_version, kind, namespace=None, selector=None):
        return {("v1", "Namespace"): [{"metadata": {"name": NS}}], (KUEUE, "Workload"): self.workloads,
                ("v1", "Event"): self.events}.get((api_version, kind), [])


def admitted_workload(pod_uid: str, uid: str) -> dict:
    return {"metadata": {"uid": uid, "ownerReferences": [{"uid": pod_uid}]},
            "status": {"conditions": [{"type": "Admitted", "status": "True"}]}}


def test_a_preemption_event_on_a_workload_gone_since_counts():
    kube = FakeKube()
    runner = Runner(kube, SimpleNamespace(name="h200"), None, lambda line: None)  # only the cluster's name is read
    sub = Submitted(Job(name="embed", kind="Pod", project="embeddings", domain="production", count=2,
                        resources={"nvidia.com/gpu": "8"}),
                    [{"kind": "Pod", "metadata": {"uid": "pod-a"}}, {"kind": "Pod", "metadata": {"uid": "pod-b"}}])
    kube.workloads = [admitted_workload("pod-a", "wl-a"), admitted_workload("pod-b", "wl-b")]
    expect = Expect(job="embed", preempted=1)
    assert runner.judge(expect, {"embed": sub}, {}) == "job embed: 0 pre-empted, want at least 1"

    kube.workloads = [admitted_workload("pod-a", "wl-a")]  # pod-b evicted: its Workload gone with it
    kube.events = [{"reason": "Preempted", "involvedObject": {"kind": "Workload", "uid": "wl-b"}},
                   {"reason": "Preempted", "involvedObject": {"kind": "Pod", "uid": "wl-a"}}]  # not a Workload's
    assert runner.judge(expect, {"embed": sub}, {}) is None
    assert runner.preempted == {"pod-b"}

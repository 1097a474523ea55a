"""The box applies Kueue's and the training operators' CRDs when it starts (their controllers need
them first), and every other Application's while those controllers start. The sync after it does not send those again when they are identical, as a real sync
applies each CRD once, and does send one that differs: the box never keeps a stale CRD."""
from __future__ import annotations

import copy

from forge.twin.box import box_syncer
from forge.twin.pins import argocd_crds_dir
from forge.twin.sources import Application, Item, applications
from tests.twin.conftest import say

CRD = "apiextensions.k8s.io/v1", "CustomResourceDefinition"


def _as_applied(boxes, plan, name):
    """The start CRD as the sync gives it: (its Application's name, the object)."""
    for app in applications(boxes.root, plan, boxes.upstream, argocd_crds_dir(boxes.root, boxes.upstream)):
        for item in app.items:
            if item.obj.get("kind") == "CustomResourceDefinition" and item.obj["metadata"]["name"] == name:
                return item.obj
    raise AssertionError(f"no CRD {name} in a100's output")


def _one(obj) -> list[Application]:
    return [Application("a100-test", "test", 0, True, [Item(obj, "test", 1)])]


def test_the_sync_after_start_skips_the_start_crds_it_holds(boxes):
    plan, _, state, report = boxes.get("a100")
    crds = {i.obj["metadata"]["name"] for a in applications(boxes.root, plan, boxes.upstream, None) for i in a.items
            if i.obj.get("kind") == "CustomResourceDefinition"}
    assert len(crds) > 60 and report.already == len(crds)  # every Application's, not only the controllers' (22)
    assert state.start_crds == {}  # taken by that first sync: a later Syncer sends every CRD


def test_a_start_crd_that_differs_is_applied_again(boxes):
    plan, kube, state, _ = boxes.get("a100")
    name = "resourceflavors.kueue.x-k8s.io"  # applied when the box started
    original = _as_applied(boxes, plan, name)
    changed = copy.deepcopy(original)
    changed["metadata"].setdefault("labels", {})["forge.test/changed"] = "yes"
    syncer = box_syncer(kube, state, plan, say)
    report = syncer.sync(_one(changed))
    assert (report.applied, report.already) == (1, 0)
    assert kube.get(*CRD, name)["metadata"]["labels"]["forge.test/changed"] == "yes"
    # The same once more: this Syncer applied it, so it is held and not sent.
    again = syncer.sync(_one(changed))
    assert (again.applied, again.already) == (0, 1)
    # Back as the chart gives it (the label off), for the other tests of the session.
    assert box_syncer(kube, state, plan, say).sync(_one(original)).applied == 1
    assert "forge.test/changed" not in (kube.get(*CRD, name)["metadata"].get("labels") or {})

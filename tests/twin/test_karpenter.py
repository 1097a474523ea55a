"""Karpenter in the box (forge.twin.karpenter): the kwok provider's instance types come from the
hardware catalogue, and the real Karpenter makes a node for a pending pod and removes it after.
The box test runs only where twin.karpenter-box is built (a cloud cluster's box builds it: `forge
twin up h200-burst`, CI's `make twin TWIN_CLUSTERS=h200-burst`; a cold build takes minutes)."""
from __future__ import annotations

import sys

import pytest

from forge.fleet import load_fleet
from forge.twin import karpenter as kp
from forge.twin.binaries import Builder
from forge.twin.box import box_syncer, running_box, state_folder
from forge.twin.controllers import Controllers
from forge.twin.kube import connect
from forge.twin.pins import box_pins
from forge.twin.pki import Pki
from forge.twin.sources import applications
from tests.helpers import REPO

CLUSTER = "h200-burst"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _cluster():
    return next(p for p in load_fleet(REPO) if p.name == CLUSTER).cluster


def _built() -> bool:
    pins = box_pins(REPO)
    return (Builder(REPO, pins, say).folder(pins.program(kp.PROGRAM)) / ".complete").is_file()


def test_instance_types_are_the_catalogues_shapes_of_the_clusters_karpenter_pools():
    types = {t["name"]: t for t in kp.instance_types(_cluster())}
    assert set(types) == {"p5e.48xlarge", "m7i.8xlarge"}  # the system pool's m7i.4xlarge is no Karpenter pool's
    p5e = types["p5e.48xlarge"]
    assert p5e["resources"] == {"cpu": "192", "memory": "2048Gi", "pods": "100", "nvidia.com/gpu": "8",
                                "vpc.amazonaws.com/efa": "32"}
    # h200-spot asks spot; h200-reserved's `reserved` is offered as on-demand (kwok knows no reservations)
    assert [o["Requirements"][0]["values"] for o in p5e["offerings"]] == [["on-demand"], ["spot"]]
    assert {o["Price"] for o in p5e["offerings"]} == {0.0}  # the catalogue has no p5e price
    m7i = types["m7i.8xlarge"]
    assert [(o["Requirements"][0]["values"], o["Price"]) for o in m7i["offerings"]] == [(["on-demand"], 1.6128)]
    assert "nvidia.com/gpu" not in m7i["resources"] and m7i["resources"]["pods"] == "234"
    zones = {v for t in types.values() for o in t["offerings"] for r in o["Requirements"]
             if r["key"] == "topology.kubernetes.io/zone" for v in r["values"]}
    assert zones == {"us-west-2a"}


def test_the_box_points_node_pools_to_kwok_node_classes_and_consolidates_in_seconds():
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "p", "annotations": {"argocd.argoproj.io/sync-wave": "5"}},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "p"},
                                           "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                                             "values": ["reserved"]}]}},
                     "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"}}}
    boxed, said = kp.box_node_pool(pool)
    assert boxed["spec"]["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "p"}
    assert boxed["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": kp.CONSOLIDATE_AFTER}
    assert boxed["spec"]["template"]["spec"]["requirements"][0]["values"] == ["on-demand"]
    assert said == ("nodeClassRef EC2NodeClass -> KWOKNodeClass p; consolidateAfter 30m -> 5s; capacity-type reserved -> "
                    "on-demand (the kwok provider knows no capacity reservations)")
    assert pool["spec"]["disruption"]["consolidateAfter"] == "30m"  # forge's own object is left as rendered
    assert pool["spec"]["template"]["spec"]["requirements"][0]["values"] == ["reserved"]


def test_a_cloud_boxs_sync_applies_node_pools_pointed_to_kwok_node_classes():
    # Issue 32: the sync applied forge's NodePools as rendered (EC2NodeClass), so once Karpenter
    # ran in the box `forge twin apply` was refused: nodeClassRef is immutable.
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "p"}}}}}
    assert Controllers.wiring_for(1, karpenter=False).rewrite(pool) is None  # on premises: no Karpenter
    boxed, said = Controllers.wiring_for(1, karpenter=True).rewrite(pool)
    assert boxed["spec"]["template"]["spec"]["nodeClassRef"]["kind"] == "KWOKNodeClass" and said.startswith("nodeClassRef")


@pytest.mark.skipif(not _built(), reason="twin.karpenter-box is not built (`forge twin up h200-burst` builds it)")
def test_the_cloud_box_starts_with_the_system_pool_and_karpenter_makes_and_removes_a_spot_node(fleet_copy, upstream):
    plan = next(p for p in load_fleet(fleet_copy) if p.name == CLUSTER)
    with running_box(fleet_copy, plan, upstream, say) as state:
        assert state.karpenter and "karpenter" in state.pids
        pki = Pki(state_folder(fleet_copy, CLUSTER) / "pki")
        kube = connect(state.server, pki.token(), pki.ca)
        try:
            # only the managed node group's nodes stand: Karpenter's pools have none until pods wait
            assert sorted(n["metadata"]["name"] for n in kube.list("v1", "Node")) == ["system-001", "system-002", "system-003"]
            apps = applications(fleet_copy, plan, upstream, None)
            report = box_syncer(kube, state, plan, say).sync([kp.karpenter_app(apps)])
            assert report.refused == [] and len(report.box_only) == 3
            made = kp.burst(kube, kp.rendered_pool(apps, "h200-spot"), 8, say)
            node_names = {n["metadata"]["name"] for n in kube.list("v1", "Node", selector="karpenter.sh/nodepool=h200-spot")}
            again = box_syncer(kube, state, plan, say).sync([kp.karpenter_app(apps)])  # `forge twin apply` again
            assert again.refused == []
        finally:
            kube.close()
    assert made.node.startswith("kwok-") and made.removed_seconds is not None
    assert made.node not in node_names

"""Karpenter in the box (forge.twin.karpenter): the kwok provider's instance types come from the
hardware catalogue, and the real Karpenter makes a node for a pending pod and removes it after.
The box test runs only where twin.karpenter-box is built (`forge twin karpenter` builds it; a
cold build takes minutes): the session never builds it on its own."""
from __future__ import annotations

import sys

import pytest

from forge.fleet import load_fleet
from forge.twin import karpenter as kp
from forge.twin.binaries import Builder
from forge.twin.box import running_box, state_folder
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
    # h200-spot asks spot; h200-reserved's `reserved` is not offered (no capacity reservations in kwok)
    assert [o["Requirements"][0]["values"] for o in p5e["offerings"]] == [["spot"]]
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
            "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "p"}}},
                     "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"}}}
    boxed = kp.box_node_pool(pool)
    assert boxed["spec"]["template"]["spec"]["nodeClassRef"] == {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "p"}
    assert boxed["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": kp.CONSOLIDATE_AFTER}
    assert pool["spec"]["disruption"]["consolidateAfter"] == "30m"  # forge's own object is left as rendered


@pytest.mark.skipif(not _built(), reason="twin.karpenter-box is not built (`forge twin karpenter h200-burst` builds it)")
def test_a_pending_pod_makes_a_nodeclaim_and_a_ready_node_and_both_go_after_it(fleet_copy, upstream):
    plan = next(p for p in load_fleet(fleet_copy) if p.name == CLUSTER)
    with running_box(fleet_copy, plan, upstream, say) as state:
        pki = Pki(state_folder(fleet_copy, CLUSTER) / "pki")
        kube = connect(state.server, pki.token(), pki.ca)
        apps = applications(fleet_copy, plan, upstream, None)
        running = kp.start_karpenter(fleet_copy, plan, kube, state_folder(fleet_copy, CLUSTER),
                                     int(state.server.rpartition(":")[2]), apps, say)
        try:
            assert running.removed_nodes > 0  # the box's own nodes of the pools are handed over
            assert "h200-spot" in running.pools
            made = kp.burst(kube, kp.rendered_pool(apps, "h200-spot"), 8, say)
            node_names = {n["metadata"]["name"] for n in kube.list("v1", "Node", selector="karpenter.sh/nodepool=h200-spot")}
        finally:
            running.close()
            kube.close()
    assert made.node.startswith("kwok-") and made.removed_seconds is not None
    assert made.node not in node_names

"""Faults planted in real rendered objects that forge's static validation lets through and a real
kube-apiserver 1.34 refuses (the issue found 26 of 35 such): each is applied to the box as Argo CD
would apply it, and refused with the server's own words."""
from __future__ import annotations

import copy

import pytest

from forge.twin.kube import ApiError
from forge.validate.engine import Report
from forge.validate.run import upstream_crds, validate_cluster
from tests.twin.conftest import say  # noqa: F401  (the boxes fixture comes from conftest)


def _first(boxes, component: str, kind: str) -> dict:
    plan, _, _, _ = boxes.get("h200")
    from forge.twin.sources import applications

    apps = applications(boxes.root, plan, boxes.upstream, None)
    return copy.deepcopy(next(i.obj for a in apps if a.component == component for i in a.items if i.obj.get("kind") == kind))


def _pod_template(boxes):
    obj = _first(boxes, "flyte", "PodTemplate")
    obj["template"]["spec"]["containers"].append(copy.deepcopy(obj["template"]["spec"]["containers"][0]))
    return obj  # two containers named alike: a duplicate key of a list-map


def _label(boxes):
    obj = _first(boxes, "flyte", "ResourceQuota")
    obj["metadata"]["labels"]["forge.exa.ai/cluster"] = "h200/" + "x" * 70
    return obj


def _quota(boxes):
    obj = _first(boxes, "flyte", "ResourceQuota")
    obj["spec"]["hard"] = {"requests.memory": "4Gii"}
    return obj


def _service_port(boxes):
    obj = _first(boxes, "flyte", "Service")
    obj["spec"]["ports"][0]["name"] = "Metrics_Port"
    return obj


def _namespace(boxes):
    obj = _first(boxes, "flyte", "ResourceQuota")
    obj["metadata"]["namespace"] = "nobody-creates-this"
    return obj


FAULTS = [
    (_pod_template, "duplicate entries for key [name=\"default\"]"),
    (_label, "must be no more than 63 characters"),
    (_quota, "unable to parse quantity's suffix"),
    (_service_port, "a lowercase RFC 1123 label"),
    (_namespace, 'namespaces "nobody-creates-this" not found'),
]


@pytest.mark.parametrize("plant, said", FAULTS, ids=[f.__name__.strip("_") for f, _ in FAULTS])
def test_the_server_refuses_what_forge_validate_let_through(boxes, plant, said):
    plan, kube, _, _ = boxes.get("h200")
    bad = plant(boxes)
    with pytest.raises(ApiError) as refused:
        kube.apply(bad)
    assert said in refused.value.message, refused.value.message
    # The static check of the same object (schemas, CRDs, policies) finds nothing, or not this.
    report = Report()
    validate_cluster(plan.cluster, list(plan.components), {"flyte": [bad]}, upstream_crds(boxes.root, boxes.upstream),
                     boxes.upstream, report)
    assert not [f for f in report.failures if said.lower() in f.line().lower()]

"""forge's own pod specs (PodTemplates, Jobs, DaemonSets it writes, not the charts') carry a pod
securityContext, a hardened container securityContext, and CPU and memory requests and limits."""
from __future__ import annotations

import pytest
import yaml

from tests.helpers import REPO

WORKLOADS = ("PodTemplate", "Job", "DaemonSet", "Deployment", "StatefulSet", "CronJob")


def pod_specs(cluster: str):
    for path in sorted((REPO / "overlays" / cluster).glob("*/*.yaml")):  # examples/ are never synced
        if path.name == "kustomization.yaml" or (path.name.startswith("values") and path.suffix == ".yaml"):  # values files: not objects
            continue
        obj = yaml.safe_load(path.read_text())
        if obj["kind"] in WORKLOADS:
            yield path.relative_to(REPO).as_posix(), obj["template"]["spec"] if obj["kind"] == "PodTemplate" else obj["spec"]["template"]["spec"]


def problems(where: str, spec: dict) -> list[str]:
    out = []
    if (spec.get("securityContext") or {}).get("seccompProfile", {}).get("type") != "RuntimeDefault":
        out.append(f"{where}: pod securityContext without seccompProfile RuntimeDefault")
    for c in spec["containers"]:
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False or "ALL" not in (sc.get("capabilities") or {}).get("drop", []):
            out.append(f"{where}: container {c['name']} may escalate or keeps capabilities")
        for field in ("requests", "limits"):
            for resource in ("cpu", "memory"):
                if resource not in (c.get("resources") or {}).get(field, {}):
                    out.append(f"{where}: container {c['name']} has no {resource} {field[:-1]}")
    return out


@pytest.mark.parametrize("cluster", ["a100", "h200"])
def test_forges_own_pod_specs_are_hardened_and_sized(cluster):
    found = list(pod_specs(cluster))
    kinds = {where.split("/")[3].split("-")[0] for where, _ in found}
    assert {"podtemplate", "job", "daemonset"} <= kinds
    assert [p for where, spec in found for p in problems(where, spec)] == []


def test_the_check_can_fail():
    bare = {"containers": [{"name": "x", "resources": {"requests": {"cpu": "1"}}}]}
    assert problems("t", bare) == ["t: pod securityContext without seccompProfile RuntimeDefault",
                                   "t: container x may escalate or keeps capabilities", "t: container x has no memory request",
                                   "t: container x has no cpu limit", "t: container x has no memory limit"]

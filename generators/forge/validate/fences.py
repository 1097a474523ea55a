"""What each Application may sync, and in which order, over one cluster's output:

* every object is of a kind, and in a namespace, that its Application's AppProject allows
  (forge.argocd.projects): Argo CD refuses the whole sync otherwise. In `forge validate` the
  projects and Applications are the rendered bootstrap's; in `--hydrated` the derived ones, over
  everything the charts render too (`ProjectFence`).
* an Application whose objects are custom resources of another Application's CRDs comes in a
  later sync wave; one that renders any custom resource retries without limit (forge.argocd.order).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from forge.argocd.bootstrap import app_name
from forge.argocd.order import UNLIMITED, providers
from forge.argocd.projects import fence_problems, group_of
from forge.components.base import Component
from forge.model.cluster import ClusterModel
from forge.validate.failure import Failure
from forge.validate.isolation import BOOTSTRAP
from forge.validate.objects import object_id
from forge.validate.engine import Report

WAVE = "argocd.argoproj.io/sync-wave"


def _by_name(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {(o.get("metadata") or {}).get("name"): o for o in objs if o.get("kind") == kind}


def rendered_fences(cluster: ClusterModel, components: list[Component],
                    objects: Mapping[str, list[dict[str, Any]]]) -> list[Failure]:
    """Every rendered object against the rendered AppProject of the Application that syncs it."""
    boot = objects.get(BOOTSTRAP, [])
    projects, apps = _by_name(boot, "AppProject"), _by_name(boot, "Application")
    owners = {c.name: app_name(cluster, c.name) for c in components}
    owners[BOOTSTRAP] = app_name(cluster, "root")
    out = []
    for component, objs in objects.items():
        app = apps.get(owners.get(component, ""))
        if app is None:
            continue  # no Application: isolation.application_projects and the bootstrap tests say so
        spec = app.get("spec") or {}
        project = projects.get(spec.get("project"))
        if project is None:
            out.append(Failure(cluster.name, component, object_id(app), "spec.project",
                               f"AppProject '{spec.get('project')}' is not in the bootstrap: Argo CD would sync nothing"))
            continue
        destination = (spec.get("destination") or {}).get("namespace") or ""
        for obj in objs:
            out += [Failure(cluster.name, component, object_id(obj), field, reason)
                    for field, reason in fence_problems(obj, project, destination, components)]
    return out


def wave_order(cluster: ClusterModel, components: list[Component], objects: Mapping[str, list[dict[str, Any]]]) -> list[Failure]:
    apps = _by_name(objects.get(BOOTSTRAP, []), "Application")
    by_group = providers(components)

    def wave(name: str) -> int:
        return int((((apps.get(app_name(cluster, name)) or {}).get("metadata") or {}).get("annotations") or {}).get(WAVE, 0))

    out = []
    for c in components:
        app = apps.get(app_name(cluster, c.name))
        if app is None:
            continue
        groups = {g for g in map(group_of, objects.get(c.name, [])) if g in by_group}
        needs = sorted({(g, by_group[g].name) for g in groups if by_group[g] is not c})
        limit = (((app.get("spec") or {}).get("syncPolicy") or {}).get("retry") or {}).get("limit")
        for group, provider in needs:
            if wave(provider) >= wave(c.name):
                out.append(Failure(cluster.name, BOOTSTRAP, object_id(app), f"metadata.annotations.{WAVE}",
                                   f"wave {wave(c.name)} is not after {provider}'s ({wave(provider)}), whose CRDs ({group}) "
                                   f"{c.name}'s objects need"))
        if groups and limit != UNLIMITED:
            out.append(Failure(cluster.name, BOOTSTRAP, object_id(app), "spec.syncPolicy.retry.limit",
                               f"retry limit is {limit}, want {UNLIMITED}: {c.name} renders custom resources of "
                               f"{', '.join(sorted({by_group[g].name for g in groups}))} and must not give up before "
                               "their CRDs and operator exist"))
    return out


@dataclass
class ProjectFence:
    """Plug-in (hydrated): a component's objects against its derived AppProject."""

    projects: Mapping[str, dict[str, Any]]  # component -> AppProject
    destinations: Mapping[str, str]  # component -> its Application's namespace
    components: list[Component]

    def __call__(self, report: Report, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        project = self.projects.get(component)
        if project is None:
            return
        for obj in objects:
            report.failures += [Failure(cluster, component, object_id(obj), field, reason)
                                for field, reason in fence_problems(obj, project, self.destinations[component], self.components)]

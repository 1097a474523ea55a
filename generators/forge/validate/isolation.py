"""Cluster-wide policies of least exposure, over one cluster's rendered output (all components):

* every Namespace forge ships has a default-deny ingress NetworkPolicy (forge.components.network):
  a namespace without one accepts traffic from every pod of the cluster;
* every child Application names its component's AppProject, and the root Application the
  bootstrap project: an Application in another project (`default` allows everything) would
  escape what the AppProject permits.
"""
from __future__ import annotations

from typing import Any, Mapping

from forge.components.network import default_deny
from forge.validate.failure import Failure
from forge.validate.objects import object_id

BOOTSTRAP = "argocd"  # the rendered bootstrap's component name (forge.render.overlays.BOOTSTRAP)


def namespace_isolation(cluster: str, objects: Mapping[str, list[dict[str, Any]]]) -> list[Failure]:
    denied = {(o.get("metadata") or {}).get("namespace") for objs in objects.values() for o in objs if default_deny(o)}
    return [Failure(cluster, component, object_id(obj), "",
                    f"namespace {name} has no default-deny ingress NetworkPolicy (podSelector {{}}, policyTypes [Ingress], "
                    "no rule): every pod of the cluster can reach its pods")
            for component, objs in objects.items() for obj in objs
            if obj.get("kind") == "Namespace" and (name := (obj.get("metadata") or {}).get("name")) not in denied]


def application_projects(cluster: str, objects: Mapping[str, list[dict[str, Any]]], projects: Mapping[str, str],
                         root: str, root_project: str) -> list[Failure]:
    """`projects`: child Application name -> its component's project; the root (`root`) names
    the bootstrap project. An Application that is neither is a failure whatever it names."""
    out = []
    for obj in objects.get(BOOTSTRAP, []):
        if obj.get("kind") != "Application":
            continue
        name = (obj.get("metadata") or {}).get("name")
        want = root_project if name == root else projects.get(name)
        have = (obj.get("spec") or {}).get("project")
        if want is None:
            out.append(Failure(cluster, BOOTSTRAP, object_id(obj), "spec.project",
                               f"Application '{name}' belongs to no component: only the root and one Application per "
                               "component, each in its own AppProject, bound what the repo deploys"))
        elif have != want:
            out.append(Failure(cluster, BOOTSTRAP, object_id(obj), "spec.project",
                               f"project is '{have}', want '{want}': only the AppProjects forge bootstraps bound what the repo deploys"))
    return out

"""Rules that keep an inventory from widening what forge's output may reach (issue 26, scope):
a Flyte project-domain namespace is never a system or reserved one, and each cluster's Argo CD
projects are its own (no two clusters share one; the schema refuses `default` and wildcards)."""
from __future__ import annotations

from typing import Any, Mapping

from forge.components import Component
from forge.components.flyte.plan import namespace_for
from forge.errors import Problem
from forge.inventory.loader import LoadedInventory

BOOTSTRAP_SUFFIX = "-bootstrap"  # forge.argocd.bootstrap_project_name
# Kubernetes' own namespaces and prefix, and Argo CD's default project's namespace.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PREFIXES = ("kube-", "openshift-")


def reserved_namespaces(loaded: LoadedInventory, known: Mapping[str, Component]) -> dict[str, str]:
    """Namespace -> whose it is: Kubernetes', Argo CD's, and every component's own."""
    reserved = {ns: "Kubernetes'" for ns in SYSTEM_NAMESPACES}
    reserved[loaded.inventory.cluster.argocd.namespace] = "Argo CD's"
    reserved.update({c.namespace: f"component {c.name}'s" for c in known.values() if getattr(c, "namespace", None)})
    return reserved


def flyte_namespaces(loaded: LoadedInventory, given: Mapping[str, Any], known: Mapping[str, Component]) -> list[Problem]:
    """A project-domain namespace (`<project>-<domain>`) forge would write a Namespace, a quota
    and policies into, and add to the AppProject, must be none of the reserved ones."""
    flyte = given.get("flyte")
    if flyte is None:
        return []
    reserved = reserved_namespaces(loaded, known)
    problems = []
    for i, project in enumerate(flyte.projects):
        for domain in flyte.domains:
            ns = namespace_for(project.name, domain.name)
            owner = reserved.get(ns) or ("Kubernetes'" if ns.startswith(SYSTEM_PREFIXES) else None)
            if owner:
                problems.append(loaded.problem(
                    ("components", "flyte", "projects", i, "name"),
                    f"project '{project.name}' with domain '{domain.name}' makes the namespace '{ns}', which is {owner}: "
                    f"forge would write a quota and policies into it and add it to the AppProject; rename the project "
                    f"(project-domain namespaces may not be {', '.join(SYSTEM_NAMESPACES)}, kube-* or a component's own)"))
    return problems


def shared_projects(loaded: list[LoadedInventory]) -> list[Problem]:
    """Each cluster's Argo CD projects (<project> and <project>-bootstrap) are its own: a project
    two clusters share would let one cluster's Applications deploy where the other's may."""
    first: dict[str, LoadedInventory] = {}
    problems = []
    for inv in loaded:
        project = inv.inventory.cluster.argocd.project
        for name in (project, project + BOOTSTRAP_SUFFIX):
            other = first.get(name)
            if other is not None and other is not inv:
                problems.append(inv.problem(
                    ("cluster", "argocd", "project"),
                    f"Argo CD project '{name}' is also cluster '{other.inventory.cluster.name}''s "
                    f"({other.file}:{other.line_of(('cluster', 'argocd', 'project'))}): each cluster has projects of its "
                    "own (forge also makes <project>-bootstrap); name it after the cluster"))
                break
            first.setdefault(name, inv)
    return problems

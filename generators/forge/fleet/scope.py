"""Rules that keep an inventory from widening what forge's output may reach (issue 26, scope):
a Flyte project-domain namespace is never a system or reserved one, and each cluster's Argo CD
projects are its own (no two clusters share one; the schema refuses `default` and wildcards)."""
from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from forge.pod_scripts import prereq_check
from forge.components import Component
from forge.components.flyte.plan import namespace_for
from forge.errors import Problem
from forge.inventory.loader import LoadedInventory

BOOTSTRAP_SUFFIX = "-bootstrap"  # forge.argocd.bootstrap.bootstrap_project_name
# Kubernetes' own namespaces and prefix.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PREFIXES = ("kube-", "openshift-")
INGRESS = "the ingress controller's (cluster.ingress_namespace)"


def reserved_namespaces(loaded: LoadedInventory, given: Mapping[str, Any], known: Mapping[str, Component]) -> dict[str, str]:
    """Namespace -> whose it is, from where each is kept: Kubernetes', Argo CD's and the ingress
    controller's (the inventory's fields), the prerequisites' (forge.pod_scripts.prereq_check), and every
    namespace a component deploys into (its own and `other_namespaces`, whether it runs here or
    not) or names through its settings (`given`: the typed settings of the inventory's blocks;
    a component without one, its defaults).
    The first owner names a namespace two share."""
    cluster = loaded.inventory.cluster
    reserved = {ns: "Kubernetes'" for ns in SYSTEM_NAMESPACES}
    reserved.setdefault(cluster.argocd.namespace, "Argo CD's")
    reserved.setdefault(cluster.ingress_namespace, INGRESS)  # the prerequisite IngressClass's controller
    reserved.setdefault(prereq_check.VPC_CNI_NAMESPACE, "the EKS VPC CNI's (a prerequisite)")
    for c in known.values():
        for ns in (c.namespace, *c.other_namespaces):
            reserved.setdefault(ns, f"component {c.name}'s")
    for c in known.values():
        settings = given[c.name] if c.name in given else _defaults(c)
        if settings is not None:
            for ns, setting in c.settings_namespaces(settings).items():
                reserved.setdefault(ns, f"component {c.name}'s ({setting})")
    return reserved


def _defaults(c: Component) -> Any:
    """The settings a component without a block runs on (forge.fleet), None when it needs a block."""
    try:
        return c.Settings.model_validate({})
    except ValidationError:
        return None


def flyte_namespaces(loaded: LoadedInventory, given: Mapping[str, Any], known: Mapping[str, Component]) -> list[Problem]:
    """A project-domain namespace (`<project>-<domain>`) forge would write a Namespace, a quota
    and policies into, and add to the AppProject, must be none of the reserved ones."""
    flyte = given.get("flyte")
    if flyte is None:
        return []
    reserved = reserved_namespaces(loaded, given, known)
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
                    f"(project-domain namespaces may not be Kubernetes' ({', '.join(SYSTEM_NAMESPACES)}, kube-*), "
                    "Argo CD's, the ingress controller's, a prerequisite's or one a component uses)"))
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

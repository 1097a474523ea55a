"""One AppProject per component Application, exactly as wide as what that Application renders:

- `sourceRepos`: this repo, the component's pinned chart repository, its upstream kustomize repo;
- `destinations`: the component's namespaces (`Component.namespaces`), on the cluster's server;
- `clusterResourceWhitelist` / `namespaceResourceWhitelist`: the kinds of the objects forge
  writes into its overlay (its manifests, ExternalSecrets, NetworkPolicies, the base's
  Namespace), plus the kinds its chart renders, which forge's own render cannot show: declared
  on the component (`Component.cluster_kinds`, `Component.chart_kinds`), from the chart's
  templates at the pinned version. `forge validate` (rendered and hydrated) fails on any object
  whose kind or namespace its Application's project does not allow (forge.validate.fences).

No project lists Argo CD's own kinds, `*`, or a namespace the component does not deploy into.
"""
from __future__ import annotations

from typing import Any, Iterable

from forge.components import network
from forge.components.base import Component
from forge.components.external_secrets import external_secrets_for
from forge.model.cluster import ClusterModel
from forge.facts.versions import ChartPin

Kind = tuple[str, str]  # (API group, kind)

# Built-in cluster-scoped kinds (Kubernetes 1.34); a custom resource is cluster-scoped when a
# component declares it in `cluster_kinds`.
CLUSTER_SCOPED: frozenset[Kind] = frozenset({
    ("", "Namespace"), ("", "Node"), ("", "PersistentVolume"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"), ("apiregistration.k8s.io", "APIService"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
    ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"), ("networking.k8s.io", "IngressClass"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"), ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
})


def project_name(cluster: ClusterModel, component: Component) -> str:
    return f"{cluster.settings.argocd.project}-{component.name}"


def group_of(obj: dict[str, Any]) -> str:
    api = str(obj.get("apiVersion") or "")
    return api.rpartition("/")[0] if "/" in api else ""


def kind_of(obj: dict[str, Any]) -> Kind:
    return group_of(obj), str(obj.get("kind") or "")


def cluster_scoped(kind: Kind, components: Iterable[Component]) -> bool:
    return kind in CLUSTER_SCOPED or any(kind in c.cluster_kinds for c in components)


def own_objects(cluster: ClusterModel, component: Component, components: list[Component]) -> list[dict[str, Any]]:
    """What forge writes into the component's overlay (as forge.generate.tree does)."""
    return (component.manifests(cluster) + external_secrets_for(cluster, component)
            + network.policies(component, cluster, components))


def component_kinds(cluster: ClusterModel, component: Component, components: list[Component]) -> tuple[set[Kind], set[Kind]]:
    """(cluster-scoped, namespaced) kinds the component's Application renders."""
    found = {kind_of(o) for o in own_objects(cluster, component, components)}
    if component.owned_namespaces(cluster):
        found.add(("", "Namespace"))  # base/<component>/
    found |= set(component.cluster_kinds) | set(component.chart_kinds(cluster))
    scoped = {k for k in found if cluster_scoped(k, components)}
    return scoped, found - scoped


def source_repos(cluster: ClusterModel, component: Component, pin: ChartPin | None) -> list[str]:
    repos = {cluster.settings.git.repo_url}
    if pin:
        repos.add(pin.argocd_repo)
    if remote := component.remote_base(cluster):
        repos.add(remote.repo_url)
    return sorted(repos)


def component_project(cluster: ClusterModel, component: Component, components: list[Component],
                      pin: ChartPin | None) -> dict[str, Any]:
    argo = cluster.settings.argocd
    scoped, namespaced = component_kinds(cluster, component, components)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": project_name(cluster, component), "namespace": argo.namespace,
                     "annotations": {"argocd.argoproj.io/sync-wave": "-90"}},
        "spec": {
            "description": f"{component.name} of cluster {cluster.name}: the kinds and namespaces it renders, nothing else",
            "sourceRepos": source_repos(cluster, component, pin),
            "destinations": [{"server": argo.destination.server, "namespace": ns}
                             for ns in sorted(set(component.namespaces(cluster)))],
            "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in sorted(scoped)],
            "namespaceResourceWhitelist": [{"group": g, "kind": k} for g, k in sorted(namespaced)],
            "orphanedResources": {"warn": True},
        },
    }


def _allowed(entries: list[dict[str, Any]], kind: Kind) -> bool:
    return any(e.get("group") in (kind[0], "*") and e.get("kind") in (kind[1], "*") for e in entries or [])


def fence_problems(obj: dict[str, Any], project: dict[str, Any], destination: str,
                   components: Iterable[Component]) -> list[tuple[str, str]]:
    """Why Argo CD would refuse `obj` in an Application of `project` whose destination namespace
    is `destination` (an object without a namespace goes there), as (field, reason); [] if allowed."""
    spec = project.get("spec") or {}
    name = (project.get("metadata") or {}).get("name")
    kind = kind_of(obj)
    shown = f"{kind[0] or 'core'}/{kind[1]}"
    if cluster_scoped(kind, components):
        if _allowed(spec.get("clusterResourceWhitelist"), kind):
            return []
        return [("kind", f"cluster-scoped {shown} is not in AppProject {name}'s clusterResourceWhitelist: Argo CD would "
                         "refuse the sync (declare it in the component's cluster_kinds if its chart renders it)")]
    out = []
    if not _allowed(spec.get("namespaceResourceWhitelist"), kind):
        out.append(("kind", f"{shown} is not in AppProject {name}'s namespaceResourceWhitelist: Argo CD would refuse the "
                            "sync (declare it in the component's namespaced_kinds if its chart renders it)"))
    ns = (obj.get("metadata") or {}).get("namespace") or destination
    allowed = {d.get("namespace") for d in spec.get("destinations") or []}
    if ns not in allowed and "*" not in allowed:
        out.append(("metadata.namespace", f"namespace '{ns}' is not a destination of AppProject {name}: Argo CD would "
                                          "refuse the sync (list it in the component's namespaces())"))
    return out

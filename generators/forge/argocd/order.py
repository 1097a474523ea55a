"""How the root Application orders a cluster's Applications, and how each retries.

The root syncs, in sync-wave order: Argo CD's configuration (wave -100, forge.argocd.config), the
AppProjects (-90), then the child Applications by their component's `sync_wave`. With the
Application health check in `argocd-cm`, the root waits for every Application of a wave to be
Healthy before it creates the next wave's, so a wave's CRDs exist before the next one syncs.

Retries: an Application that renders custom resources whose CRDs another Application installs
(a ServiceMonitor, an ExternalSecret, a NodeFeatureRule) must come in a later wave than that one.
Every Application that renders custom resources, of another's CRDs or of its own (Kueue's
ClusterQueues and LocalQueues, which Kueue's webhook must be up to admit), retries without limit
(`limit: -1`, backing off to 5 minutes): it cannot give up before the CRDs and their operator
exist. The others retry 10 times (about 30 minutes), then report SyncFailed to a person. The root retries without limit: its
PreSync check fails until every prerequisite exists (forge.argocd.prereqs), then it goes on.
`forge validate` checks both rules on the rendered Applications (forge.validate.fences).
"""
from __future__ import annotations

from typing import Any

from forge.argocd.projects import component_kinds
from forge.components.base import Component
from forge.model.cluster import ClusterModel

UNLIMITED = -1
LIMIT = 10
BACKOFF = {"duration": "10s", "factor": 2, "maxDuration": "5m"}


def retry(unlimited: bool) -> dict[str, Any]:
    return {"limit": UNLIMITED if unlimited else LIMIT, "backoff": dict(BACKOFF)}


def provided_groups(component: Component) -> tuple[str, ...]:
    """The API groups whose CRDs the component's Application installs."""
    return component.api_groups or component.crd_groups


def providers(components: list[Component]) -> dict[str, Component]:
    return {g: c for c in components for g in provided_groups(c)}


def crd_dependencies(cluster: ClusterModel, component: Component, components: list[Component]) -> dict[str, Component]:
    """API group -> the other component whose CRDs this component's objects need."""
    scoped, namespaced = component_kinds(cluster, component, components)
    by_group = providers(components)
    return {g: by_group[g] for g, _ in scoped | namespaced if g in by_group and by_group[g] is not component}


def renders_custom_resources(cluster: ClusterModel, component: Component, components: list[Component]) -> bool:
    """True when the Application renders custom resources of a group some Application installs
    (its own included: Kueue's ClusterQueues and LocalQueues wait for Kueue's webhook to serve)."""
    scoped, namespaced = component_kinds(cluster, component, components)
    by_group = providers(components)
    return any(g in by_group for g, _ in scoped | namespaced)

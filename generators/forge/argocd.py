"""The Argo CD bootstrap of one cluster: an AppProject, a root Application (app of apps) and one
child Application per component, in sync-wave order.

`kubectl apply -k clusters/<cluster>/argocd` once: the two AppProjects, the root Application and
the child Applications. From then on the root Application syncs only clusters/<cluster>/argocd/apps/
(the child Applications): write access to the repo changes what the components deploy, within
their AppProject, but neither AppProject nor the root Application, which a person applies again
after reviewing a change to them.

- `<project>`: the components' project: this repo and the pinned chart sources, the components'
  namespaces (not Argo CD's), the cluster-scoped kinds they declare, and no Argo CD objects
  (an Application there could escape the project).
- `<project>-bootstrap`: the root Application's: this repo only, Argo CD's namespace only, and
  nothing but Applications.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from forge import emit
from forge.versions import ChartPin
from forge.components.base import Component, RemoteBase, extra_values_file
from forge.model import ClusterModel
from forge.paths import APPS_DIR, ARGOCD_DIR, CLUSTERS_DIR, OVERLAYS_DIR

# Kinds every project needs whatever its components: forge ships Namespaces (base/<component>/).
_ALWAYS_CLUSTER_KINDS = (("", "Namespace"),)
_ARGO_KINDS = ("Application", "AppProject", "ApplicationSet")


def bootstrap_project_name(cluster: ClusterModel) -> str:
    return f"{cluster.settings.argocd.project}-bootstrap"


def app_name(cluster: ClusterModel, component: str) -> str:
    # Prefixed by cluster: one Argo CD may manage both fleets from the same namespace.
    return f"{cluster.name}-{component}"


def bootstrap_objects(cluster: ClusterModel, components: list[Component], pins: dict[str, ChartPin]) -> dict[str, dict[str, Any]]:
    """File name (inside clusters/<cluster>/argocd/) -> object."""
    files = {"appproject.yaml": app_project(cluster, components, pins),
             "appproject-bootstrap.yaml": bootstrap_project(cluster),
             "root-application.yaml": root_application(cluster)}
    for component in components:
        files[f"{APPS_DIR}/application-{component.name}.yaml"] = component_application(cluster, component, pins.get(component.chart or ""))
    return files


def app_project(cluster: ClusterModel, components: list[Component], pins: dict[str, ChartPin]) -> dict[str, Any]:
    argo = cluster.settings.argocd
    server = argo.destination.server
    namespaces = sorted({ns for c in components for ns in c.namespaces(cluster)})
    kinds = sorted({k for c in components for k in c.cluster_kinds} | set(_ALWAYS_CLUSTER_KINDS))
    repos = sorted({cluster.settings.git.repo_url} | {pins[c.chart].argocd_repo for c in components if c.chart}
                   | {r.repo_url for c in components if (r := c.remote_base(cluster))})
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": argo.project, "namespace": argo.namespace},
        "spec": {
            "description": f"forge-managed components of cluster {cluster.name}",
            "sourceRepos": repos,
            "destinations": [{"server": server, "namespace": ns} for ns in namespaces],
            "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in kinds],
            "namespaceResourceBlacklist": [{"group": "argoproj.io", "kind": k} for k in _ARGO_KINDS],
            "orphanedResources": {"warn": True},
            **sync_windows_field(cluster),
        },
    }


def bootstrap_project(cluster: ClusterModel) -> dict[str, Any]:
    """The root Application's project: it may create Applications in Argo CD's namespace from
    this repo, and nothing else (no cluster-scoped kind at all)."""
    argo = cluster.settings.argocd
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": bootstrap_project_name(cluster), "namespace": argo.namespace},
        "spec": {
            "description": f"the root Application of cluster {cluster.name}: child Applications only",
            "sourceRepos": [cluster.settings.git.repo_url],
            "destinations": [{"server": argo.destination.server, "namespace": argo.namespace}],
            "clusterResourceWhitelist": [],
            "namespaceResourceWhitelist": [{"group": "argoproj.io", "kind": "Application"}],
        },
    }


def _sync_policy(options: list[str], prune: bool = True) -> dict[str, Any]:
    return {
        "automated": {"prune": prune, "selfHeal": True},
        "syncOptions": options,
        "retry": {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
    }


def root_application(cluster: ClusterModel) -> dict[str, Any]:
    argo, git = cluster.settings.argocd, cluster.settings.git
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": app_name(cluster, "root"), "namespace": argo.namespace},
        "spec": {
            "project": bootstrap_project_name(cluster),
            # The child Applications only: the AppProjects and this Application sit outside that
            # folder, so the repo cannot widen its own permissions.
            "source": {"repoURL": git.repo_url, "targetRevision": tracked_revision(cluster),
                       "path": str(Path(CLUSTERS_DIR, cluster.name, ARGOCD_DIR, APPS_DIR))},
            "destination": {"server": argo.destination.server, "namespace": argo.namespace},
            "syncPolicy": _sync_policy(["PrunePropagationPolicy=foreground"]),
        },
    }


def component_application(cluster: ClusterModel, component: Component, pin: ChartPin | None) -> dict[str, Any]:
    argo, git = cluster.settings.argocd, cluster.settings.git
    overlay = str(Path(OVERLAYS_DIR, cluster.name, component.name))
    sources: list[dict[str, Any]] = []
    if pin:
        sources.append({
            "repoURL": pin.argocd_repo, "chart": pin.chart, "targetRevision": pin.version,
            "helm": {"releaseName": component.release,
                     "valueFiles": [f"$values/{overlay}/values.yaml"]},
        })
        sources.append({"repoURL": git.repo_url, "targetRevision": tracked_revision(cluster), "ref": "values"})
        sources += [{"repoURL": pin.repo, "chart": pin.chart, "targetRevision": pin.version,
                     # The chart's CRDs come with the main release: one owner per CRD.
                     "helm": {"releaseName": release, "valueFiles": [f"$values/{overlay}/{extra_values_file(release)}"],
                              "skipCrds": True}}
                    for release in component.extra_releases(cluster)]
    remote = component.remote_base(cluster)
    if remote:
        sources.append(_remote_source(cluster, remote))
    sources.append({"repoURL": git.repo_url, "targetRevision": tracked_revision(cluster), "path": overlay})
    options = ["CreateNamespace=false"]  # base/<component>/ ships the Namespace with its labels
    if component.server_side_apply:
        options.append("ServerSideApply=true")
    if component.ignore_differences:
        options.append("RespectIgnoreDifferences=true")  # also keep them out of syncs, not only diffs
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": app_name(cluster, component.name),
            "namespace": argo.namespace,
            "annotations": {"argocd.argoproj.io/sync-wave": str(component.sync_wave)},
        },
        "spec": {
            "project": argo.project,
            "sources": sources,
            "destination": {"server": argo.destination.server, "namespace": component.namespace},
            "syncPolicy": _sync_policy(options, prune=component.prune),
            **({"ignoreDifferences": list(component.ignore_differences)} if component.ignore_differences else {}),
        },
    }


def _remote_source(cluster: ClusterModel, remote: RemoteBase) -> dict[str, Any]:
    """Upstream kustomize manifests at a pinned tag, patched by Argo CD, labelled as ours."""
    kustomize: dict[str, Any] = {
        # Our labels on upstream objects too, but never on their (immutable) selectors.
        "commonLabels": emit.labels_for(cluster.name),
        "labelWithoutSelector": True,
    }
    if remote.patches:
        kustomize["patches"] = list(remote.patches)
    return {"repoURL": remote.repo_url, "targetRevision": remote.revision, "path": remote.path, "kustomize": kustomize}


# The rollout (docs/rollout.md): each ring's Applications track a git ref forge owns, moved only
# by `forge promote`; sync windows and the brake are the AppProject's.
RING_REF_PREFIX = "forge/ring/"
BRAKE_SCHEDULE, BRAKE_DURATION = "* * * * *", "1h"  # a deny window that starts every minute: always on


def ring_ref(ring: str) -> str:
    return f"{RING_REF_PREFIX}{ring}"


def tracked_revision(cluster: ClusterModel) -> str:
    """The git revision this cluster's Applications follow: its ring's ref, else git.revision."""
    rollout = cluster.settings.rollout
    return ring_ref(rollout.ring) if rollout else cluster.settings.git.revision


def sync_windows(cluster: ClusterModel) -> list[dict[str, Any]]:
    """The AppProject's sync windows from cluster.rollout: each window over the Applications of
    its components (all of the cluster's when it names none), then the brake. Neither window lets
    a person sync by hand (manualSync false): self-heal is an automatic sync, so it cannot undo them."""
    rollout = cluster.settings.rollout
    if rollout is None:
        return []
    out = [{"kind": w.kind, "schedule": w.schedule, "duration": w.duration, "timeZone": w.time_zone,
            "applications": [app_name(cluster, c) for c in w.components] or [app_name(cluster, "*")],
            "manualSync": False}
           for w in rollout.sync_windows]
    if rollout.brake:
        out.append({"kind": "deny", "schedule": BRAKE_SCHEDULE, "duration": BRAKE_DURATION, "timeZone": "UTC",
                    "applications": [app_name(cluster, "*")], "manualSync": False})
    return out


def sync_windows_field(cluster: ClusterModel) -> dict[str, Any]:
    windows = sync_windows(cluster)
    return {"syncWindows": windows} if windows else {}

"""The Argo CD bootstrap of one cluster: Argo CD's own configuration, one AppProject per
component, the root Application (app of apps) and one child Application per component, in
sync-wave order (forge.argocd.order).

By hand, once: the bootstrap Secret, then `kubectl apply -f` each of BY_HAND in order
(docs/bootstrap.md, step 3: the root's AppProject, then the root Application). The root Application syncs clusters/<cluster>/argocd/ whole, itself included:
its PreSync check (forge.argocd.prereqs), Argo CD's configuration (forge.argocd.config), the
AppProjects (forge.argocd.projects), then the child Applications wave by wave.

- `<project>-<component>`: each child Application's project: this repo and the component's own
  chart or kustomize source, the component's namespaces, and exactly the kinds it renders.
- `<project>-bootstrap`: the root Application's: this repo only, Argo CD's namespace only, and the
  kinds of the bootstrap (Applications, AppProjects, Argo CD's ConfigMap and repository Secrets,
  the check's Job, ServiceAccount and RBAC). Write access to the repo can therefore change the
  AppProjects: `forge check` fails on any that differ from what the inventories give, and
  `forge validate` on any object its Application's project does not allow.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from forge.files import emit
from forge.argocd.config import CONFIG_DIR, config_objects
from forge.argocd.order import renders_custom_resources, retry
from forge.argocd.prereqs import PREREQ_DIR, prerequisite_objects
from forge.argocd.projects import component_project, project_name
from forge.facts.versions import ChartPin
from forge.components.base import Component, RemoteBase, extra_values_file
from forge.model.cluster import ClusterModel
from forge.files.paths import APPS_DIR, ARGOCD_DIR, CLUSTERS_DIR, OVERLAYS_DIR

GENERATOR = "forge.argocd"  # the name in the headers of the bootstrap's files

# The files of clusters/<cluster>/argocd/ a person applies by hand, in this order (docs/bootstrap.md,
# step 3): Argo CD refuses an Application whose AppProject does not exist, so the root's project
# goes first; the root then syncs both, like every other file of the folder.
BY_HAND = ("appproject-bootstrap.yaml", "root-application.yaml")
PART_OF_FORGE = {"app.kubernetes.io/part-of": "forge"}  # set on the top folder's own objects (forge.generate.tree)
# The root Application's kinds: namespaced in Argo CD's namespace, and the check's RBAC.
BOOTSTRAP_NAMESPACED = (("argoproj.io", "Application"), ("argoproj.io", "AppProject"), ("", "ConfigMap"),
                        ("", "Secret"), ("", "ServiceAccount"), ("batch", "Job"))
BOOTSTRAP_CLUSTER = (("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"))


def bootstrap_project_name(cluster: ClusterModel) -> str:
    return f"{cluster.settings.argocd.project}-bootstrap"


def app_name(cluster: ClusterModel, component: str) -> str:
    # Prefixed by cluster: one Argo CD may manage both fleets from the same namespace.
    return f"{cluster.name}-{component}"


def bootstrap_objects(cluster: ClusterModel, components: list[Component], pins: dict[str, ChartPin]) -> dict[str, dict[str, Any]]:
    """File name (inside clusters/<cluster>/argocd/) -> object."""
    project_file, root_file = BY_HAND
    files = {project_file: bootstrap_project(cluster), root_file: root_application(cluster)}
    files[project_file]["spec"] |= sync_windows_field(cluster, "root")
    for component in components:
        project = component_project(cluster, component, components, pins.get(component.chart or ""))
        project["spec"] |= sync_windows_field(cluster, component.name)
        files[f"appproject-{component.name}.yaml"] = project
    for name in [n for n in files]:
        files[name]["metadata"].setdefault("labels", {}).update(PART_OF_FORGE)
    for component in components:
        files[f"{APPS_DIR}/application-{component.name}.yaml"] = component_application(
            cluster, component, pins.get(component.chart or ""), components)
    files |= {f"{CONFIG_DIR}/{n}": o for n, o in config_objects(cluster, components, pins).items()}
    files |= {f"{PREREQ_DIR}/{n}": o for n, o in prerequisite_objects(cluster, components).items()}
    return files


def bootstrap_project(cluster: ClusterModel) -> dict[str, Any]:
    """The root Application's project: the bootstrap's kinds in Argo CD's namespace, from this repo."""
    argo = cluster.settings.argocd
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": bootstrap_project_name(cluster), "namespace": argo.namespace},
        "spec": {
            "description": f"the root Application of cluster {cluster.name}: Argo CD's configuration, the AppProjects, "
                           "the child Applications and the prerequisites check",
            "sourceRepos": [cluster.settings.git.repo_url],
            "destinations": [{"server": argo.destination.server, "namespace": argo.namespace}],
            "clusterResourceWhitelist": [{"group": g, "kind": k} for g, k in BOOTSTRAP_CLUSTER],
            "namespaceResourceWhitelist": [{"group": g, "kind": k} for g, k in BOOTSTRAP_NAMESPACED],
        },
    }


def _sync_policy(options: list[str], prune: bool = True, unlimited: bool = False) -> dict[str, Any]:
    return {
        "automated": {"prune": prune, "selfHeal": True},
        "syncOptions": options,
        "retry": retry(unlimited),
    }


def root_application(cluster: ClusterModel) -> dict[str, Any]:
    argo, git = cluster.settings.argocd, cluster.settings.git
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": app_name(cluster, "root"), "namespace": argo.namespace},
        "spec": {
            "project": bootstrap_project_name(cluster),
            # The whole bootstrap, this Application included: after the one `kubectl apply` by a
            # person, everything converges from Git (on the ring's ref, docs/rollout.md).
            "source": {"repoURL": git.repo_url, "targetRevision": tracked_revision(cluster),
                       "path": str(Path(CLUSTERS_DIR, cluster.name, ARGOCD_DIR))},
            "destination": {"server": argo.destination.server, "namespace": argo.namespace},
            # Retried without limit: its PreSync check fails until every prerequisite exists.
            "syncPolicy": _sync_policy(["PrunePropagationPolicy=foreground"], unlimited=True),
        },
    }


def component_application(cluster: ClusterModel, component: Component, pin: ChartPin | None,
                          components: list[Component] | None = None) -> dict[str, Any]:
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
            "project": project_name(cluster, component),
            "sources": sources,
            "destination": {"server": argo.destination.server, "namespace": component.namespace},
            "syncPolicy": _sync_policy(options, prune=component.prune,
                                       unlimited=renders_custom_resources(cluster, component, components or [component])),
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


def sync_windows_field(cluster: ClusterModel, component: str) -> dict[str, Any]:
    """The windows of the project that holds `component`'s Application (each project one component's)."""
    mine = {app_name(cluster, "*"), app_name(cluster, component)}
    windows = [w for w in sync_windows(cluster) if mine & set(w["applications"])]
    return {"syncWindows": windows} if windows else {}

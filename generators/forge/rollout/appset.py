"""One central Argo CD for many clusters (docs/rollout.md, "One Argo CD"): one ApplicationSet per
component over the cluster generator, each cluster a Secret made by External Secrets and
labelled from the inventory (ring, fleet, GPU model, the components it runs), and the
application controller sharded by cluster count.

The ApplicationSets are made from the per-cluster child Applications themselves
(forge.argocd.bootstrap.component_application): each string that carries a cluster's own value becomes a
Go template over the cluster Secret, and `render` fills it in again the way the ApplicationSet
controller does for those few expressions. Clusters whose Application of a component differs in
more than those values (another extra release, other patches) get their own ApplicationSet of
that component (`-2`, `-3`, ...), selected by the value of their component label, so every
cluster gets exactly today's Applications."""
from __future__ import annotations

import copy
import math
import re
from typing import Any, Callable

from forge.files import emit
from forge.argocd.bootstrap import component_application, tracked_revision
from forge.components.external_secrets import STORE
from forge.errors import ForgeError
from forge.fleet import Fleet, components_of
from forge.model.cluster import LABEL_DOMAIN, ClusterModel

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
RING_LABEL, FLEET_LABEL, GPU_LABEL = f"{LABEL_DOMAIN}/ring", f"{LABEL_DOMAIN}/cluster", f"{LABEL_DOMAIN}/gpu-model"
REVISION_ANNOTATION, PROJECT_ANNOTATION = f"{LABEL_DOMAIN}/revision", f"{LABEL_DOMAIN}/project"
CLUSTERS_PER_SHARD = 25  # forge's sizing: one application-controller replica per 25 clusters (docs/rollout.md)
NAMESPACE = "argocd"

# The template expressions forge writes, and what each reads from a cluster (for `render`).
NAME, SERVER = "{{.name}}", "{{.server}}"
REVISION = f'{{{{index .metadata.annotations "{REVISION_ANNOTATION}"}}}}'
PROJECT = f'{{{{index .metadata.annotations "{PROJECT_ANNOTATION}"}}}}'


def component_label(component: str) -> str:
    return f"{LABEL_DOMAIN}/component.{component}"


def _values(cluster: ClusterModel) -> dict[str, str]:
    return {NAME: cluster.name, SERVER: cluster.settings.argocd.destination.server,
            REVISION: tracked_revision(cluster), PROJECT: cluster.settings.argocd.project}


def _walk(obj: Any, change: Callable[[str], str]) -> Any:
    if isinstance(obj, dict):
        return {change(k) if isinstance(k, str) else k: _walk(v, change) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(v, change) for v in obj]
    return change(obj) if isinstance(obj, str) else obj


def templated(cluster: ClusterModel, app: dict[str, Any]) -> dict[str, Any]:
    """`app` with the cluster's own values as template expressions."""
    exact = {v: k for k, v in _values(cluster).items() if k != NAME}
    name = re.compile(rf"(?<![A-Za-z0-9]){re.escape(cluster.name)}(?![A-Za-z0-9])")
    return _walk(app, lambda s: exact.get(s) or name.sub(NAME, s))


def render(template: dict[str, Any], cluster: ClusterModel) -> dict[str, Any]:
    """The Application the ApplicationSet controller makes of `template` for `cluster` (only the
    expressions above occur; any other `{{` is left as is, and shows in a comparison)."""
    values = _values(cluster)
    pattern = re.compile("|".join(re.escape(k) for k in sorted(values, key=len, reverse=True)))
    return _walk(template, lambda s: pattern.sub(lambda m: values[m.group(0)], s))


def child_application(cluster: ClusterModel, component, pins) -> dict[str, Any]:
    """The per-cluster child Application as Argo CD holds it: with the labels its kustomization adds."""
    app = copy.deepcopy(component_application(cluster, component, pins.get(component.chart or "")))
    app["metadata"]["labels"] = emit.labels_for(cluster.name)
    return app


def shapes(fleet: Fleet, clusters: list[ClusterModel]) -> dict[str, list[tuple[dict[str, Any], list[ClusterModel]]]]:
    """Per component, its distinct templates in first-seen order, each with its clusters."""
    out: dict[str, list[tuple[dict[str, Any], list[ClusterModel]]]] = {}
    for cluster in clusters:
        for component in components_of(cluster):
            template = templated(cluster, child_application(cluster, component, fleet.pins))
            groups = out.setdefault(component.name, [])
            match = next((members for t, members in groups if t == template), None)
            if match is None:
                groups.append((template, [cluster]))
            else:
                match.append(cluster)
    return out


def shape_value(index: int) -> str:
    return str(index + 1)


def application_set(component: str, index: int, template: dict[str, Any]) -> dict[str, Any]:
    meta = template["metadata"]
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": f"forge-{component}" + (f"-{index + 1}" if index else ""), "namespace": NAMESPACE},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"clusters": {"selector": {"matchLabels": {component_label(component): shape_value(index)}}}}],
            "template": {"metadata": {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta},
                         "spec": template["spec"]},
            # An ApplicationSet or a cluster Secret removed must not delete what runs on a cluster.
            "syncPolicy": {"preserveResourcesOnDeletion": True},
        },
    }


def cluster_secret(cluster: ClusterModel, shape_of: dict[str, str]) -> dict[str, Any]:
    """The ExternalSecret of the cluster's Argo CD cluster Secret: name and server from the
    inventory, the credentials (`config`) from the store (remote key forge/central/<cluster>)."""
    labels = {SECRET_TYPE_LABEL: "cluster", FLEET_LABEL: cluster.name,
              **({RING_LABEL: cluster.settings.rollout.ring} if cluster.settings.rollout else {}),
              **({GPU_LABEL: ".".join(sorted(m.key for m in cluster.gpu_models))} if cluster.gpu_models else {}),
              **{component_label(c): v for c, v in sorted(shape_of.items())}}
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": f"cluster-{cluster.name}", "namespace": NAMESPACE},
        "spec": {
            "refreshInterval": "1h",
            "secretStoreRef": {"kind": "ClusterSecretStore", "name": STORE},
            "target": {"name": f"cluster-{cluster.name}", "creationPolicy": "Owner", "deletionPolicy": "Retain",
                       "template": {"engineVersion": "v2",
                                    "metadata": {"labels": labels,
                                                 "annotations": {REVISION_ANNOTATION: tracked_revision(cluster),
                                                                 PROJECT_ANNOTATION: cluster.settings.argocd.project}},
                                    "data": {"name": cluster.name, "server": cluster.settings.argocd.destination.server,
                                             "config": "{{ .config }}"}}},
            "data": [{"secretKey": "config", "remoteRef": {"key": f"forge/central/{cluster.name}", "property": "config"}}],
        },
    }


def controller_values(clusters: int) -> dict[str, Any]:
    """The argo-cd chart's values for the central Argo CD's application controller."""
    return {"controller": {"replicas": max(1, math.ceil(clusters / CLUSTERS_PER_SHARD))},
            "configs": {"params": {"controller.sharding.algorithm": "consistent-hashing"}}}


def central_objects(fleet: Fleet, clusters: list[ClusterModel]) -> dict[str, dict[str, Any]]:
    """File name -> object: the ApplicationSets, the cluster Secrets' ExternalSecrets and the
    controller's values, for these clusters."""
    servers: dict[str, str] = {}
    for cluster in clusters:
        server = cluster.settings.argocd.destination.server
        if server in servers:
            raise ForgeError(f"{cluster.source}: cluster.argocd.destination.server: {server} is also cluster {servers[server]}'s: "
                             "from a central Argo CD, give each cluster its own API server URL")
        servers[server] = cluster.name
    files: dict[str, dict[str, Any]] = {}
    shape_of: dict[str, dict[str, str]] = {c.name: {} for c in clusters}
    for component, groups in sorted(shapes(fleet, clusters).items()):
        for index, (template, members) in enumerate(groups):
            appset = application_set(component, index, template)
            files[f"applicationset-{appset['metadata']['name']}.yaml"] = appset
            for cluster in members:
                shape_of[cluster.name][component] = shape_value(index)
    for cluster in clusters:
        files[f"externalsecret-cluster-{cluster.name}.yaml"] = cluster_secret(cluster, shape_of[cluster.name])
    files["argocd-values.yaml"] = controller_values(len(clusters))
    return files


def generated_applications(appsets: list[dict[str, Any]], secrets: list[dict[str, Any]], clusters: dict[str, ClusterModel]) -> dict[str, dict[str, Any]]:
    """What the cluster generator makes of these ApplicationSets over these cluster Secrets (by
    matchLabels, as the controller selects): Application name -> Application."""
    out = {}
    for appset in appsets:
        selector = appset["spec"]["generators"][0]["clusters"]["selector"]["matchLabels"]
        for secret in secrets:
            labels = secret["spec"]["target"]["template"]["metadata"]["labels"]
            if all(labels.get(k) == v for k, v in selector.items()):
                cluster = clusters[secret["spec"]["target"]["template"]["data"]["name"]]
                app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **render(appset["spec"]["template"], cluster)}
                out[app["metadata"]["name"]] = app
    return out


def central_clusters(fleet: Fleet, everyone: bool = False) -> list[ClusterModel]:
    return [c for c in fleet.clusters if everyone or (c.settings.rollout and c.settings.rollout.central)]


"""`forge validate`: every rendered object, every values file, every policy; one line per failure.

Objects are checked against the cluster's Kubernetes version (built-in kinds) or against the
CRDs we know: those in the upstream data folder (--upstream / FORGE_UPSTREAM; CRDs an operator
applies at run time from the folder its component names, `Component.runtime_crd_data`) and those
in the rendered output itself. A custom resource with no CRD to check it against is *unchecked*, never
passed: without an upstream folder it is listed as such; with one it is a failure.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping

from forge.facts.versions import chart_pins
from forge.components import COMPONENTS, Component
from forge.components.base import extra_values_file
from forge.files.emit import labels_for
from forge.errors import ForgeError
from forge.fleet import load_fleet
from forge.model.cluster import ClusterModel
from forge.files.paths import CLUSTERS_DIR, OVERLAYS_DIR, RENDERED_DIR
from forge.argocd.bootstrap import app_name, bootstrap_project_name
from forge.argocd.projects import project_name
from forge.validate import fences, isolation
from forge.validate.cluster_checks import admission_failures
from forge.validate.crd import CrdSchemas
from forge.validate.crd_index import LazyCrdFolder
from forge.validate.cluster_policies import cluster_plugins
from forge.validate.served import ServedApis
from forge.validate.delete_hooks import hook_switches
from forge.validate.engine import Engine, Report, kube_schemas, missing_runtime_data, policies, runtime_crds
from forge.validate.failure import Failure
from forge.validate.objects import load_yaml_stream, object_id
from forge.validate.policies import check_values_images
from forge.validate.queues import queue_failures
from forge.validate.values import check_values
from forge.workers import process_pool


def upstream_crds(root: Path, upstream: Path | None) -> LazyCrdFolder:
    if upstream and not upstream.is_dir():
        raise ForgeError(f"--upstream {upstream}: no such folder")
    if not upstream:
        return LazyCrdFolder([])
    pins = chart_pins(root)
    owners = {group: upstream / pins[c.chart].data_dir_name for c in COMPONENTS if c.chart for group in c.crd_groups}
    # CRDs an operator applies at run time: from the data folder of the release that applies them.
    owners |= {r.group: upstream / r.data_dir for c in COMPONENTS for r in c.runtime_crd_data()}
    return LazyCrdFolder(sorted(upstream.glob("*/crds")), owners)


# Below this much YAML one process parses it faster than starting a pool would.
PARALLEL_PARSE_BYTES = 2_000_000


def _parse_file(path: Path) -> list[dict[str, Any]]:
    return load_yaml_stream(path.read_text(encoding="utf-8"))


def rendered_objects(rendered: Path, clusters: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """cluster -> component -> objects. YAML parsing dominates validation, so a large render is
    parsed by one process per core (the parsed objects come back pickled, which is far cheaper)."""
    files: list[tuple[str, Path]] = []
    for cluster in clusters:
        found = sorted((rendered / cluster).glob("*.yaml"))
        if not found:
            raise ForgeError(f"{rendered / cluster}: nothing rendered for cluster {cluster}: run `make render` first")
        files += [(cluster, f) for f in found]
    paths = [f for _, f in files]
    if sum(f.stat().st_size for f in paths) > PARALLEL_PARSE_BYTES and (os.cpu_count() or 1) > 1:
        with process_pool(os.cpu_count()) as pool:
            parsed = list(pool.map(_parse_file, paths, chunksize=max(1, len(paths) // (4 * (os.cpu_count() or 1)))))
    else:
        parsed = [_parse_file(f) for f in paths]
    out: dict[str, dict[str, list[dict[str, Any]]]] = {c: {} for c in clusters}
    for (cluster, f), objs in zip(files, parsed):
        out[cluster][f.stem] = objs
    return out


def validate_cluster(cluster: ClusterModel, components: list[Component], objects: dict[str, list[dict[str, Any]]],
                     base_crds: LazyCrdFolder, upstream: Path | None, report: Report,
                     lacks: Mapping[str, frozenset[str]] | None = None) -> None:
    rendered_crds = CrdSchemas()  # CRDs this cluster's own output ships win over the upstream ones
    for objs in objects.values():
        rendered_crds.add_objects(objs)

    def no_schema(obj: dict[str, Any]) -> list[tuple[str, str]] | None:
        if upstream is None:
            return None
        return [("", f"no CRD for {obj.get('apiVersion')} {obj.get('kind')} in the upstream data or the rendered output")]

    imageless = {id(o) for c, objs in objects.items() if "image" in (lacks or {}).get(c, ()) for o in objs}
    engine = Engine(kube_schemas(cluster.kubernetes_version), [rendered_crds, base_crds, runtime_crds(components, upstream)],
                    no_schema, [policies(labels_for(cluster.name), imageless=lambda obj: id(obj) in imageless)])
    # The Applications as rendered from the bootstrap: what Argo CD will be told to prune.
    apps = {o["metadata"]["name"]: o for o in objects.get("argocd", []) if o.get("kind") == "Application"}
    plugins = [*cluster_plugins(objects, {c.name: apps.get(app_name(cluster, c.name)) for c in components}, components,
                                labels_for(cluster.name)), ServedApis(cluster.served)]
    for component, objs in objects.items():
        engine.check_component(report, cluster.name, component, ((obj, object_id(obj)) for obj in objs), plugins)
    report.failures += queue_failures(cluster, objects)  # Kueue's objects hold only together
    argo = cluster.settings.argocd
    report.failures += isolation.namespace_isolation(cluster.name, objects)
    report.failures += isolation.application_projects(
        cluster.name, objects, {app_name(cluster, c.name): project_name(cluster, c) for c in components},
        app_name(cluster, "root"), bootstrap_project_name(cluster))
    report.failures += fences.rendered_fences(cluster, components, objects)
    report.failures += fences.wave_order(cluster, components, objects)


def validate_values(root: Path, cluster: ClusterModel, components: list[Component], upstream: Path | None,
                    report: Report) -> dict[str, Any]:
    """Check every values file; return each chart component's values.yaml as read (the admission
    checks read it too: parsed once)."""
    pins = chart_pins(root)
    read: dict[str, Any] = {}
    for component in components:
        if not component.chart:
            continue
        folder = Path(OVERLAYS_DIR, cluster.name, component.name)
        # values.yaml, and one file per further release of the same chart (Component.extra_releases)
        for name in ("values.yaml", *(extra_values_file(r) for r in component.extra_releases(cluster))):
            values = _validate_values_file(root, cluster, component, folder / name, pins[component.chart], upstream, report)
            read.setdefault(component.name, values)  # values.yaml comes first
    return read


def _validate_values_file(root: Path, cluster: ClusterModel, component: Component, rel: Path, pin, upstream: Path | None,
                          report: Report) -> Any:
    values = load_yaml_stream((root / rel).read_text(encoding="utf-8"))
    values = values[0] if values else {}
    report.values_files += 1
    problems = check_values_images(values)
    if upstream:
        data = upstream / pin.data_dir_name
        if not data.is_dir():
            problems.append(("", f"no reference data for chart {pin.chart} {pin.version} at {data}"))
        else:
            problems += check_values(values, data, component.declared_values)
            problems += hook_switches(values, data)
    else:
        report.unchecked.append(f"{cluster.name} / {component.name} / {rel.as_posix()} (values against chart {pin.chart} {pin.version})")
    report.failures += [Failure(cluster.name, component.name, rel.as_posix(), path, reason) for path, reason in problems]
    return values


def override_exceptions(root: Path, only: tuple[str, ...] = ()) -> list[Failure]:
    """Every reviewed exception of clusters/<c>/overrides/exceptions.yaml (forge.generate.overrides), as a
    warning: reported on every run, never cached away (generate refused any stale one)."""
    from forge.generate.overrides import EXCEPTIONS_FILE, OVERRIDES_DIR, read_exceptions

    out = []
    for path in sorted((root / CLUSTERS_DIR).glob(f"*/{OVERRIDES_DIR}/{EXCEPTIONS_FILE}")):
        cluster = path.parent.parent.name
        if only and cluster not in only:
            continue
        out += [Failure(cluster, e.component, f"{CLUSTERS_DIR}/{cluster}/{OVERRIDES_DIR}/{e.component}/{e.file}", e.path, e.note())
                for e in read_exceptions(root, cluster)]
    return out


def validate_repo(root: Path, upstream: Path | None = None, rendered: Path | None = None) -> Report:
    return validate_fleet(root, [(p.cluster, list(p.components)) for p in load_fleet(root)], upstream, rendered)


def check_cluster(root: Path, cluster: ClusterModel, components: list[Component], objects: dict[str, list[dict[str, Any]]],
                  base_crds: LazyCrdFolder, upstream: Path | None, report: Report,
                  lacks: Mapping[str, frozenset[str]] | None = None) -> None:
    """Every check of one cluster (also run per cluster by forge.validate.cached). `lacks`:
    component -> keys its rendered text cannot hold (forge.validate.objects.absent_keys)."""
    validate_cluster(cluster, components, objects, base_crds, upstream, report, lacks)
    values = validate_values(root, cluster, components, upstream, report)
    if upstream:
        report.failures += missing_runtime_data(cluster.name, components, upstream)
    report.failures += admission_failures(root, cluster, components, objects, values, lacks)


def validate_fleet(root: Path, fleet: list[tuple[ClusterModel, list[Component]]], upstream: Path | None = None,
                   rendered: Path | None = None) -> Report:
    """The rendered output of each cluster and the components it runs (the engine's one entry)."""
    started = time.perf_counter()
    report = Report()
    base_crds = upstream_crds(root, upstream)
    objects = rendered_objects(rendered or root / RENDERED_DIR, [c.name for c, _ in fleet])
    for cluster, components in fleet:
        check_cluster(root, cluster, components, objects[cluster.name], base_crds, upstream, report)
    report.seconds = time.perf_counter() - started
    report.sort()
    return report

"""`forge validate`: every rendered object, every values file, every policy; one line per failure.

Objects are checked against the cluster's Kubernetes version (built-in kinds) or against the
CRDs we know: those in the upstream data folder (--upstream / FORGE_UPSTREAM) and those in the
rendered output itself. A custom resource with no CRD to check it against is *unchecked*, never
passed: without an upstream folder it is listed as such; with one it is a failure.
"""
from __future__ import annotations

import functools
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.charts import chart_pins
from forge.components import COMPONENTS
from forge.emit import labels_for
from forge.errors import ForgeError
from forge.generate import enabled_components, load_clusters
from forge.model import ClusterModel
from forge.paths import OVERLAYS_DIR, RENDERED_DIR
from forge.validate.crd import CrdSchemas
from forge.validate.crd_index import LazyCrdFolder
from forge.validate.failure import Failure
from forge.validate.kube import KubeSchemas
from forge.validate.objects import load_yaml_stream, object_id
from forge.validate.policies import check_policies, check_values_images
from forge.validate.queues import queue_failures
from forge.validate.values import check_values


@dataclass
class Report:
    failures: list[Failure] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    objects: int = 0
    values_files: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.objects / self.seconds if self.seconds else 0.0


@functools.cache
def kube_schemas(version: str) -> KubeSchemas:
    """One compiled schema set per Kubernetes version, shared by every cluster on it."""
    return KubeSchemas(version)


def upstream_crds(root: Path, upstream: Path | None) -> LazyCrdFolder:
    if upstream and not upstream.is_dir():
        raise ForgeError(f"--upstream {upstream}: no such folder")
    if not upstream:
        return LazyCrdFolder([])
    pins = chart_pins(root)
    owners = {group: upstream / pins[c.chart].data_dir_name for c in COMPONENTS if c.chart for group in c.crd_groups}
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
        with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
            parsed = list(pool.map(_parse_file, paths, chunksize=max(1, len(paths) // (4 * (os.cpu_count() or 1)))))
    else:
        parsed = [_parse_file(f) for f in paths]
    out: dict[str, dict[str, list[dict[str, Any]]]] = {c: {} for c in clusters}
    for (cluster, f), objs in zip(files, parsed):
        out[cluster][f.stem] = objs
    return out


def validate_cluster(cluster: ClusterModel, objects: dict[str, list[dict[str, Any]]], base_crds: LazyCrdFolder,
                     strict_crds: bool, report: Report) -> None:
    kube = kube_schemas(cluster.kubernetes_version)
    rendered_crds = CrdSchemas()  # CRDs this cluster's own output ships win over the upstream ones
    for objs in objects.values():
        rendered_crds.add_objects(objs)
    runtime_crds = CrdSchemas()  # last resort: forge's description of CRDs an operator installs itself
    for component in enabled_components(cluster):
        runtime_crds.add_objects(component.runtime_crds(cluster))
    required = labels_for(cluster.name)
    for component, objs in objects.items():
        for obj in objs:
            report.objects += 1
            oid = object_id(obj)
            problems = kube.validate(obj)
            if problems is None:
                problems = rendered_crds.validate(obj)
            if problems is None:
                problems = base_crds.validate(obj)
            if problems is None:
                problems = runtime_crds.validate(obj)
            if problems is None:
                what = f"{cluster.name} / {component} / {obj.get('apiVersion')} {obj.get('kind')}"
                if strict_crds:
                    problems = [("", f"no CRD for {obj.get('apiVersion')} {obj.get('kind')} in the upstream data or the rendered output")]
                else:
                    report.unchecked.append(what)
                    problems = []
            problems = problems + check_policies(obj, required_labels=required)
            report.failures += [Failure(cluster.name, component, oid, path, reason) for path, reason in problems]
    report.failures += queue_failures(cluster, objects)  # Kueue's objects hold only together


def validate_values(root: Path, cluster: ClusterModel, upstream: Path | None, report: Report) -> None:
    pins = chart_pins(root)
    for component in enabled_components(cluster):
        if not component.chart:
            continue
        rel = Path(OVERLAYS_DIR, cluster.name, component.name, "values.yaml")
        values = load_yaml_stream((root / rel).read_text(encoding="utf-8"))
        values = values[0] if values else {}
        report.values_files += 1
        problems = check_values_images(values)
        pin = pins[component.chart]
        if upstream:
            data = upstream / pin.data_dir_name
            if not data.is_dir():
                problems.append(("", f"no reference data for chart {pin.chart} {pin.version} at {data}"))
            else:
                problems += check_values(values, data, component.declared_values)
        else:
            report.unchecked.append(f"{cluster.name} / {component.name} / {rel} (values against chart {pin.chart} {pin.version})")
        report.failures += [Failure(cluster.name, component.name, rel.as_posix(), path, reason) for path, reason in problems]


def validate_repo(root: Path, upstream: Path | None = None, rendered: Path | None = None) -> Report:
    started = time.perf_counter()
    report = Report()
    clusters = load_clusters(root)
    base_crds = upstream_crds(root, upstream)
    objects = rendered_objects(rendered or root / RENDERED_DIR, [c.name for c in clusters])
    for cluster in clusters:
        validate_cluster(cluster, objects[cluster.name], base_crds, strict_crds=upstream is not None, report=report)
        validate_values(root, cluster, upstream, report)
    report.seconds = time.perf_counter() - started
    report.failures.sort()
    return report

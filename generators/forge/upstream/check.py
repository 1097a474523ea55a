"""`forge validate --hydrated`: check build/hydrated/ (see forge.upstream.hydrate) as a whole,
with the one validation engine (forge.validate.engine) and this mode's plug-ins.

Per cluster:
* every object against the Kubernetes schemas of the cluster's minor (strict: unknown fields are
  errors), or else against the CRDs found in the cluster's hydrated output — the charts ship
  their own, so no schema folder is needed — or, last, against the CRDs an operator applies at
  run time, from the upstream data folder its component names (`Component.runtime_crd_data`;
  without --upstream those objects are unchecked); any other object none of them knows is a
  failure, never a pass;
* the pipeline's house rules (forge.validate.policies: pinned images, no Secret data, Pod
  Security level on Namespaces). The required forge labels are not asked of chart output: the
  overlay's kustomization labels only its own objects, and `forge validate` checks those;
* our values against the cached chart (forge.upstream.reads): a key no template reads is a
  failure ("ignored"); a key equal to the chart's default is a warning ("redundant") — it does
  nothing today, but someone may have pinned a default on purpose against a chart bump;
* every object's kind and namespace are allowed by its component's AppProject, the charts'
  objects included (forge.validate.fences; else Argo CD refuses the sync);
* each component's `expected_in_hydrated(cluster)`: the objects the chart created from our values
  carry what the inventory asked for.

With `--component NAME` only those components are checked; the CRDs the other components ship
still count, read from their hydrated files where a previous run left them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import yaml
from ruamel.yaml import YAML

from forge.argocd import bootstrap as argocd
from forge.argocd.projects import component_project
from forge.facts.versions import chart_pins
from forge.components.base import Contains, Expected
from forge.files.emit import labels_for
from forge.errors import ForgeError
from forge.fleet import components_of, load_fleet
from forge.model.cluster import ClusterModel
from forge.upstream.chart import load_chart
from forge.upstream.hydrate import HYDRATED_DIR, Job, hydrated_file, jobs_for, load_hydrated
from forge.upstream.reads import redundant_keys, unread_keys
from forge.validate.cluster_checks import admission_failures
from forge.validate.cluster_policies import cluster_plugins
from forge.validate.crd import CrdSchemas
from forge.validate.engine import Engine, Report, kube_schemas, missing_runtime_data, policies, runtime_crds, runtime_kinds
from forge.validate.failure import Failure
from forge.validate.fences import ProjectFence
from forge.validate.objects import object_id


def validate_hydrated(root: Path, only: frozenset[str] | None = None, upstream: Path | None = None) -> Report:
    return validate_hydrated_fleet(root, load_fleet(root).clusters, only, upstream)


def validate_hydrated_fleet(root: Path, clusters: list[ClusterModel], only: frozenset[str] | None = None,
                            upstream: Path | None = None) -> Report:
    """The hydrated output of each cluster's components (from `jobs_for`: the engine's one entry)."""
    jobs = jobs_for(root, clusters, chart_pins(root), only)
    report = Report()
    for cluster in clusters:
        mine = [j for j in jobs if j.cluster is cluster]
        if not mine:
            continue
        others = [p for p in sorted((root / HYDRATED_DIR / cluster.name).glob("*.yaml"))
                  if only and p.stem not in only]
        _check_cluster(root, cluster, mine, report, others, upstream)
        if upstream:
            report.failures += missing_runtime_data(cluster.name, [j.component for j in mine], upstream)
    report.sort()
    return report


def _check_cluster(root: Path, cluster: ClusterModel, jobs: list[Job], report: Report,
                   others: Sequence[Path] = (), upstream: Path | None = None) -> None:
    loaded: dict[str, list[tuple[dict[str, Any], int]]] = {}
    for job in jobs:
        path = hydrated_file(root, cluster.name, job.component.name)
        if not path.is_file():
            raise ForgeError(f"{path.relative_to(root)} is missing: run `forge hydrate` first")
        loaded[job.component.name] = load_hydrated(path)
    crds = CrdSchemas()
    crds.add_objects(obj for objs in loaded.values() for obj, _ in objs)
    unselected: list[dict[str, Any]] = []  # components not selected: their CRDs and PriorityClasses only
    for path in others:
        unselected += [obj for obj, _ in load_hydrated(path) if obj.get("kind") in ("CustomResourceDefinition", "PriorityClass")]
    crds.add_objects(obj for obj in unselected if obj.get("kind") == "CustomResourceDefinition")
    kube = kube_schemas(cluster.kubernetes_version)

    components = [j.component for j in jobs]
    unchecked = runtime_kinds(components) if upstream is None else set()

    def no_schema(obj: dict[str, Any]) -> list[tuple[str, str]] | None:
        if (obj.get("apiVersion"), obj.get("kind")) in unchecked:
            return None  # a CRD the operator applies at run time, and no upstream data to check it
        return [("apiVersion", f"no schema for {obj.get('apiVersion')} {obj.get('kind')}: not built into "
                               f"Kubernetes {kube.version} and no CRD for it in the cluster's hydrated output")]

    rendered_keys = frozenset().union(*(c.rendered_secret_keys for c in components))

    def excused(obj: dict[str, Any], path: str) -> bool:
        return _switched_off(obj, path) or _rendered_secret(obj, path, rendered_keys)

    engine = Engine(kube, [crds, runtime_crds(components, upstream)], no_schema, [policies({}, skip=excused)])
    report.count(cluster.name, "objects", 0)
    pins = chart_pins(root)
    components = [j.component for j in jobs]
    apps = {c.name: argocd.component_application(cluster, c, pins.get(c.chart or ""), components) for c in components}
    # Each component's objects, the charts' included, against its own AppProject (forge.validate.fences).
    every = list(components_of(cluster))
    fence = ProjectFence({c.name: component_project(cluster, c, every, pins.get(c.chart or "")) for c in components},
                         {c.name: c.namespace for c in components}, every)
    # The workload classes come from every component's output, selected or not (scheduling's).
    everything = {**{n: [o for o, _ in objs] for n, objs in loaded.items()}, "": unselected}
    cluster_checks = cluster_plugins(everything, apps, components, labels_for(cluster.name))
    for job in jobs:
        rel = (HYDRATED_DIR / cluster.name / f"{job.component.name}.yaml").as_posix()
        items = ((obj, f"{rel}:{line} {object_id(obj)}") for obj, line in loaded[job.component.name])
        engine.check_component(report, cluster.name, job.component.name, items,
                               [ValuesKeys(root, job), ExpectedObjects(job), fence, *cluster_checks])
    # Pod Security and Secret references over the whole hydrated cluster (forge.validate.admission)
    at = {(name, object_id(o)): f"{(HYDRATED_DIR / cluster.name / f'{name}.yaml').as_posix()}:{line}"
          for name, objs in loaded.items() for o, line in objs}
    objects = {name: [o for o, _ in objs] for name, objs in loaded.items()}
    for f in admission_failures(root, cluster, [j.component for j in jobs], objects):
        where = at.get((f.component, f.object))
        report.failures.append(replace(f, object=f"{where} {f.object}") if where else f)


@dataclass
class ValuesKeys:
    """Plug-in: our values against the cached chart. A key no template reads fails ("ignored");
    a key equal to the chart's default warns ("redundant")."""

    root: Path
    job: Job

    def __call__(self, report: Report, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        if self.job.chart_dir is None:
            return
        chart = load_chart(self.job.chart_dir)
        extra = (f for _, files in self.job.extra_releases for f in files)  # more releases of the chart
        for rel_values in (*self.job.value_files, *extra):
            values, lines = _values_with_lines(self.root / rel_values)
            report.count(cluster, "keys", _count_leaves(values))
            for key, reason in unread_keys(chart, values):
                report.failures.append(Failure(cluster, component, f"{rel_values}:{lines.get(key, 1)}", key, reason))
            for key, reason in redundant_keys(chart, values, self.job.component.inventory_values):
                report.warnings.append(Failure(cluster, component, f"{rel_values}:{lines.get(key, 1)}", key, reason))


@dataclass
class ExpectedObjects:
    """Plug-in: the component's `expected_in_hydrated(cluster)`, what the chart's objects carry."""

    job: Job

    def __call__(self, report: Report, cluster: str, component: str, objects: list[dict[str, Any]]) -> None:
        for item in self.job.component.expected_in_hydrated(self.job.cluster):
            expected = Expected(*item)
            for path, reason in check_expected(objects, expected):
                report.failures.append(Failure(cluster, component, f"{expected.kind}/{expected.name}", path, reason))


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _rendered_secret(obj: dict[str, Any], path: str, keys: frozenset[str]) -> bool:
    """True for a chart Secret's `data` that holds only keys its chart writes at render time
    (`Component.rendered_secret_keys`): nothing in it comes from Git."""
    data = obj.get("data")
    return (obj.get("kind") == "Secret" and path == "data" and isinstance(data, dict) and bool(data)
            and not obj.get("stringData") and set(data) <= keys)


def _switched_off(obj: dict[str, Any], path: str) -> bool:
    """True when a policy problem sits in a section the object switches off (`enabled: false`):
    operators' custom resources list every operand with its image, and a disabled operand's image
    is never pulled (the GPU Operator's ClusterPolicy has `vgpuManager: {enabled: false,
    image: vgpu-manager}` with no version unless vGPU is used)."""
    node: Any = obj
    for name, index in _PART.findall(path):
        if isinstance(node, dict) and node.get("enabled") is False:
            return True
        key: Any = int(index) if index else name
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return False
    return False


def _lookup(obj: Any, parts: tuple[str, ...]) -> tuple[bool, Any]:
    """Follow an Expected path (see forge.components.base.Expected for its parts)."""
    node, name = obj, ""
    for part in parts:
        if isinstance(node, str) and name.endswith(".ini"):  # an INI file inside the object (grafana.ini)
            node = _ini(node)
        elif isinstance(node, str):  # a file inside the object (ConfigMap data): read it as YAML
            try:
                node = yaml.safe_load(node)
            except yaml.YAMLError:
                return False, None
        name = part
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, list) and "=" in part:
            field, _, want = part.partition("=")  # field may be dotted: metadata.name=journal
            hits = [i for i in node if _has(i, tuple(field.split(".")), want)]
            if len(hits) != 1:  # none, or no single answer
                return False, None
            node = hits[0]
        else:
            return False, None
    return True, node


def _ini(text: str) -> dict[str, Any]:
    """An INI file as {section: {key: value}} (keys before the first section under ""), values as
    the text after `=`: what Grafana reads from the grafana.ini the chart writes."""
    out: dict[str, Any] = {"": {}}
    section = out[""]
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = out.setdefault(line[1:-1].strip(), {})
        elif "=" in line and not line.startswith((";", "#")):
            key, _, value = line.partition("=")
            section[key.strip()] = value.strip()
    return out


def _has(item: Any, field: tuple[str, ...], want: str) -> bool:
    found, value = _lookup(item, field)
    return found and str(value) == want


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def check_expected(objects: list[dict[str, Any]], expected: Expected) -> list[tuple[str, str]]:
    """(path, reason) when the expected object or field is not as the inventory asks."""
    parts = tuple(expected.path.split(".")) if isinstance(expected.path, str) else tuple(expected.path)
    dotted = ".".join(parts)
    matches = [o for o in objects if o.get("kind") == expected.kind and (o.get("metadata") or {}).get("name") == expected.name]
    if not matches:
        return [(dotted, f"the chart rendered no {expected.kind} named '{expected.name}' "
                         f"(the inventory asks for {dotted} = {_show(expected.value)})")]
    out = []
    for obj in matches:
        found, actual = _lookup(obj, parts)
        if not found:
            out.append((dotted, f"missing: the inventory asks for {_show(expected.value)}"))
        elif isinstance(expected.value, Contains):
            lacking = expected.value.missing(actual)
            if lacking is None:
                out.append((dotted, f"is {_show(actual)}, not a list or string {_show(expected.value)}"))
            elif lacking:
                out.append((dotted, f"lacks {json.dumps(lacking, default=str)}: the inventory asks for them"))
        elif actual != expected.value or type(actual) is not type(expected.value):
            out.append((dotted, f"is {_show(actual)}, the inventory asks for {_show(expected.value)}"))
    return out


def _values_with_lines(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The values as plain data, and the line of every key (dotted path -> 1-based line)."""
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    tree = YAML(typ="rt").load(text)
    lines: dict[str, int] = {}

    def walk(node: Any, prefix: str) -> None:
        if not hasattr(node, "lc") or not isinstance(node, dict):
            return
        for key in node:
            dotted = f"{prefix}.{key}" if prefix else str(key)
            try:
                lines[dotted] = node.lc.key(key)[0] + 1
            except (KeyError, TypeError):
                pass
            walk(node[key], dotted)

    walk(tree, "")
    return data, lines


def _count_leaves(values: Any) -> int:
    if isinstance(values, dict) and values:
        return sum(_count_leaves(v) for v in values.values())
    return 1

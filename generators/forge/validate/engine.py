"""The one validation engine, for rendered output (`forge validate`, forge.validate.run) and
hydrated output (`forge validate --hydrated`, forge.upstream.check).

Every object goes the same way:
1. its schema: the Kubernetes schemas of the cluster's minor (strict: unknown fields are errors),
   else the CRDs the caller lists in order (the output's own, the upstream data's), else the CRDs
   operators apply at run time, from the upstream data folder their component names
   (`Component.runtime_crd_data`); the mode decides what an object none of them knows is
   (`Engine.no_schema`: a failure, or *unchecked*, never a pass);
2. the house policies (forge.validate.policies), here and nowhere else;
3. the mode's object plug-ins (hydrated: the AppProject's namespaces).
Then each component's plug-ins run over its objects (hydrated: values keys the chart ignores or
sets to its default, `expected_in_hydrated`).
"""
from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from forge.components.base import Component
from forge.validate.crd_index import LazyCrdFolder
from forge.validate.failure import Failure
from forge.validate.kube import KubeSchemas
from forge.validate.policies import check_policies

Problem = tuple[str, str]  # (field path, reason)
ObjectCheck = Callable[[dict[str, Any]], list[Problem]]


class ComponentCheck(Protocol):
    def __call__(self, report: Report, cluster: str, component: str, objects: list[dict[str, Any]]) -> None: ...


class SchemaSource(Protocol):
    def validate(self, obj: dict[str, Any]) -> list[Problem] | None: ...


@dataclass
class Report:
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    # per cluster: "objects", "by_crd" (of which checked against a CRD), "keys" (values keys checked)
    per_cluster: dict[str, Counter[str]] = field(default_factory=dict)
    values_files: int = 0
    seconds: float = 0.0

    def count(self, cluster: str, what: str, n: int = 1) -> None:
        counts = self.per_cluster.get(cluster)
        if counts is None:  # (setdefault would build a Counter on every call: once per object)
            counts = self.per_cluster[cluster] = Counter()
        counts[what] += n

    @property
    def objects(self) -> int:
        return sum(c["objects"] for c in self.per_cluster.values())

    @property
    def rate(self) -> float:
        return self.objects / self.seconds if self.seconds else 0.0

    def sort(self) -> None:
        self.failures.sort()
        self.warnings.sort()


@functools.cache
def kube_schemas(version: str) -> KubeSchemas:
    """One compiled schema set per Kubernetes version, shared by every cluster on it."""
    return KubeSchemas(version)


_RUNTIME: dict[tuple[tuple[str, int, int], ...], LazyCrdFolder] = {}


def runtime_crds(components: Iterable[Component], upstream: Path | None) -> LazyCrdFolder:
    """The last resort: the CRDs operators apply at run time (nv-ipam's IPPool), from the upstream
    data folder each component names; none without upstream data (those objects are unchecked).

    One per set of files, kept for the process (every cluster compiled them again: ~2 ms each);
    the key holds each file's size and mtime, so a file edited meanwhile is read again."""
    if upstream is None:
        return LazyCrdFolder([])
    folders = sorted(f for f in {upstream / r.data_dir / "crds" for c in components for r in c.runtime_crd_data()} if f.is_dir())
    stats = [(str(p), p.stat()) for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()]
    key = tuple((name, st.st_size, st.st_mtime_ns) for name, st in stats)
    if key not in _RUNTIME:
        if len(_RUNTIME) > 16:
            _RUNTIME.clear()
        _RUNTIME[key] = LazyCrdFolder(folders)
    return _RUNTIME[key]


def runtime_kinds(components: Iterable[Component]) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every CRD these components' operators apply at run time."""
    return {(r.group_version, kind) for c in components for r in c.runtime_crd_data() for kind in r.kinds}


def missing_runtime_data(cluster: str, components: Iterable[Component], upstream: Path) -> list[Failure]:
    """A runtime CRD data folder the upstream data lacks: its objects could not be checked."""
    return [Failure(cluster, c.name, r.data_dir, "", f"no reference data for the CRDs the operator applies at run time "
                                                     f"({', '.join(r.kinds)}): {upstream / r.data_dir / 'crds'} is missing")
            for c in components for r in c.runtime_crd_data() if not (upstream / r.data_dir / "crds").is_dir()]


def policies(required_labels: dict[str, str], skip: Callable[[dict[str, Any], str], bool] | None = None,
             imageless: Callable[[dict[str, Any]], bool] = lambda obj: False) -> ObjectCheck:
    """The house rules as an object check; `skip(obj, path)` drops a problem the mode excuses;
    `imageless(obj)`: the object is known to hold no image field (not searched)."""
    def check(obj: dict[str, Any]) -> list[Problem]:
        found = check_policies(obj, required_labels=required_labels, images=not imageless(obj))
        return [p for p in found if not skip(obj, p[0])] if skip else found

    return check


@dataclass
class Engine:
    """The checks of one cluster's objects (see the module doc)."""

    kube: KubeSchemas
    crds: Sequence[SchemaSource]  # after the kube schemas, in order; runtime CRDs last
    no_schema: Callable[[dict[str, Any]], list[Problem] | None]  # None: list the object as unchecked
    object_checks: Sequence[ObjectCheck] = ()

    def schema_problems(self, obj: dict[str, Any]) -> tuple[list[Problem] | None, bool]:
        """(problems, checked against a CRD); problems None when no schema knows the object."""
        problems = self.kube.validate(obj)
        if problems is not None:
            return problems, False
        for source in self.crds:
            problems = source.validate(obj)
            if problems is not None:
                return problems, True
        return None, False

    def check_object(self, report: Report, cluster: str, component: str, obj: dict[str, Any], where: str) -> None:
        problems, by_crd = self.schema_problems(obj)
        if by_crd:
            report.count(cluster, "by_crd")
        if problems is None:
            problems = self.no_schema(obj)
            if problems is None:
                report.unchecked.append(f"{cluster} / {component} / {obj.get('apiVersion')} {obj.get('kind')}")
                problems = []
        for check in self.object_checks:
            problems = problems + check(obj)
        report.count(cluster, "objects")
        report.failures += [Failure(cluster, component, where, path, reason) for path, reason in problems]

    def check_component(self, report: Report, cluster: str, component: str,
                        items: Iterable[tuple[dict[str, Any], str]], plugins: Sequence[ComponentCheck] = ()) -> None:
        """Every object (with where it is, for the failure line), then the component's plug-ins."""
        objects = []
        for obj, where in items:
            self.check_object(report, cluster, component, obj, where)
            objects.append(obj)
        for plugin in plugins:
            plugin(report, cluster, component, objects)

"""The admission policies (forge.validate.admission) of one cluster, wired to its components: one
entry point for `forge validate` (rendered output) and `forge validate --hydrated` alike."""
from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any, Mapping, Sequence

from forge.components.base import Component
from forge.components.external_secrets import ExternalSecrets
from forge.fleet import components_of
from forge.model.cluster import ClusterModel
from forge.files.paths import OVERLAYS_DIR
from forge.validate.admission import example_objects, pod_security, secret_references
from forge.validate.failure import Failure
from forge.validate.objects import load_yaml_stream
from forge.validate.podsecurity import ENFORCE, PodSpecs


def admission_failures(root: Path, cluster: ClusterModel, components: Sequence[Component],
                       objects: dict[str, list[dict[str, Any]]], values: Mapping[str, Any] | None = None,
                       lacks: Mapping[str, frozenset[str]] | None = None) -> list[Failure]:
    """Pod Security and Secret-reference failures of a cluster's output (`objects`: component ->
    objects) and of the examples and values files forge wrote for `components` (those checked:
    all the cluster runs, or those `--component` selects). `values`: component -> its values.yaml
    already read (the rest are read here). `lacks`: component -> keys its output cannot hold
    (forge.validate.objects.absent_keys): without `containers`, no pod spec is searched for."""
    read = values or {}
    names = {c.name for c in components}
    destinations = {c.name: c.namespace for c in components_of(cluster)}
    examples = {k: v for k, v in example_objects(root, cluster.name).items() if k in names}
    eso = ExternalSecrets()
    specs = PodSpecs()
    specs.none_in(o for c, objs in objects.items() if "containers" in (lacks or {}).get(c, ()) for o in objs)
    # Argo CD's namespace is not forge's: the pods forge puts there (the prerequisites check) are
    # held to `restricted`, whatever the installation enforces.
    argo = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster.settings.argocd.namespace,
                                                                  "labels": {ENFORCE: "restricted"}}}
    problems = pod_security(objects, destinations, examples, chain(chain.from_iterable(objects.values()), [argo]), specs)
    problems += secret_references(
        objects, values={c.name: read[c.name] if c.name in read else _values(root, cluster.name, c.name)
                         for c in components if c.chart},
        destinations=destinations, namespaces={c.name: c.namespaces(cluster) for c in components},
        runtime={c.name: c.produced_secrets(cluster) for c in components},
        bootstrap=eso.bootstrap_secret(cluster) if eso.enabled(cluster) else None, specs=specs)
    return [Failure(cluster.name, p.component, p.where, p.path, p.reason) for p in problems]


def _values(root: Path, cluster: str, component: str) -> Any:
    path = root / OVERLAYS_DIR / cluster / component / "values.yaml"
    docs = load_yaml_stream(path.read_text(encoding="utf-8")) if path.is_file() else []
    return docs[0] if docs else {}

"""Small helpers shared by the validators: parse rendered YAML fast, name objects, build Failures."""
from __future__ import annotations

from typing import Any, Iterable

import yaml

from forge.validate.failure import Failure

# libyaml's C loader is ~10x faster than the pure-Python one, and parsing dominates validation time.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loader that reads values the way kubectl / Argo CD (sigs.k8s.io/yaml) do.

    Subclassed so we never mutate yaml.SafeLoader globally for other users.
    """


def _as_str(loader: yaml.BaseLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


# PyYAML resolves a bare `=` to the YAML 1.1 "value" type and then has no constructor for it
# (pyyaml#89); CRDs use `=` in enums (e.g. prometheus-operator's matcher types). Read it as text.
_Loader.add_constructor("tag:yaml.org,2002:value", _as_str)
# Unquoted dates would become datetime objects, which no JSON schema can check (and jsonschema_rs
# refuses). The Kubernetes tool chain turns YAML into JSON, where they are plain strings.
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_str)


def load_yaml_stream(text: str) -> list[dict[str, Any]]:
    """Every non-empty document of a multi-document YAML stream, in order.

    A document that is not a mapping cannot be a Kubernetes object: that is an error, not a skip.
    """
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(yaml.load_all(text, Loader=_Loader)):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ValueError(f"YAML document {i} is a {type(doc).__name__}, not a mapping")
        out.append(doc)
    return out


def object_id(obj: dict[str, Any]) -> str:
    """"Kind/namespace/name", or "Kind/name" when the object has no namespace (cluster-scoped)."""
    meta = obj.get("metadata") or {}
    kind = obj.get("kind") or "?"
    name = meta.get("name") or meta.get("generateName") or "?"
    ns = meta.get("namespace")
    return f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}"


def to_failures(
    cluster: str, component: str, obj: str, problems: Iterable[tuple[str, str]]
) -> list[Failure]:
    """Wrap (path, reason) pairs from any validator in Failures for one object or values file."""
    return [Failure(cluster, component, obj, path, reason) for path, reason in problems]

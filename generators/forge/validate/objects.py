"""Small helpers shared by the validators: parse rendered YAML fast, name objects, build Failures."""
from __future__ import annotations

import re
from typing import Any, Iterable

import yaml

from forge.validate.failure import Failure
from forge.validate.fastyaml import Loader, load_documents


def load_yaml_stream(text: str) -> list[dict[str, Any]]:
    """Every non-empty document of a multi-document YAML stream, in order, read the way kubectl
    and Argo CD (sigs.k8s.io/yaml: YAML 1.1) read it (forge.validate.fastyaml).

    A document that is not a mapping cannot be a Kubernetes object: that is an error, not a skip.
    """
    fast = load_documents(text)
    return fast if fast is not None else pyyaml_stream(text)


# Keys validation looks for in every object, at any depth: an image field (forge.validate.policies)
# and a pod spec's `containers` (forge.validate.podsecurity).
WALKED_KEYS = ("image", "containers")
_ESCAPE = re.compile(r"\\[xuU\r\n]")  # how a double-quoted key could spell a name without it


def absent_keys(text: str, keys: Iterable[str] = WALKED_KEYS) -> frozenset[str]:
    """Of `keys`, those no mapping read from this YAML text can have at any depth, so that no
    walk need look for them (most of a cluster's output: the NodeFeatureRules, the alert rules).
    A key is in the text as written (plain or quoted), unless a double-quoted scalar spells it
    with an escape (`\\x69mage`, or a line break escaped inside it): then none is absent."""
    if _ESCAPE.search(text):
        return frozenset()
    return frozenset(k for k in keys if k not in text)


def pyyaml_stream(text: str) -> list[dict[str, Any]]:
    """The same, read by PyYAML alone (what ryaml's reading must equal)."""
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(yaml.load_all(text, Loader=Loader)):
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

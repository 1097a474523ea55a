"""Validate custom resources against the CustomResourceDefinitions that define them.

A CRD's `openAPIV3Schema` (a structural OpenAPI v3 schema plus `x-kubernetes-*` extensions) is
converted to a JSON schema that accepts what the API server accepts with strict field validation
(`kubectl apply --validate=strict`, Argo CD's server-side apply):

* `x-kubernetes-int-or-string` -> integer or string; `nullable` -> null also allowed;
* `x-kubernetes-preserve-unknown-fields` -> extra fields allowed there;
* any other object without `additionalProperties` -> `additionalProperties: false`. The API server
  prunes fields its schema does not name, and strict validation turns each pruned field into an
  error. That includes a bare `type: object` with no properties: all its fields would be pruned;
* `x-kubernetes-embedded-resource` -> apiVersion/kind/metadata allowed in that object;
* the root's `metadata` is checked only loosely (name/namespace strings, labels/annotations string
  maps): the API server validates ObjectMeta itself, and CRDs rarely describe it;
* `allOf`/`anyOf`/`oneOf`/`not` are value validations in structural schemas: converted, but no
  `additionalProperties: false` is added anywhere inside them (their branches list only some
  fields; the schema outside them already fixes which fields exist);
* not checked: CEL rules (`x-kubernetes-validations`), `format`, list-map key uniqueness.

Each (group, version, kind) is compiled once with jsonschema_rs, when first needed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jsonschema_rs

from forge.validate._schema import check
from forge.validate.upstream_data import crd_documents

_STR = {"type": "string"}
_STR_MAP = {"type": "object", "additionalProperties": _STR}
_METADATA = {
    "type": "object",
    "properties": {
        "name": _STR,
        "namespace": _STR,
        "generateName": _STR,
        "labels": _STR_MAP,
        "annotations": _STR_MAP,
    },
}
# Keywords with the same meaning in OpenAPI v3 and JSON schema, copied as they are.
_SAME = (
    "required", "pattern", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties", "multipleOf", "minimum", "maximum",
)


def convert(node: Any, *, in_junctor: bool = False) -> dict[str, Any]:
    """One OpenAPI v3 (structural) schema node as a JSON schema node; see the module docstring."""
    if not isinstance(node, dict):
        return {}
    out: dict[str, Any] = {k: node[k] for k in _SAME if k in node}
    nullable = node.get("nullable") is True
    if node.get("x-kubernetes-int-or-string") is True:
        types = ["integer", "string"]
    else:
        types = [node["type"]] if isinstance(node.get("type"), str) else []
    if types:
        out["type"] = types + ["null"] if nullable else (types[0] if len(types) == 1 else types)
    if "enum" in node:
        out["enum"] = list(node["enum"]) + ([None] if nullable and None not in node["enum"] else [])
    # OpenAPI v3.0 exclusiveMinimum/Maximum are booleans modifying minimum/maximum.
    for excl, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if node.get(excl) is True and bound in out:
            out[excl] = out.pop(bound)
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True  # the API server rejects duplicates in a set list

    props = {k: convert(v, in_junctor=in_junctor) for k, v in (node.get("properties") or {}).items()}
    if node.get("x-kubernetes-embedded-resource") is True:
        props.setdefault("apiVersion", _STR)
        props.setdefault("kind", _STR)
        props["metadata"] = _METADATA
    if props:
        out["properties"] = props
    if isinstance(node.get("items"), dict):
        out["items"] = convert(node["items"], in_junctor=in_junctor)
    for junctor in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(junctor), list):
            out[junctor] = [convert(b, in_junctor=True) for b in node[junctor]]
    if isinstance(node.get("not"), dict):
        out["not"] = convert(node["not"], in_junctor=True)

    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = convert(extra, in_junctor=in_junctor)
    elif extra is False or (
        extra is None
        and not in_junctor
        and node.get("x-kubernetes-preserve-unknown-fields") is not True
        and (node.get("type") == "object" or "properties" in node)
    ):
        out["additionalProperties"] = False  # pruned by the API server -> strict error
        # Without a `properties` keyword jsonschema_rs reports only the first extra value, at
        # the parent's path, with no field name; an empty one makes it name every field.
        out.setdefault("properties", {})
    return out


def root_schema(open_api: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON schema for a whole custom resource of one CRD version."""
    if open_api is None:  # a version without a schema (old v1beta1 CRDs): anything goes
        return {"type": "object"}
    schema = convert(open_api)
    schema["type"] = "object"
    props = schema.setdefault("properties", {})
    props["apiVersion"] = _STR
    props["kind"] = _STR
    props["metadata"] = _METADATA
    return schema


@dataclass
class _Crd:
    name: str
    namespaced: bool
    versions: dict[str, tuple[bool, dict[str, Any] | None]]  # name -> (served, openAPIV3Schema)
    validators: dict[str, jsonschema_rs.Validator] = field(default_factory=dict)


class CrdSchemas:
    """Known CRDs by (group, kind); validators compiled per version on first use."""

    def __init__(self) -> None:
        self._crds: dict[tuple[str, str], _Crd] = {}

    def add_crd(self, crd: dict[str, Any]) -> None:
        """Add one CustomResourceDefinition (apiextensions.k8s.io v1, or the old v1beta1 shape).
        A later CRD for the same group and kind replaces the earlier one."""
        spec = crd.get("spec") or {}
        group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
        # v1beta1 allowed one schema for all versions under spec.validation, and spec.version.
        shared = (spec.get("validation") or {}).get("openAPIV3Schema")
        versions = spec.get("versions") or ([{"name": spec["version"], "served": True}] if spec.get("version") else [])
        table = {
            v["name"]: (v.get("served", True) is not False, ((v.get("schema") or {}).get("openAPIV3Schema") or shared))
            for v in versions
        }
        name = (crd.get("metadata") or {}).get("name", f"{kind}.{group}")
        self._crds[(group, kind)] = _Crd(name, spec.get("scope", "Namespaced") == "Namespaced", table)

    def add_objects(self, objs: Iterable[dict[str, Any]]) -> int:
        """Add the CRDs among rendered objects (a chart that installs its own CRDs). Returns how many."""
        n = 0
        for obj in objs:
            if obj.get("kind") == "CustomResourceDefinition" and str(obj.get("apiVersion", "")).startswith("apiextensions.k8s.io/"):
                self.add_crd(obj)
                n += 1
        return n

    def add_dir(self, path: str | Path) -> int:
        """Add every CRD in the *.yaml / *.yml files below path (recursively). Returns how many."""
        files = sorted(p for p in Path(path).rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        return sum(self.add_objects(crd_documents(f)) for f in files)

    def _lookup(self, api_version: str, kind: str) -> _Crd | None:
        return self._crds.get((api_version.rpartition("/")[0], kind))

    def kinds(self) -> frozenset[tuple[str, str]]:
        """Every (apiVersion, kind) a known CRD defines, served or not."""
        return frozenset((f"{g}/{v}", k) for (g, k), crd in self._crds.items() for v in crd.versions)

    def is_namespaced(self, api_version: str, kind: str) -> bool | None:
        """True/False from the CRD's scope; None when no known CRD defines the kind."""
        crd = self._lookup(api_version, kind)
        return None if crd is None else crd.namespaced

    def validate(self, obj: dict[str, Any]) -> list[tuple[str, str]] | None:
        """Problems as (dotted path, message); [] when valid; None when no known CRD defines the
        group and kind (the caller reports the object as unchecked, never as passed)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        crd = self._lookup(api_version, kind)
        if crd is None:
            return None
        version = api_version.rpartition("/")[2]
        if version not in crd.versions:
            return [("apiVersion", f"CRD {crd.name} has no version {version} (has: {', '.join(crd.versions)})")]
        served, open_api = crd.versions[version]
        if not served:
            return [("apiVersion", f"CRD {crd.name} does not serve version {version}")]
        validator = crd.validators.get(version)
        if validator is None:
            validator = jsonschema_rs.validator_for(root_schema(open_api), offline=True)
            crd.validators[version] = validator
        return check(validator, obj)

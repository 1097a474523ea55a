"""Turn jsonschema_rs errors into short (path, message) pairs, shared by kube.py and crd.py.

jsonschema_rs messages embed the offending instance, which for a pod template is kilobytes of
JSON; we rebuild a short message from the error kind instead, and point unknown or missing
fields at the field itself rather than at its parent object.
"""
from __future__ import annotations

import json
from typing import Any

import jsonschema_rs

_MAX = 160  # longest message we pass on; the path already says where


def dotted(parts: list[str | int] | tuple[str | int, ...]) -> str:
    """["spec", "containers", 0, "image"] -> "spec.containers[0].image"."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


# A path being walked, as links to the parent's: (parent link, key), None at the root. A walk
# makes one small tuple per step and spells the path out only where it reports something.
Link = tuple[Any, str | int] | None


def dotted_link(link: Link, prefix: str = "") -> str:
    """The dotted path a Link ends at, below `prefix` (dotted's spelling)."""
    parts: list[str | int] = []
    while link is not None:
        link, key = link
        parts.append(key)
    parts.reverse()
    return dotted([prefix, *parts]) if prefix else dotted(parts)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _types(types: list[str]) -> str:
    # Kubernetes schemas make nearly everything nullable; "null" in the list is just noise.
    shown = [t for t in types if t != "null"] or types
    return " or ".join(shown)


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _branch_types(err: jsonschema_rs.ValidationError) -> list[str] | None:
    """For anyOf/oneOf whose branches only failed on type (IntOrString, Quantity), the types."""
    found: list[str] = []
    for branch in err.kind.context:
        if len(branch) != 1 or branch[0].kind.name != "type":
            return None
        found += [t for t in branch[0].kind.types if t not in found]
    return found


def messages(err: jsonschema_rs.ValidationError) -> list[tuple[str, str]]:
    """One jsonschema_rs error as (path, message) pairs (unknown fields give one pair each)."""
    path = list(err.instance_path)
    kind = err.kind
    name = kind.name
    if name == "additionalProperties":
        return [(dotted(path + [k]), "unknown field") for k in kind.unexpected]
    if name == "required":
        return [(dotted(path + [kind.property]), "required field missing")]
    if name == "type":
        return [(dotted(path), f"expected {_types(kind.types)}, got {_json_type(err.instance)}")]
    if name == "enum":
        opts = ", ".join(_short(o) for o in kind.options[:8]) + (", ..." if len(kind.options) > 8 else "")
        return [(dotted(path), f"{_short(err.instance)} is not one of: {opts}")]
    if name in ("anyOf", "oneOf"):
        types = _branch_types(err)
        if types:
            return [(dotted(path), f"expected {_types(types)}, got {_json_type(err.instance)}")]
        return [(dotted(path), f"{_json_type(err.instance)} value matches none of the allowed forms ({name})")]
    if name == "falseSchema":
        if err.schema_path and err.schema_path[-1] == "additionalProperties":
            # jsonschema_rs's shape for additionalProperties: false with no `properties`:
            # the path is the parent's and the field name is lost.
            return [(dotted(path), "unknown field (this object takes no fields)")]
        return [(dotted(path), "field not allowed here")]
    msg = err.message
    if len(msg) > _MAX:
        msg = msg[: _MAX - 3] + "..."
    return [(dotted(path), msg)]


def check(validator: jsonschema_rs.Validator, obj: Any) -> list[tuple[str, str]]:
    """All problems of obj under a compiled validator; the fast is_valid path first."""
    try:
        if validator.is_valid(obj):
            return []
        out: list[tuple[str, str]] = []
        for err in validator.iter_errors(obj):
            out += messages(err)
        return out
    except ValueError as exc:  # not JSON-shaped: a non-string map key, a Python object, ...
        return [("", f"not representable as JSON: {exc}")]

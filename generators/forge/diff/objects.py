"""Objects by identity and their field-level differences.

Two renders are compared object by object, an object being known by its identity (API group,
kind, namespace, name) inside one cluster and component. Key order, comments and YAML layout
never show: both sides are parsed first. Lists of named items (containers, env, rules) are
matched by name, so inserting one item does not show every later item as changed; a multi-line
string that is itself YAML (a ConfigMap's config file, mig-parted's config in the Helm values)
is compared as YAML.

Secret values never leave this module: a Secret's data/stringData and values keys that name a
credential are compared, but shown only as "<redacted>".
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple

import yaml

# The pseudo-kind of a component's Helm values file: the chart's output depends on it, but the
# chart is rendered by Argo CD, not by `forge render`, so the values are what we can compare.
VALUES_KIND = "HelmValues"
REDACTED = "<redacted>"
# libyaml's parser: the pure-Python one took most of a diff's time on a large fleet.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SENSITIVE_KEY = re.compile(r"(?i)(password|passwd|passphrase|token|secret[-_]?key|private[-_]?key|access[-_]?key|client[-_]?secret|credentials?)$")


class Identity(NamedTuple):
    group: str  # "" for the core API group
    kind: str
    namespace: str  # "" for cluster-scoped objects (or not set in the render)
    name: str

    def __str__(self) -> str:
        if self.kind == VALUES_KIND:
            return f"Helm values of {self.name}"
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}" + (f" ({self.group})" if self.group else "")


def identity_of(obj: dict[str, Any]) -> Identity:
    api = str(obj.get("apiVersion", ""))
    group = api.rpartition("/")[0] if "/" in api else ""
    meta = obj.get("metadata") or {}
    return Identity(group, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


def values_identity(component: str) -> Identity:
    return Identity("", VALUES_KIND, "", component)


def parse_objects(text: str, where: str) -> dict[Identity, dict[str, Any]]:
    from forge.errors import ForgeError

    out: dict[Identity, dict[str, Any]] = {}
    try:
        docs = [d for d in yaml.load_all(text, Loader=LOADER) if d]
    except yaml.YAMLError as exc:
        raise ForgeError(f"{where}: rendered output is not YAML: {exc}") from None
    for doc in docs:
        if not isinstance(doc, dict):
            raise ForgeError(f"{where}: a rendered document is not a mapping")
        out[identity_of(doc)] = doc
    return out


# ---- paths --------------------------------------------------------------------------------------

class Named(NamedTuple):
    """A list item picked by its `name`."""
    name: str


class Embedded(NamedTuple):
    """Step into a string that holds YAML."""


EMBEDDED = Embedded()
PathPart = str | int | Named | Embedded
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


def format_path(path: Iterable[PathPart]) -> str:
    out = ""
    for part in path:
        if isinstance(part, Embedded):
            out += " > "
        elif isinstance(part, Named):
            out += f"[name={part.name}]"
        elif isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += part if not out or out.endswith(" > ") else f".{part}"
        else:
            out += f'["{part}"]'
    return out or "(whole)"


def keys_of(path: Iterable[PathPart]) -> tuple[str, ...]:
    """The mapping keys along a path (list positions left out): what risk rules match on."""
    return tuple(p for p in path if isinstance(p, str))


# ---- field diff ---------------------------------------------------------------------------------

class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class FieldChange:
    path: tuple[PathPart, ...]
    old: Any  # MISSING: the field was added
    new: Any  # MISSING: the field was removed
    sensitive: bool = False  # compared, never shown

    @property
    def where(self) -> str:
        return format_path(self.path)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _named_items(items: list[Any]) -> dict[str, Any] | None:
    if not items or not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    named = {i["name"]: i for i in items}
    return named if len(named) == len(items) else None


def _embedded_yaml(text: Any) -> Any:
    if not isinstance(text, str) or "\n" not in text:
        return None
    try:
        parsed = yaml.load(text, Loader=LOADER)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def diff_fields(old: Any, new: Any, path: tuple[PathPart, ...] = (), secret: bool = False) -> list[FieldChange]:
    """Every leaf-level difference between two parsed documents, in document order."""
    sensitive = secret or bool(path and isinstance(path[-1], str) and _SENSITIVE_KEY.search(path[-1]))
    if _same(old, new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):  # a Secret's data: one change per key
        changes: list[FieldChange] = []
        for key in [*old, *(k for k in new if k not in old)]:
            changes += diff_fields(old.get(key, MISSING), new.get(key, MISSING), path + (key,), secret)
        return changes
    if sensitive:
        return [FieldChange(path, old, new, sensitive=True)]
    if isinstance(old, list) and isinstance(new, list):
        return _diff_lists(old, new, path)
    inner_old, inner_new = _embedded_yaml(old), _embedded_yaml(new)
    if inner_old is not None and inner_new is not None:
        return diff_fields(inner_old, inner_new, path + (EMBEDDED,))
    return [FieldChange(path, old, new)]


def _diff_lists(old: list[Any], new: list[Any], path: tuple[PathPart, ...]) -> list[FieldChange]:
    """Named items by name; other lists item by item, aligned like a line diff, so inserting one
    entry into a long list (an AppProject's whitelist) shows as that entry alone."""
    old_named, new_named = _named_items(old), _named_items(new)
    if old_named is not None and new_named is not None:
        changes: list[FieldChange] = []
        for name in [*old_named, *(n for n in new_named if n not in old_named)]:
            changes += diff_fields(old_named.get(name, MISSING), new_named.get(name, MISSING), path + (Named(name),))
        return changes
    key = lambda item: json.dumps(item, sort_keys=True, default=str)  # noqa: E731
    matcher = difflib.SequenceMatcher(a=[key(i) for i in old], b=[key(i) for i in new], autojunk=False)
    changes = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:  # the same places, changed: compare inside
            for k in range(i2 - i1):
                changes += diff_fields(old[i1 + k], new[j1 + k], path + (j1 + k,))
            continue
        changes += [FieldChange(path + (k,), old[k], MISSING) for k in range(i1, i2)]
        changes += [FieldChange(path + (k,), MISSING, new[k]) for k in range(j1, j2)]
    return changes


# ---- objects ------------------------------------------------------------------------------------

def is_secret(ident: Identity) -> bool:
    return ident.group == "" and ident.kind == "Secret"


def diff_object(ident: Identity, old: dict[str, Any], new: dict[str, Any]) -> list[FieldChange]:
    if not is_secret(ident):
        return diff_fields(old, new)
    changes: list[FieldChange] = []
    for key in [*old, *(k for k in new if k not in old)]:
        changes += diff_fields(old.get(key, MISSING), new.get(key, MISSING), (key,), secret=key in ("data", "stringData"))
    return changes


def redacted(obj: Any, secret: bool = False) -> Any:
    """A copy fit to print: a Secret's data and credential-named keys replaced by <redacted>."""
    def walk(node: Any, top: bool) -> Any:
        if isinstance(node, list):
            return [walk(v, False) for v in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if top and secret and key in ("data", "stringData") and isinstance(value, dict):
                out[key] = {k: REDACTED for k in value}
            elif isinstance(key, str) and _SENSITIVE_KEY.search(key) and not isinstance(value, (dict, list)):
                out[key] = REDACTED
            else:
                out[key] = walk(value, False)
        return out

    return walk(obj, True)


@dataclass
class ObjectChange:
    cluster: str
    component: str
    ident: Identity
    action: str  # "added" | "removed" | "changed"
    old: dict[str, Any] | None = None
    new: dict[str, Any] | None = None
    fields: list[FieldChange] = field(default_factory=list)

    @property
    def sort_key(self) -> tuple:
        order = {"removed": 0, "changed": 1, "added": 2}
        return (self.cluster, self.component, order[self.action], self.ident.kind, self.ident.namespace, self.ident.name)

    def printable(self, side: str) -> dict[str, Any] | None:
        obj = self.old if side == "old" else self.new
        return None if obj is None else redacted(obj, is_secret(self.ident))


def compare(cluster: str, component: str, old: dict[Identity, dict[str, Any]],
            new: dict[Identity, dict[str, Any]]) -> list[ObjectChange]:
    changes = []
    for ident in sorted(set(old) | set(new)):
        if ident not in new:
            changes.append(ObjectChange(cluster, component, ident, "removed", old=old[ident]))
        elif ident not in old:
            changes.append(ObjectChange(cluster, component, ident, "added", new=new[ident]))
        else:
            fields = diff_object(ident, old[ident], new[ident])
            if fields:
                changes.append(ObjectChange(cluster, component, ident, "changed", old[ident], new[ident], fields))
    return changes

"""Per-cluster overrides: what the inventory does not model, kept by hand in
clusters/<cluster>/overrides/<component>/ and never written by forge (docs/overrides.md).

  values.yaml       Helm values merged last into the component's generated values (a mapping;
                    Helm's rules: mappings merge key by key, anything else replaces, null removes);
  patches/*.yaml    kustomize patches (strategic merge: apiVersion, kind, metadata.name of the
                    object they change), listed under `patches:` of the overlay;
  *.yaml            extra manifests, listed under `resources:` of the overlay.

Patches and manifests are copied into overlays/<cluster>/<component>/overrides/ (kustomize reads
no file outside its folder) with a header naming their source, so render, validate and diff treat
them as any other object. Anything else in the folder is refused with its path.

An override is held to what the generated output is held to, after merging (issue 36): no
credential in it (Helm's camelCase names too: `adminPassword: admin`), and no change to what a
component guards (`Component.guarded_values`: Flyte's login when the inventory asks for one, External
Secrets' aggregation to the edit and admin roles), and no privilege an override widens
(forge.generate.override_rules: bindings to everyone or of cluster-admin, webhooks calling a URL or
seeing every resource, the secret store's conditions, a privileged Namespace, a hostPath on / or a
system folder, in manifests and patches as written and in the merged values).
A deliberate exception is one reviewed entry of clusters/<cluster>/overrides/exceptions.yaml
(component, path, reason, reviewed_by): it lets exactly that key path through, `forge validate`
reports it as a warning every run, and one that matches nothing is refused as stale.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.files import datafile
from forge.errors import ForgeError, Problem
from forge.generate import override_rules
from forge.inventory import credentials
from forge.files.paths import CLUSTERS_DIR

OVERRIDES_DIR = "overrides"  # clusters/<cluster>/overrides/<component>/
VALUES_FILE = "values.yaml"
PATCHES_DIR = "patches"
COPIED_DIR = "overrides"  # overlays/<cluster>/<component>/overrides/: the copies kustomize reads
EXCEPTIONS_FILE = "exceptions.yaml"  # clusters/<cluster>/overrides/exceptions.yaml: reviewed exceptions
EXCEPTION_FIELDS = ("component", "file", "path", "reason", "reviewed_by")
FIX = ("an override is committed and copied into generated files: put the credential in a Secret (External Secrets) and "
       "name it with the chart's existingSecret-style key; if this one was pushed anywhere, rotate it")
ALLOWED = "values.yaml (Helm values), patches/*.yaml (kustomize patches), *.yaml (extra manifests)"


@dataclass(frozen=True)
class Exception_:
    """One reviewed entry of exceptions.yaml: `path` (dotted, as forge's errors name it) of
    `file` (values.yaml unless given) of `component`'s overrides may break a check."""

    component: str
    file: str
    path: str
    reason: str
    reviewed_by: str
    source: str  # clusters/<c>/overrides/exceptions.yaml
    line: int

    def note(self) -> str:
        return f"excepted by {self.source}:{self.line}: {self.reason} (reviewed by {self.reviewed_by})"


@dataclass
class Overrides:
    """One component's overrides on one cluster (all paths repo-relative)."""

    folder: str
    values: dict[str, Any] | None = None
    lines: dict[tuple, int] = field(default_factory=dict)  # values.yaml: key path -> line
    exceptions: dict[tuple[str, str], Exception_] = field(default_factory=dict)  # (file, path) -> entry
    used: set[tuple[str, str]] = field(default_factory=set)
    manifests: dict[str, str] = field(default_factory=dict)  # source path -> text
    patches: dict[str, str] = field(default_factory=dict)  # source path -> text


def folder_of(cluster: str) -> str:
    return f"{CLUSTERS_DIR}/{cluster}/{OVERRIDES_DIR}"


def _suggest(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def _read(path: Path, rel: str, root: Path, hand: Overrides | None = None
          ) -> tuple[str, list[Any], dict[tuple, int], list[dict[tuple, int]]]:
    """The text, documents and (values.yaml) key lines of one override file, read as the inventory
    is (forge.files.textguard: a regular file inside the repository, bounded, UTF-8; no alias bomb) and
    scanned for credentials as the inventory is: an override is committed, and copied into
    generated files. Helm values are scanned as Helm values (credentials.find_credentials(helm)).
    The last item: the key lines of each document of a manifest or patch."""
    lines: dict[tuple, int] = {}
    doc_lines: list[dict[tuple, int]] = []
    try:
        text = datafile.read(path, rel, root, "an override")
        if path.name == VALUES_FILE and path.parent.name != PATCHES_DIR:
            doc, lines = datafile.parse(text, rel)
            docs = [doc] if doc is not None else []
        else:
            pairs = [(d, at) for d, at in datafile.parse_all_lines(text, rel) if d is not None]
            docs, doc_lines = [d for d, _ in pairs], [at for _, at in pairs]
    except datafile.DataFileError as exc:  # one line per problem, as every override error
        raise ForgeError("\n".join(f"{p.file}:{p.line}: {p.path or '<yaml>'}: {p.message}" for p in exc.problems)) from None
    found = [Problem(rel, line, "", f"looks like {what}: {FIX}") for line, what in credentials.find_in_text(text)]
    for i, doc in enumerate(docs):
        for where, what in credentials.find_credentials(doc, helm=bool(lines)):
            where = where if lines or len(docs) == 1 else (i, *where)
            found.append(Problem(rel, _line(lines, where), datafile.dotted(where), f"looks like {what}: {FIX}"))
    refuse(found, hand)
    return text, docs, lines, doc_lines


def excepting(hand: Overrides, file: str, path: str) -> str:
    """How to let one finding through on purpose (docs/overrides.md, "A deliberate exception")."""
    component = hand.folder.rsplit("/", 1)[-1]
    return (f"if it is meant, a reviewed entry of {hand.folder.rsplit('/', 1)[0]}/{EXCEPTIONS_FILE} (component: {component}, "
            f"file: {file.removeprefix(hand.folder + '/')}, path: {path}, reason, reviewed_by) lets exactly this through")


def check_rules(hand: Overrides, rel: str, docs: list[Any], doc_lines: list[dict[tuple, int]], patch: bool) -> None:
    """A manifest or patch held to forge.generate.override_rules (RBAC, webhooks, the secret
    store's conditions, Pod Security, host folders), each finding at its line."""
    found = []
    for i, (doc, lines) in enumerate(zip(docs, doc_lines)):
        for where, why in override_rules.document_findings(doc, patch):
            path = datafile.dotted((i, *where) if len(docs) > 1 else where)
            found.append(Problem(rel, _line(lines, where), path, f"{why}; {excepting(hand, rel, path)}"))
    refuse(found, hand)


def _line(lines: dict[tuple, int], where: tuple) -> int:
    """The line of `where`, or of its nearest ancestor that has one."""
    while where and where not in lines:
        where = where[:-1]
    return lines.get(where, 1)


def refuse(problems: list[Problem], hand: Overrides | None) -> None:
    """Raise the problems that no reviewed exception of `hand` lets through (one line each)."""
    left = []
    for p in problems:
        key = (p.file.rsplit("/", 1)[-1] if hand is None else p.file.removeprefix(f"{hand.folder}/"), p.path)
        if hand is not None and key in hand.exceptions:
            hand.used.add(key)
        else:
            left.append(p)
    if left:
        raise ForgeError("\n".join(map(str, sorted(set(left)))))


def _check_objects(docs: list[Any], rel: str, what: str) -> None:
    if not docs:
        raise ForgeError(f"{rel}:1: <file>: empty: a {what} holds at least one Kubernetes object; delete the file if it is not needed")
    for i, doc in enumerate(docs):
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        missing = [k for k in ("apiVersion", "kind") if not (isinstance(doc, dict) and isinstance(doc.get(k), str) and doc.get(k))]
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
            missing.append("metadata.name")
        if missing:
            raise ForgeError(f"{rel}:1: [{i}]: a {what} needs {', '.join(missing)}: each document is one Kubernetes object")


def load(root: Path, cluster: str, components: dict[str, bool]) -> dict[str, Overrides]:
    """The overrides of `cluster`, by component. `components`: every component name -> whether it
    is enabled on this cluster. A folder or file forge would not use is an error naming it."""
    base = root / folder_of(cluster)
    if not base.exists():
        return {}
    if not base.is_dir():
        raise ForgeError(f"{folder_of(cluster)}: not a folder: overrides go in {folder_of(cluster)}/<component>/")
    out: dict[str, Overrides] = {}
    excepted = read_exceptions(root, cluster)
    for entry in sorted(base.iterdir()):
        rel = f"{folder_of(cluster)}/{entry.name}"
        if entry.name == EXCEPTIONS_FILE:
            continue
        if not entry.is_dir() or entry.name not in components:
            names = sorted(components)
            raise ForgeError(f"{rel}: not a component folder: {_suggest(entry.name, names)}"
                             f"overrides go in {folder_of(cluster)}/<component>/, one of {', '.join(names)}")
        if not components[entry.name]:
            raise ForgeError(f"{rel}: {entry.name} is not enabled on cluster {cluster}: enable it in the inventory or remove the folder")
        hand = Overrides(rel, exceptions={(e.file, e.path): e for e in excepted if e.component == entry.name})
        out[entry.name] = _load_component(entry, rel, root, hand)
    for e in excepted:
        if e.component not in out:
            raise ForgeError(f"{e.source}:{e.line}: [{e.component}]: stale exception: {folder_of(cluster)}/{e.component}/ "
                             "holds no override: delete the entry")
    return out


def read_exceptions(root: Path, cluster: str) -> list[Exception_]:
    """The reviewed exceptions of `cluster` ([] without the file); a malformed entry is an error."""
    rel = f"{folder_of(cluster)}/{EXCEPTIONS_FILE}"
    path = root / rel
    if not path.exists() and not path.is_symlink():
        return []
    try:
        data, lines = datafile.parse(datafile.read(path, rel, root, "an override"), rel)
    except datafile.DataFileError as exc:
        raise ForgeError("\n".join(map(str, exc.problems))) from None
    if not isinstance(data, dict) or set(data) != {"exceptions"} or not isinstance(data["exceptions"], list):
        raise ForgeError(f"{rel}:1: <top>: one key, exceptions: a list of entries ({', '.join(EXCEPTION_FIELDS)}) (docs/overrides.md)")
    out = []
    for i, entry in enumerate(data["exceptions"]):
        at = _line(lines, ("exceptions", i))
        if not isinstance(entry, dict):
            raise ForgeError(f"{rel}:{at}: exceptions[{i}]: an entry is a mapping of {', '.join(EXCEPTION_FIELDS)}")
        unknown = sorted(set(map(str, entry)) - set(EXCEPTION_FIELDS))
        missing = [k for k in EXCEPTION_FIELDS if k != "file" and not (isinstance(entry.get(k), str) and entry[k].strip())]
        if unknown or missing or not isinstance(entry.get("file", VALUES_FILE), str):
            what = f"unknown {', '.join(unknown)}" if unknown else f"needs {', '.join(missing) or 'file as a string'}"
            raise ForgeError(f"{rel}:{at}: exceptions[{i}]: {what}: an exception names component, path (and file, "
                             f"default {VALUES_FILE}), why (reason) and who reviewed it (reviewed_by)")
        out.append(Exception_(entry["component"], entry.get("file", VALUES_FILE), entry["path"], entry["reason"].strip(),
                              entry["reviewed_by"].strip(), rel, at))
    seen: set[tuple[str, str, str]] = set()
    for e in out:
        if (e.component, e.file, e.path) in seen:
            raise ForgeError(f"{rel}:{e.line}: exceptions: {e.component} {e.file} {e.path} given twice")
        seen.add((e.component, e.file, e.path))
    return out


def check_stale(found: dict[str, Overrides]) -> None:
    """An exception that let nothing through is refused: it would hide the next change there."""
    for hand in found.values():
        for key, e in sorted(hand.exceptions.items()):
            if key not in hand.used:
                raise ForgeError(f"{e.source}:{e.line}: [{e.component}] {e.file} {e.path}: stale exception: no check refuses "
                                 f"{hand.folder}/{e.file} at {e.path}: delete the entry")


def check_merged(hand: Overrides, generated: dict[str, Any], merged: dict[str, Any], guarded: dict[str, str]) -> None:
    """The merged values keep every value the component guards (dotted path -> why): an
    override may not change it, remove it (null), or replace a mapping above it."""
    problems: dict[tuple, Problem] = {}  # one per key of the override (a null may remove several)
    for dotted_path, why in sorted(guarded.items()):
        parts = tuple(dotted_path.split("."))
        if _get(merged, parts) == _get(generated, parts):
            continue
        touched = next((parts[:n] for n in range(len(parts), 0, -1) if parts[:n] in hand.lines), ())
        found = Problem(f"{hand.folder}/{VALUES_FILE}", _line(hand.lines, touched), dotted_path,
                        f"{why}: the override changes it to {_show(_get(merged, parts))} (generated: "
                        f"{_show(_get(generated, parts))}): remove the key from the override")
        if (VALUES_FILE, dotted_path) in hand.exceptions:
            refuse([found], hand)  # marks the exception used
        else:
            problems.setdefault(touched, found)
    rel = f"{hand.folder}/{VALUES_FILE}"
    for where, why in override_rules.values_findings(generated, merged):
        path = datafile.dotted(where)
        touched = next((where[:n] for n in range(len(where), 0, -1) if where[:n] in hand.lines), ())
        problems.setdefault(where, Problem(rel, _line(hand.lines, touched), path, f"{why}; {excepting(hand, rel, path)}"))
    refuse(list(problems.values()), hand)


_ABSENT = object()


def _get(data: Any, parts: tuple[str, ...]) -> Any:
    for part in parts:
        if not isinstance(data, dict) or part not in data:
            return _ABSENT
        data = data[part]
    return data


def _show(value: Any) -> str:
    return "absent" if value is _ABSENT else repr(value) if not isinstance(value, (dict, list)) else f"a {type(value).__name__}"


def _load_component(folder: Path, rel: str, root: Path, found: Overrides | None = None) -> Overrides:
    found = found or Overrides(rel)
    for path in sorted(folder.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        name = path.relative_to(folder).as_posix()
        where = f"{rel}/{name}"
        if not name.endswith(".yaml"):
            raise ForgeError(f"{where}: not an override forge reads; allowed in {rel}/: {ALLOWED}")
        text, docs, lines, doc_lines = _read(path, where, root, found)
        if name == VALUES_FILE:
            if len(docs) != 1 or not isinstance(docs[0], dict):
                raise ForgeError(f"{where}:1: <top>: Helm values are one YAML mapping (key: value), merged last into the generated values")
            found.values, found.lines = docs[0], lines
        elif name.endswith(".yaml") and name.count("/") == 0:
            _check_objects(docs, where, "manifest")
            check_rules(found, where, docs, doc_lines, patch=False)
            found.manifests[where] = text
        elif name.endswith(".yaml") and name.startswith(f"{PATCHES_DIR}/") and name.count("/") == 1:
            _check_objects(docs, where, "patch")
            check_rules(found, where, docs, doc_lines, patch=True)
            found.patches[where] = text
        else:
            raise ForgeError(f"{where}: not an override forge reads; allowed in {rel}/: {ALLOWED}")
    return found


def merge(generated: Any, override: Any) -> Any:
    """Helm's merge of a values file given last: mappings key by key, anything else replaces, a
    null removes the key."""
    if not isinstance(generated, dict) or not isinstance(override, dict):
        return override
    out = dict(generated)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def copied_name(source: str) -> str:
    """Where a manifest or patch is copied inside the overlay folder."""
    parts = source.split("/")
    return f"{COPIED_DIR}/{'/'.join(parts[parts.index(OVERRIDES_DIR) + 2:])}"


def copy_header(source: str) -> str:
    return f"# Copied by forge.overrides from {source}. Do not edit here: edit {source}, then `make generate`.\n"

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
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge import datafile
from forge.errors import ForgeError, Problem
from forge.inventory import credentials
from forge.paths import CLUSTERS_DIR

OVERRIDES_DIR = "overrides"  # clusters/<cluster>/overrides/<component>/
VALUES_FILE = "values.yaml"
PATCHES_DIR = "patches"
COPIED_DIR = "overrides"  # overlays/<cluster>/<component>/overrides/: the copies kustomize reads
ALLOWED = "values.yaml (Helm values), patches/*.yaml (kustomize patches), *.yaml (extra manifests)"


@dataclass
class Overrides:
    """One component's overrides on one cluster (all paths repo-relative)."""

    folder: str
    values: dict[str, Any] | None = None
    manifests: dict[str, str] = field(default_factory=dict)  # source path -> text
    patches: dict[str, str] = field(default_factory=dict)  # source path -> text


def folder_of(cluster: str) -> str:
    return f"{CLUSTERS_DIR}/{cluster}/{OVERRIDES_DIR}"


def _suggest(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f"did you mean '{close[0]}'? " if close else ""


def _read(path: Path, rel: str, root: Path) -> tuple[str, list[Any]]:
    """The text and documents of one override file, read as the inventory is (forge.textguard: a
    regular file inside the repository, bounded, UTF-8; no alias bomb) and scanned for credentials
    as the inventory is: an override is committed, and copied into generated files."""
    try:
        text = datafile.read(path, rel, root, "an override")
        docs = [d for d in datafile.parse_all(text, rel) if d is not None]
    except datafile.DataFileError as exc:  # one line per problem, as every override error
        raise ForgeError("\n".join(f"{p.file}:{p.line}: {p.path or '<yaml>'}: {p.message}" for p in exc.problems)) from None
    found = [Problem(rel, line, "", credentials.message(what)) for line, what in credentials.find_in_text(text)]
    found += [Problem(rel, 1, ".".join(map(str, where)), credentials.message(what))
              for doc in docs for where, what in credentials.find_credentials(doc)]
    if found:
        raise ForgeError("\n".join(map(str, sorted(set(found)))))
    return text, docs


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
    for entry in sorted(base.iterdir()):
        rel = f"{folder_of(cluster)}/{entry.name}"
        if not entry.is_dir() or entry.name not in components:
            names = sorted(components)
            raise ForgeError(f"{rel}: not a component folder: {_suggest(entry.name, names)}"
                             f"overrides go in {folder_of(cluster)}/<component>/, one of {', '.join(names)}")
        if not components[entry.name]:
            raise ForgeError(f"{rel}: {entry.name} is not enabled on cluster {cluster}: enable it in the inventory or remove the folder")
        out[entry.name] = _load_component(entry, rel, root)
    return out


def _load_component(folder: Path, rel: str, root: Path) -> Overrides:
    found = Overrides(rel)
    for path in sorted(folder.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        name = path.relative_to(folder).as_posix()
        where = f"{rel}/{name}"
        if not name.endswith(".yaml"):
            raise ForgeError(f"{where}: not an override forge reads; allowed in {rel}/: {ALLOWED}")
        text, docs = _read(path, where, root)
        if name == VALUES_FILE:
            if len(docs) != 1 or not isinstance(docs[0], dict):
                raise ForgeError(f"{where}:1: <top>: Helm values are one YAML mapping (key: value), merged last into the generated values")
            found.values = docs[0]
        elif name.endswith(".yaml") and name.count("/") == 0:
            _check_objects(docs, where, "manifest")
            found.manifests[where] = text
        elif name.endswith(".yaml") and name.startswith(f"{PATCHES_DIR}/") and name.count("/") == 1:
            _check_objects(docs, where, "patch")
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

"""Where a validation failure is: the rendered file and line of its object (the line of the
field when it can be found), and the file forge wrote it from (the overlay file, or the override
an overlay copy names in its header). Used by `forge validate`'s text, JSON and GitHub outputs."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from forge.files.paths import OVERLAYS_DIR, RENDERED_DIR
from forge.validate.failure import Failure

COPIED = re.compile(r"^# Copied by forge\.overrides from (\S+)\. Do not edit", re.M)
_KEY = re.compile(r"[A-Za-z0-9_.\-/]+")


@dataclass(frozen=True)
class Place:
    file: str  # repo-relative
    line: int
    source: str | None = None  # the file forge wrote the object from, when it is not `file`
    source_line: int = 1  # the field's line there, as near as a scan for its keys finds it


def _with_source_line(root: Path, place: Place, path: str) -> Place:
    if place.source is None:
        return place
    try:
        text = (root / place.source).read_text(encoding="utf-8")
    except OSError:
        return place
    return Place(place.file, place.line, place.source, _field_line(text, path) + 1)


@lru_cache(maxsize=64)
def _documents(path: str) -> tuple[tuple[int, str], ...]:
    """(first line, text) of each YAML document of a rendered file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return ()
    out, line, start = [], 1, 1
    chunk: list[str] = []
    for raw in text.splitlines(keepends=True):
        if raw.rstrip("\n") == "---":
            out.append((start, "".join(chunk)))
            chunk, start = [], line + 1
        else:
            chunk.append(raw)
        line += 1
    out.append((start, "".join(chunk)))
    return tuple(d for d in out if d[1].strip())


def _field_line(doc: str, path: str) -> int:
    """Offset (0-based) of the line of the deepest key of `path` found in order in `doc`."""
    lines, at, found = doc.splitlines(), 0, 0
    for key in (k for k in re.split(r"[.\[\]]", path) if k and _KEY.fullmatch(k) and not k.isdigit()):
        for i in range(at, len(lines)):
            if re.match(rf"\s*(- )?['\"]?{re.escape(key)}['\"]?:", lines[i]):
                at = found = i
                break
        else:
            break
    return found


def _source(root: Path, cluster: str, component: str, kind: str, name: str, namespace: str | None) -> str | None:
    folder = root / OVERLAYS_DIR / cluster / component
    candidates = [folder / f"{kind.lower()}-{name}.yaml", folder / f"{kind.lower()}-{namespace}-{name}.yaml"]
    candidates += sorted((folder / "overrides").glob("*.yaml")) if (folder / "overrides").is_dir() else []
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        if path.parent.name == "overrides" and not any(
                isinstance(d, dict) and d.get("kind") == kind and (d.get("metadata") or {}).get("name") == name
                for d in _objects(text)):
            continue
        copied = COPIED.search(text)
        return copied.group(1) if copied else path.relative_to(root).as_posix()
    return None


def _objects(text: str) -> list:
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return []


MERGED = re.compile(r"^# Values from (\S+) are merged last", re.M)


def _values_place(root: Path, failure: Failure) -> Place | None:
    """A values file: the key's line in it, and the override it came from when the key is there."""
    try:
        text = (root / failure.object).read_text(encoding="utf-8")
    except OSError:
        return None
    source = None
    merged = MERGED.search(text)
    keys = [k for k in re.split(r"[.\[\]]", failure.path) if k and not k.isdigit()]
    if merged and keys:
        try:
            override = (root / merged.group(1)).read_text(encoding="utf-8")
        except OSError:
            override = ""
        if re.search(rf"^\s*['\"]?{re.escape(keys[-1])}['\"]?:", override, re.M):
            source = merged.group(1)
    return Place(failure.object, _field_line(text, failure.path) + 1, source)


def locate(root: Path, failure: Failure) -> Place | None:
    place = _locate(root, failure)
    return _with_source_line(root, place, failure.path) if place else None


def _locate(root: Path, failure: Failure) -> Place | None:
    if failure.object.endswith(".yaml"):
        return _values_place(root, failure)
    kind, _, rest = failure.object.partition("/")
    namespace, _, name = rest.rpartition("/")
    rendered = root / RENDERED_DIR / failure.cluster / f"{failure.component}.yaml"
    for start, doc in _documents(str(rendered)):
        if re.search(rf"^kind: {re.escape(kind)}$", doc, re.M) and re.search(rf"^  name: ['\"]?{re.escape(name)}['\"]?$", doc, re.M) \
                and (not namespace or re.search(rf"^  namespace: ['\"]?{re.escape(namespace)}['\"]?$", doc, re.M)):
            return Place(rendered.relative_to(root).as_posix(), start + _field_line(doc, failure.path),
                         _source(root, failure.cluster, failure.component, kind, name, namespace or None))
    return None

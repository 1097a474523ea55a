"""charts/lock.yaml: the digest of each pinned chart's archive, next to charts/versions.yaml.

versions.yaml stays the one hand-edited place for chart pins (repo, chart, version); lock.yaml is
written by `forge charts lock` and read by `forge charts pull`. Each entry repeats the pin it was
recorded for, so a version bump leaves a visibly stale entry instead of a digest that silently
belongs to another archive.

digest is `sha256:<hex>` of the chart archive (.tgz) exactly as `helm pull` downloads it (for an
OCI chart, that is also the digest of the chart layer in the registry). `digest: null` says
explicitly that no digest has been recorded yet: the chart is then pulled unverified, with a
warning, until someone runs `forge charts lock` on an archive they trust.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from forge.files import datafile
from forge.files.datafile import DataFileError
from forge.errors import Problem
from forge.facts.versions import VERSIONS_FILE, ChartPin

LOCK_FILE = Path("charts/lock.yaml")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")

_HEADER = f"""\
# Digests of the pinned chart archives. Written by `forge charts lock`; do not edit by hand.
# Pins (repo, chart, version) are edited in {VERSIONS_FILE.name}; each entry here repeats the pin
# its digest was recorded for. digest: sha256 of the .tgz that `helm pull` downloads; null means
# not recorded yet (`forge charts pull` then warns that the chart is unverified).
"""


@dataclass(frozen=True)
class LockEntry:
    key: str
    repo: str
    chart: str
    version: str
    digest: str | None  # "sha256:<hex>", or None: not recorded

    def matches(self, pin: ChartPin) -> bool:
        return (self.repo, self.chart, self.version) == (pin.repo, pin.chart, pin.version)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return f"sha256:{h.hexdigest()}"


def read_lock(root: Path) -> dict[str, LockEntry]:
    """The lock's entries, read with the guards of every data file (forge.files.datafile: a regular file
    inside the repository, bounded, UTF-8, no alias bomb); every problem `file:line: key: message`."""
    path, file = root / LOCK_FILE, LOCK_FILE.as_posix()
    if not path.exists() and not path.is_symlink():  # a link or a FIFO is the reader's to refuse
        return {}
    raw, lines = datafile.parse(datafile.read(path, file, root, "the chart lock"), file)

    def refused(at: tuple, message: str) -> DataFileError:
        return DataFileError([Problem(file, datafile.line_of(lines, at), datafile.dotted(at), message)])

    if raw is None:
        return {}
    if not isinstance(raw, dict) or not isinstance(raw.get("charts") or {}, dict):
        at = ("charts",) if isinstance(raw, dict) else ()
        raise refused(at, "the chart lock is a mapping `charts:` of chart key -> repo, chart, version, digest")
    out = {}
    for key, v in (raw.get("charts") or {}).items():
        if not isinstance(v, dict):
            raise refused(("charts", key), "an entry is a mapping of repo, chart, version, digest")
        for field in ("repo", "chart", "version"):
            if not isinstance(v.get(field), (str, int, float)) or isinstance(v.get(field), bool) or v.get(field) == "":
                raise refused(("charts", key, field), f"missing or not text: each entry repeats the pin ({field}) its digest is for")
        digest = v.get("digest")
        if digest is not None and not (isinstance(digest, str) and _DIGEST.fullmatch(digest)):
            raise refused(("charts", key, "digest"), f"must be 'sha256:<64 hex digits>' or null, not {str(digest)[:80]!r}")
        out[str(key)] = LockEntry(str(key), str(v["repo"]), str(v["chart"]), str(v["version"]), digest)
    return out


def recorded_digest(lock: dict[str, LockEntry], pin: ChartPin) -> tuple[str | None, str | None]:
    """(digest to verify against, or None; why there is none, or None when there is one)."""
    entry = lock.get(pin.key)
    if entry is None:
        return None, f"{LOCK_FILE} has no entry for '{pin.key}'"
    if not entry.matches(pin):
        return None, (f"{LOCK_FILE} entry '{pin.key}' is for {entry.chart} {entry.version} from {entry.repo}, "
                      f"but {VERSIONS_FILE} pins {pin.chart} {pin.version} from {pin.repo} (stale)")
    if entry.digest is None:
        return None, f"{LOCK_FILE} has no digest recorded for '{pin.key}' (digest: null)"
    return entry.digest, None


def render_lock(entries: list[LockEntry]) -> str:
    body = {"charts": {e.key: {"repo": e.repo, "chart": e.chart, "version": e.version, "digest": e.digest} for e in entries}}
    return _HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False)


def write_lock(root: Path, entries: list[LockEntry]) -> None:
    path = root / LOCK_FILE
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(render_lock(entries), encoding="utf-8")
    tmp.replace(path)

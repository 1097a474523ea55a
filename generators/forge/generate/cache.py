"""Content-hash keys for the incremental pipeline, and the git-ignored folder that keeps its state.

A key is a SHA-256 over everything that can change an output. The inputs shared by every cluster
(`global_inputs`): forge's own code and data files (the hardware catalogue included) and its
version, the versions file, `base/`, the kustomize binary, and the upstream data folder. Per
cluster: its inventory bytes (generate), its overlay files (render), its rendered files (validate).
A change to any of them changes the key, so a cache never serves stale output; anything unknown
(a file that cannot be read) is hashed as an error marker, which never matches a stored key.

Files are hashed by content, except the upstream data (large, read-only reference data) and the
kustomize binary: those by path, size and modification time in nanoseconds (a manifest), which a
replaced or edited file always changes.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable

import forge
from forge.files.paths import BASE_DIR
from forge.facts.versions import VERSIONS_FILE

CACHE_DIR = Path(".cache/forge")
PACKAGE_DIR = Path(forge.__file__).resolve().parent


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))  # length-prefixed: ("ab", "c") != ("a", "bc")
        h.update(data)
    return h.hexdigest()


def file_digest(path: Path | str) -> str:
    """A regular file's content digest, read in pieces; a FIFO, a device or a socket is never
    read (it could block or never end: the reader that needs it refuses it in words)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return f"unreadable:special-{stat.S_IFMT(mode):o}"
        sha = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            sha.update(chunk)
        return sha.hexdigest()
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    finally:
        os.close(fd)


def tree_digest(folder: Path, patterns: Iterable[str] = ("**/*",), digests: Digests | None = None) -> str:
    """Every file under `folder` (relative path and content); an absent folder hashes as such."""
    if not folder.is_dir():
        return digest("absent", str(folder))
    everything = tuple(patterns) == ("**/*",)
    files = _walk(str(folder), None if everything else re.compile("|".join(_glob_regex(p) for p in patterns)))
    of = digests.file if digests else file_digest
    return digest(*(f"{rel}={of(path)}" for rel, path in files))


def _glob_regex(pattern: str) -> str:
    """A glob relative to a folder as a regex over posix relative paths: `**/` any number of
    folders, `*` and `?` within one name (what pathlib's glob means, without its slow walk)."""
    out = []
    for i, part in enumerate(pattern.split("/")):
        if part == "**":
            out.append("(?:[^/]+/)*")
            continue
        text = "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part)
        out.append(text + ("/" if i < pattern.count("/") else ""))
    return "(?:" + "".join(out) + ")"


def _walk(folder: str, wanted: re.Pattern[str] | None = None) -> list[tuple[str, str]]:
    """(relative posix path, path) of every file under `folder` (whose relative path `wanted`
    matches), sorted by the relative path. os.walk on strings: far cheaper than pathlib's glob
    on a tree of thousands of files."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        for name in filenames:
            if wanted is None or wanted.fullmatch(prefix + name):
                found.append((prefix + name, f"{dirpath}{os.sep}{name}"))
    return sorted(found, key=lambda item: item[0].split("/"))


class Digests:
    """Content digests remembered by what the file looks like on disk (size, mtime, ctime, inode),
    as git's index does, so a warm run reads only the files that were written since. Each stage
    keeps its own in .cache/forge/<name>.json when `root` is given (`save`), holding exactly the
    files it read last time.

    A digest is remembered only for a file last modified more than RACY_NS before it was read: a
    write in the same clock tick as the read could leave every stat field as it was ("racy git"),
    so such a file is read again next time. Any rewrite changes mtime or ctime, so a remembered
    digest is never served for content it was not computed from."""

    RACY_NS = 2_000_000_000

    def __init__(self, root: Path | None = None, name: str = "digests",
                 of: Callable[[str], str] = file_digest) -> None:
        self.of = of  # how a file is digested when it must be read (tests count the reads)
        self.state = State(root, name) if root is not None else None
        data = self.state.load() if self.state else {}
        self.known: dict[str, list] = data.get("files", {}) if isinstance(data.get("files"), dict) else {}
        self.seen: dict[str, list] = {}

    def file(self, path: Path | str) -> str:
        key = os.path.abspath(path)
        try:
            st = os.stat(key)
        except OSError as exc:
            return f"unreadable:{exc.errno}"
        look = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        entry = self.seen.get(key) or self.known.get(key)
        if entry and entry[:4] == look:
            self.seen[key] = entry
            return entry[4]
        value = self.of(key)
        if value.startswith("unreadable:"):
            return value
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > self.RACY_NS:
            self.seen[key] = [*look, value]
        return value

    def save(self) -> None:
        """Remember the digests of the files read in this run (only those: deleted files go)."""
        if self.state is not None:
            self.state.save({"files": self.seen})


def stat_manifest(folder: Path) -> str:
    """Path, size and mtime (ns) of every file under `folder`: cheap, and any edit changes it."""
    if not folder.is_dir():
        return digest("absent", str(folder))
    rows = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            st = os.stat(os.path.join(dirpath, name))
            rows.append(f"{os.path.relpath(os.path.join(dirpath, name), folder)}:{st.st_size}:{st.st_mtime_ns}")
    return digest(*rows)


def binary_identity(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"missing:{path}"
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


@dataclass
class GlobalInputs:
    """The inputs every cluster's outputs depend on, each hashed once per run, when first asked."""

    root: Path
    upstream: Path | None = None

    @cached_property
    def code(self) -> str:
        """forge's version and every module and data file of the package (catalogue included)."""
        return digest(getattr(forge, "__version__", "0"), tree_digest(PACKAGE_DIR, ("**/*.py", "**/*.yaml", "**/*.json")))

    @cached_property
    def generate(self) -> str:
        return digest("generate", self.code, file_digest(self.root / VERSIONS_FILE), tree_digest(self.root / BASE_DIR))

    @cached_property
    def render(self) -> str:
        from forge.tools import kustomize_build_command

        command = kustomize_build_command(self.root)
        return digest("render", self.code, *command, binary_identity(command[0]), tree_digest(self.root / BASE_DIR))

    @cached_property
    def validate(self) -> str:
        upstream = stat_manifest(self.upstream) if self.upstream else "no-upstream"
        return digest("validate", self.code, file_digest(self.root / VERSIONS_FILE), upstream)


class State:
    """A JSON document under .cache/forge/, written atomically (a torn write is never read back:
    a state that does not parse is an empty one, and everything is rebuilt)."""

    def __init__(self, root: Path, name: str) -> None:
        self.path = root / CACHE_DIR / f"{name}.json"

    def load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def writable(self) -> None:
        """Raise the OSError a save would meet (a read-only or full disk, a file where the folder
        belongs), before the caller changes anything it would then fail to record."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        probe = self.path.with_name(f".probe.{os.getpid()}.tmp")
        try:
            probe.write_bytes(b"0" * 4096)
        finally:
            probe.unlink(missing_ok=True)

    def save(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


def signature(path: Path | str) -> list[int] | None:
    """What a file on disk looks like now (size, mtime ns, inode): differs after any rewrite."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]

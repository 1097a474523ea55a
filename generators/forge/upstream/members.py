"""The files of a chart, from a folder or a .tgz, read with the guards of every other input
(forge.files.textguard): a chart is someone else's code, and `forge charts bump` and hydrate read it.

- a member name is a plain relative path: no `..`, no empty or `.` part, not absolute, no
  backslash or control character; a name built into a path later (a CRD's, a subchart's) is
  checked with `file_name` before any path is built from it;
- only regular files: a symbolic or hard link, a device, a FIFO is refused (a folder's
  `values.yaml` linked to a kubeconfig would be copied into the upstream data); a folder's files
  are held to the archive's rule, so a link is refused even to another file of the chart, and a
  FIFO is named from its lstat, never opened to block;
- at most MAX_MEMBER_BYTES a file, MAX_CHART_BYTES and MAX_MEMBERS in all, counted as read
  (a gzip bomb stops at the limit, not after); a folder's subfolders count as members too (a
  million empty folders would otherwise be walked to the end);
- a folder is walked by open folders (os.fwalk, each file opened inside its folder's descriptor),
  so a subfolder swapped for a link while the walk runs is never followed, and is refused;
- `values.schema.json` is parsed before it is kept: JSON, one object, bounded like the YAML files.
"""
from __future__ import annotations

import errno
import io
import json
import lzma
import os
import re
import stat
import tarfile
import zlib
from pathlib import Path, PurePosixPath

from forge.errors import ForgeError
from forge.files import datafile, textguard
from forge.files.textguard import MAX_BYTES, odd_kind, read_regular

# The largest pinned chart (kube-prometheus-stack, CRDs included) is about 4 MiB unpacked, its
# largest file (a CRD) under 1 MiB; these leave room for growth and stop a bomb early.
MAX_MEMBER_BYTES = 8 * 1024 * 1024
MAX_CHART_BYTES = 64 * 1024 * 1024
MAX_MEMBERS = 10_000
# A chart YAML file forge parses (Chart.yaml, values.yaml, requirements.yaml, a crds/ file) is held
# to the inventory's limit: the largest pinned one (kueue's Workload CRD) is 1.4 MiB, and parsing
# costs about 140 MB and 3 s a MiB (an 8 MiB values.yaml: 22 s, 1.1 GB).
MAX_YAML_BYTES = MAX_BYTES
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FILE_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")  # a Kubernetes object name (DNS subdomain)


class ChartRefused(ForgeError):
    """A chart forge will not read, and why, naming the member."""


def member_name(name: str, origin: str) -> str:
    """`name` if it is a plain relative path inside the chart, else refused."""
    parts = name.split("/")
    if not name or name.startswith("/") or _BAD_CHARS.search(name) or any(p in ("", ".", "..") for p in parts):
        raise ChartRefused(f"{origin}: member {name!r} is not a plain relative path (no '..', '.', '//', "
                           "leading '/', backslash or control character): a chart's files stay inside it")
    return name


def file_name(name: object, origin: str, what: str) -> str:
    """A name forge writes a file under (a CRD's, a subchart's): a Kubernetes object name."""
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name):
        raise ChartRefused(f"{origin}: {what} {str(name)[:80]!r} is not a Kubernetes object name (lower-case letters, "
                           "digits, '-' and '.', at most 253): forge writes a file under that name, so it is refused")
    return name


class _Tally:
    def __init__(self, origin: str) -> None:
        self.origin, self.count, self.size = origin, 0, 0

    def add(self, name: str, size: int) -> None:  # a file, or a folder (size 0)
        self.count += 1
        self.size += size
        if size > MAX_MEMBER_BYTES:
            raise ChartRefused(f"{self.origin}: member {name} is more than {MAX_MEMBER_BYTES // 2**20} MiB: "
                               "no chart file is that large")
        if self.count > MAX_MEMBERS or self.size > MAX_CHART_BYTES:
            raise ChartRefused(f"{self.origin}: more than {MAX_MEMBERS:,} files and folders or {MAX_CHART_BYTES // 2**20} MiB "
                               "unpacked: not a chart forge reads")


# What a chart folder's file may be, said in every refusal of one: the archive rule (members are
# regular files, never links), so a folder cannot carry what its packed archive could not.
_FOLDER_RULE = ("each file of a chart must be a regular file inside the chart folder (no symbolic or hard link, "
                "even to another file of the chart; no FIFO, device or socket), as in a chart archive; "
                "copy the file in instead")


def _shown(text: str) -> str:
    """A path as one line of text: quoted when it holds a control character (a link's target may)."""
    return repr(text) if _CONTROL.search(text) else text


def _what_it_is(root: Path, path: Path) -> str:
    """`path` (not a regular file, or a link) in words: what it is and, for a link, where it leads."""
    kind = odd_kind(path)
    if kind != "symbolic link":
        return f"a {kind}" if kind else "not a regular file"
    real, top = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if real.is_relative_to(top):
        return f"a symbolic link to {_shown(real.relative_to(top).as_posix())}, inside the chart folder"
    return f"a symbolic link to {_shown(str(real))}, outside the chart folder"


def _folder_file(root: Path, path: Path, rel: str, dir_fd: int) -> bytes:
    """The bytes of one file of a chart folder (opened in its folder's descriptor `dir_fd`), or
    its refusal naming the file and the rule."""
    where = f"{root}/{rel}"
    if not stat.S_ISREG(os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        raise ChartRefused(f"{where}: is {_what_it_is(root, path)}: {_FOLDER_RULE}")
    try:
        return read_regular(path, MAX_MEMBER_BYTES, links=False, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EMLINK:
            raise ChartRefused(f"{where}: is a hard link (one of {os.lstat(path).st_nlink} names of one file, the others "
                               f"maybe outside the chart folder): {_FOLDER_RULE}") from None
        if exc.errno in (errno.ELOOP, errno.EINVAL):  # swapped for a link or a FIFO since the walk saw it
            raise ChartRefused(f"{where}: is {_what_it_is(root, path)}: {_FOLDER_RULE}") from None
        if exc.errno == errno.EFBIG:
            raise ChartRefused(f"{root}: member {rel} is more than {MAX_MEMBER_BYTES // 2**20} MiB: "
                               "no chart file is that large") from None
        raise ChartRefused(f"{where}: cannot read ({exc.strerror or exc})") from None


def _unreadable(exc: OSError) -> None:
    raise ChartRefused(f"{exc.filename}: cannot read the chart folder's folder ({exc.strerror or exc}): "
                       "every file of a chart is read, none skipped")


def yaml_text(data: bytes, where: str) -> str:
    """The text of a chart YAML file about to be parsed: bounded, UTF-8, printable (forge.files.textguard)."""
    if len(data) > MAX_YAML_BYTES:
        raise ChartRefused(f"{where}: is more than {MAX_YAML_BYTES // 2**20} MiB ({len(data):,} bytes): a chart's YAML "
                           f"file (Chart.yaml, values.yaml, a CRD) may be at most {MAX_YAML_BYTES // 2**20} MiB, as an "
                           "inventory may (the largest pinned, a CRD, is 1.4 MiB): is this the right file?")
    return textguard.decode(data, where, "a chart's YAML file", datafile.DataFileError)


def from_folder(root: Path) -> dict[str, bytes]:
    """Every file under the chart folder `root`, by relative path: each a regular file inside it
    (the archive rule: no link, symbolic or hard, even to a file of the chart; no FIFO or device),
    refused naming the file. `root` itself, named on the command line, may be reached by a link."""
    origin, tally, out = str(root), _Tally(str(root)), {}
    top = Path(os.path.realpath(root))  # os.fwalk yields nothing for a top that is a link
    listed, walked = set(), {""}  # subfolders (relative) seen in their parent, and those walked into
    for folder, dirs, files, dir_fd in os.fwalk(top, onerror=_unreadable):
        here = Path(folder).relative_to(top).as_posix()
        walked.add("" if here == "." else here)
        for name in sorted(dirs + files):
            rel = member_name((Path(folder) / name).relative_to(top).as_posix(), origin)
            path = root / rel
            if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                tally.add(rel, 0)
                listed.add(rel)
                continue
            data = _folder_file(root, path, rel, dir_fd)
            tally.add(rel, len(data))
            out[rel] = data
    # os.fwalk never follows a subfolder swapped for a link after it was listed: it skips it
    skipped = sorted(listed - walked)
    if skipped:
        raise ChartRefused(f"{root}/{skipped[0]}: changed while the chart folder was read (is "
                           f"{_what_it_is(root, root / skipped[0])} now): {_FOLDER_RULE}")
    return dict(sorted(out.items()))


def schema_json(data: bytes, where: str) -> bytes:
    """A chart's values.schema.json as kept in the upstream data: a JSON object, bounded and
    printable like the chart's YAML files (helm and `forge validate` parse it later)."""
    if len(data) > MAX_YAML_BYTES:
        raise ChartRefused(f"{where}: is more than {MAX_YAML_BYTES // 2**20} MiB ({len(data):,} bytes): a chart's "
                           f"values schema may be at most {MAX_YAML_BYTES // 2**20} MiB (the largest pinned is under 1 MiB)")
    text = textguard.decode(data, where, "a chart's values schema", datafile.DataFileError)
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise ChartRefused(f"{where}: nests deeper than JSON can be read: not a values schema") from None
    except ValueError as exc:
        raise ChartRefused(f"{where}: not JSON ({str(exc)[:100]}): a chart's values schema is a JSON Schema document") from None
    if not isinstance(parsed, dict):
        raise ChartRefused(f"{where}: is a JSON {type(parsed).__name__}, not an object: a values schema is one JSON object")
    return data


def from_archive(data: bytes, origin: str) -> dict[str, bytes]:
    """Every member of a chart archive, by its full name; links and special members refused."""
    tally, out = _Tally(origin), {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            for member in tar:
                name = member_name(member.name.rstrip("/") if member.isdir() else member.name, origin)
                if member.isdir():
                    continue
                if not member.isfile():
                    raise ChartRefused(f"{origin}: member {name} is a link or a special file: a chart holds regular files only")
                if name in out:
                    raise ChartRefused(f"{origin}: member {name} is given twice: a chart holds each file once")
                tally.add(name, member.size)
                handle = tar.extractfile(member)
                body = handle.read(MAX_MEMBER_BYTES + 1) if handle else b""
                out[name] = body
    except (tarfile.TarError, OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:  # a corrupt stream, read lazily
        raise ChartRefused(f"{origin}: not a chart archive ({str(exc)[:120]})") from None
    folders = {str(parent) for name in out for parent in PurePosixPath(name).parents}
    clash = sorted(folders & set(out))
    if clash:
        raise ChartRefused(f"{origin}: member {clash[0]} is both a file and a folder of other members: not a chart forge reads")
    return out


def read_archive(path: Path) -> bytes:
    """The bytes of a chart archive named on the command line: a regular file, bounded."""
    try:
        return read_regular(path, MAX_CHART_BYTES)
    except OSError as exc:
        raise ChartRefused(f"{path}: cannot read the chart archive ({exc.strerror or exc})") from None


def under_top(files: dict[str, bytes], origin: str) -> dict[str, bytes]:
    """An archive's files relative to its single top folder."""
    tops = {PurePosixPath(n).parts[0] for n in files}
    if len(tops) != 1:
        raise ChartRefused(f"{origin}: a chart archive holds one top folder, this one has {len(tops)}")
    top = tops.pop()
    return {n[len(top) + 1:]: b for n, b in files.items() if n.startswith(top + "/")}


def chart_files(chart: Path) -> dict[str, bytes]:
    """A chart's files relative to its own folder, from a folder or a .tgz."""
    if chart.is_dir():  # a folder, or a link to one named on the command line (as a .tgz may be)
        return from_folder(chart)
    return under_top(from_archive(read_archive(chart), str(chart)), str(chart))

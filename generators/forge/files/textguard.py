"""The one reader of every file forge reads (inventories, overrides, rings, versions, scenarios,
chart files, recorded API answers): limits on what a file may be before any YAML is parsed or
built, so hostile or broken input is refused fast, in bounded memory, with `file:line` and words,
never a traceback (docs/refusals.md).

- `read_text`: a regular file (never a FIFO, a device, a folder), inside the repository (or the
  input named on the command line) once links are resolved, at most MAX_BYTES whatever st_size
  says, UTF-8, printable, with the line breaks editors count;
- `Budget`: what building a YAML document may cost (nesting, aliases), checked node by node by the
  two builders (forge.inventory.loader, forge.files.datafile) before an alias expands.

These limits are about text, not hardware (hardware bounds live in `forge.facts.hardware`): an
inventory is a few kilobytes per hundred nodes, nests about eight levels, and needs aliases, if
at all, to share a block of labels or taints; forge's other files are smaller still.
Each function raises `error` (InventoryError, or the caller's own error class with the same
constructor) with one Problem per finding.
"""
from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from pathlib import Path

from forge.errors import InventoryError, Problem

# 4 MiB holds about 20,000 nodes, four times what Kubernetes supports in one cluster (5,000);
# loading it takes seconds. A 50 MB file took minutes and gigabytes before it failed, so larger
# files are refused before they are read.
MAX_INVENTORY_BYTES = MAX_BYTES = 4 * 1024 * 1024
# The inventory's deepest path (cluster.mig_layouts.<name>[i].profiles.<profile>) is 6 levels.
MAX_NESTING_DEPTH = 32
# A chart's CRDs nest their OpenAPI schemas deeper (kuberay's RayCluster: about 40 levels).
MAX_SCHEMA_DEPTH = 200
# Aliases (`*name`) reuse a block; these bound what they may add, so nested aliases (a "billion
# laughs" document) cannot expand into gigabytes.
MAX_ALIASES = 1000
MAX_ALIAS_EXPANSION = 100_000  # values built through aliases, beyond those written out

# What YAML 1.1 allows in a stream (PyYAML's reader): tab, line breaks, printable Unicode.
_NOT_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SHOWN = 5  # at most this many bad characters are listed; the first one is enough to fix
# Line breaks YAML reads but editors, git and forge's own line numbers do not count: a carriage
# return not followed by a line feed (old Mac endings), NEL, LINE and PARAGRAPH SEPARATOR.
_ODD_BREAK = re.compile("\r(?!\n)|[\x85\u2028\u2029]")


def check_size(size: int, file: str) -> None:
    if size > MAX_INVENTORY_BYTES:
        raise InventoryError([Problem(
            file, 1, "",
            f"file is {'more than ' if size == MAX_INVENTORY_BYTES + 1 else ''}{size / 2**20:.1f} MiB; an inventory may be at most {MAX_INVENTORY_BYTES // 2**20} MiB "
            "(about 20,000 nodes; Kubernetes supports 5,000 per cluster): is this the right file? "
            "Split a larger fleet into clusters")])


def read_regular(path: Path, limit: int, *, links: bool = True, dir_fd: int | None = None) -> bytes:
    """A regular file's bytes, at most `limit` (more raises OSError EFBIG): a FIFO, a device or a
    folder is refused without blocking, and the size is what read returns, not st_size.
    `links=False` (a chart folder's files, held to the archive rule): a symbolic link as the last
    part of `path` raises ELOOP (checked by the open itself, so a link swapped in after a walk's
    lstat is not followed), a file with more than one name (a hard link) EMLINK. With `dir_fd`
    (an open folder of a walk), `path`'s name is opened in that folder, so no part of the path
    before it can be swapped for a link either."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if links else os.O_NOFOLLOW)
    fd = os.open(path.name, flags, dir_fd=dir_fd) if dir_fd is not None else os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if not links and info.st_nlink > 1:
            raise OSError(errno.EMLINK, f"a hard link: one of {info.st_nlink} names of one file", str(path))
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


_KINDS = ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"),
          (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


def odd_kind(path: Path) -> str | None:
    """What `path` is when it is neither a regular file nor a folder (its link not followed):
    "FIFO", "symbolic link", ...; None for a regular file, a folder or nothing. Walks of the
    generated folders use it so a FIFO is named, never opened (opening one blocks)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return next((name for test, name in _KINDS if test(mode)), None)


def _outside(path: Path, root: Path) -> str | None:
    """Where `path` leads outside `root` once its links are resolved (None: it stays inside)."""
    real = Path(os.path.realpath(path))
    return None if real.is_relative_to(Path(os.path.realpath(root))) else str(real)


def read_bytes(path: Path, file: str, *, root: Path | None = None, limit: int = MAX_BYTES,
               what: str = "a YAML file", error: type = InventoryError) -> bytes:
    """The bytes of the regular file `path` (named `file` in errors), refused in words when it is a
    FIFO, a device, a folder, missing, larger than `limit`, or (with `root`) a link out of `root`."""
    if root is not None and (out := _outside(path, root)):
        raise error([Problem(file, 1, "", f"cannot read: it is a symbolic link to {out}, outside the repository: "
                                          f"{what} is read only from inside it; copy the file in instead")])
    try:
        return read_regular(path, limit)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise error([Problem(file, 1, "", f"cannot read: it is larger than {limit // 2**20} MiB, "
                                              f"far more than {what} needs: is this the right file?")]) from None
        why = {errno.EINVAL: f"it is not a regular file (a FIFO, a device or a socket): {what} is a regular file",
               errno.EISDIR: f"it is a folder: {what} is a file",
               errno.ENOENT: "it does not exist (a symbolic link to nothing?)"}.get(exc.errno, exc.strerror or str(exc))
        raise error([Problem(file, 1, "", f"cannot read: {why}")]) from None


def read_text(path: Path, file: str, *, root: Path | None = None, limit: int = MAX_BYTES,
              what: str = "a YAML file", error: type = InventoryError) -> str:
    """`read_bytes`, then `decode`: the text of a file forge may parse."""
    return decode(read_bytes(path, file, root=root, limit=limit, what=what, error=error), file, what, error)


def decode(data: bytes, file: str, what: str = "an inventory", error: type = InventoryError) -> str:
    """UTF-8 text, or an error naming the line, column and byte offset of the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        binary = b"\0" in data[:8192]
        hint = f"this looks like a binary file, not {what}" if binary else "re-save the file as UTF-8"
        raise error([Problem(
            file, line, "",
            f"byte 0x{data[exc.start]:02x} at offset {exc.start} (column {column}) is not UTF-8: "
            f"{what} is UTF-8 text; {hint}")]) from None
    check_printable(text, file, error)
    check_line_breaks(text, file, error)
    return text


def check_line_breaks(text: str, file: str, error: type = InventoryError) -> None:
    """A break YAML counts and an editor does not would make every later line number wrong."""
    match = _ODD_BREAK.search(text)
    if match:
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        name = "CARRIAGE RETURN without a line feed" if match.group() == "\r" else unicodedata.name(match.group())
        raise error([Problem(
            file, line, "",
            f"character U+{ord(match.group()):04X} ({name}) at column {column} is a line break only YAML counts: "
            "save the file with LF (or CRLF) line endings")])


def check_printable(text: str, file: str, error: type = InventoryError) -> None:
    """NUL and other control characters are refused by YAML; say where, and which one."""
    problems = []
    for match in _NOT_PRINTABLE.finditer(text):
        char = match.group()
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        name = unicodedata.name(char, "") or {"\0": "NUL", "\x1b": "ESCAPE", "\x7f": "DELETE"}.get(char, "a control character")
        problems.append(Problem(
            file, line, "",
            f"character U+{ord(char):04X} ({name}) at column {column} is not allowed: YAML text may hold "
            "printable characters, tabs and line breaks only; delete it (pasted from a terminal, or a binary file?)"))
        if len(problems) == _SHOWN:
            break
    if problems:
        raise error(problems)


class Budget:
    """Counts what building the document costs: nesting, alias uses and what aliases add."""

    def __init__(self, max_depth: int = MAX_NESTING_DEPTH) -> None:
        self.max_depth = max_depth
        self.built: set[int] = set()  # ids of the nodes built at least once
        self.visits = 0
        self.aliases = 0

    def enter(self, node, depth: int, active: dict[int, int]) -> str | None:
        """Call before building `node` at `depth`; `active` maps the nodes being built to their
        line. Returns why the document is refused, or None."""
        if id(node) in active:
            return (f"an alias refers to the block that contains it (anchored at line {active[id(node)]}): "
                    "the value would contain itself without end; copy the values instead of the alias")
        if depth > self.max_depth:
            return (f"values nested more than {self.max_depth} levels deep: an inventory nests about 6, a CRD's schema about 40; "
                    "check the indentation and the brackets")
        self.visits += 1
        if id(node) not in self.built:
            self.built.add(id(node))
            return None
        self.aliases += 1
        if self.aliases > MAX_ALIASES or self.visits - len(self.built) > MAX_ALIAS_EXPANSION:
            return (f"aliases expand to too much: at most {MAX_ALIASES} alias uses adding at most "
                    f"{MAX_ALIAS_EXPANSION:,} values (nested aliases multiply); write the values out instead")
        return None

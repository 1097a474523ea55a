"""Limits on what an inventory file may be before any YAML is parsed or built, so hostile or broken
input is refused fast, in bounded memory, with `file:line` and words, never a traceback.

These limits are about text, not hardware (hardware bounds live in `forge.hardware`): an
inventory is a few kilobytes per hundred nodes, nests about eight levels, and needs aliases, if
at all, to share a block of labels or taints.
"""
from __future__ import annotations

import re
import unicodedata

from forge.errors import InventoryError, Problem

# 4 MiB holds about 20,000 nodes, four times what Kubernetes supports in one cluster (5,000);
# loading it takes seconds. A 50 MB file took minutes and gigabytes before it failed, so larger
# files are refused before they are read.
MAX_INVENTORY_BYTES = 4 * 1024 * 1024
# The inventory's deepest path (cluster.mig_layouts.<name>[i].profiles.<profile>) is 6 levels.
MAX_NESTING_DEPTH = 32
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


def decode(data: bytes, file: str) -> str:
    """UTF-8 text, or an error naming the line, column and byte offset of the first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        binary = b"\0" in data[:8192]
        hint = "this looks like a binary file, not an inventory" if binary else "re-save the file as UTF-8"
        raise InventoryError([Problem(
            file, line, "",
            f"byte 0x{data[exc.start]:02x} at offset {exc.start} (column {column}) is not UTF-8: "
            f"inventories are UTF-8 text; {hint}")]) from None
    check_printable(text, file)
    check_line_breaks(text, file)
    return text


def check_line_breaks(text: str, file: str) -> None:
    """A break YAML counts and an editor does not would make every later line number wrong."""
    match = _ODD_BREAK.search(text)
    if match:
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        name = "CARRIAGE RETURN without a line feed" if match.group() == "\r" else unicodedata.name(match.group())
        raise InventoryError([Problem(
            file, line, "",
            f"character U+{ord(match.group()):04X} ({name}) at column {column} is a line break only YAML counts: "
            "save the file with LF (or CRLF) line endings")])


def check_printable(text: str, file: str) -> None:
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
        raise InventoryError(problems)


class Budget:
    """Counts what building the document costs: nesting, alias uses and what aliases add."""

    def __init__(self) -> None:
        self.built: set[int] = set()  # ids of the nodes built at least once
        self.visits = 0
        self.aliases = 0

    def enter(self, node, depth: int, active: dict[int, int]) -> str | None:
        """Call before building `node` at `depth`; `active` maps the nodes being built to their
        line. Returns why the document is refused, or None."""
        if id(node) in active:
            return (f"an alias refers to the block that contains it (anchored at line {active[id(node)]}): "
                    "the value would contain itself without end; copy the values instead of the alias")
        if depth > MAX_NESTING_DEPTH:
            return (f"values nested more than {MAX_NESTING_DEPTH} levels deep: an inventory nests about 6; "
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

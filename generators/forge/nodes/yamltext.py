"""Edit one node of an inventory file's text and leave every other byte as it was.

ruamel.yaml's round-trip loader tells where each node of the `nodes:` list starts; a node's text
runs from its `- ` line to its last line of content (comments and blank lines after that belong
to what follows, e.g. a comment heading the next group of nodes). A node is edited by loading
just its text with ruamel.yaml (so comments inside it survive), changing it, dumping it with the
indentation that reproduces the original text exactly, and splicing it back. Dumping the whole
file instead would re-indent any part written in another style.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from forge.errors import ForgeError

# (mapping, sequence, offset) indentations tried, most common first: the one that dumps a node
# back to its exact original text is used for the edited or new node.
_INDENTS = ((2, 4, 2), (2, 2, 0), (4, 6, 4), (4, 4, 2), (4, 4, 0), (2, 3, 1), (3, 5, 3))


def _yaml(indent: tuple[int, int, int] = _INDENTS[0]) -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 1_000_000  # never wrap a long flow list (interface names)
    y.indent(mapping=indent[0], sequence=indent[1], offset=indent[2])
    return y


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


@dataclass
class NodeText:
    """Where each node of a file's `nodes:` list stands, by 0-based line index."""

    file: str
    lines: list[str]  # with their line ends
    starts: list[int]  # each node's `- ` line
    ends: list[int]  # one past each node's last line of content
    doc: Any  # the whole document, round-trip loaded (read only: positions, styles)

    @classmethod
    def parse(cls, text: str, file: str) -> "NodeText":
        try:
            doc = _yaml().load(text)
        except YAMLError as exc:
            raise ForgeError(f"{file}: not valid YAML ({exc}); fix it by hand first") from None
        nodes = doc.get("nodes") if isinstance(doc, CommentedMap) else None
        if not isinstance(nodes, CommentedSeq) or not nodes or nodes.fa.flow_style():
            raise ForgeError(f"{file}: `nodes:` must be a non-empty block list (one `- name: ...` per node) to be edited")
        lines = text.splitlines(keepends=True)
        starts = []
        for i in range(len(nodes)):
            line = nodes.lc.item(i)[0]
            while line > 0 and not lines[line].lstrip().startswith("-"):
                line -= 1  # an item written as a lone `-` with its mapping below
            starts.append(line)
        keys = list(doc)
        after = keys[keys.index("nodes") + 1:]
        stop = doc.lc.key(after[0])[0] if after else len(lines)
        ends = []
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else stop
            while end > start + 1 and not _is_content(lines[end - 1]):
                end -= 1
            ends.append(end)
        return cls(file, lines, starts, ends, doc)

    @property
    def names(self) -> list[str]:
        return [str(n.get("name")) for n in self.doc["nodes"]]

    def index(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None

    def dash_column(self, i: int) -> int:
        line = self.lines[self.starts[i]]
        return len(line) - len(line.lstrip())

    def snippet(self, i: int) -> str:
        return "".join(self.lines[self.starts[i]:self.ends[i]])

    def line_end(self) -> str:
        return "\r\n" if self.lines and self.lines[0].endswith("\r\n") else "\n"

    def blank_between_nodes(self) -> bool:
        """Whether this file separates nodes with a blank line (the new node follows suit)."""
        return any(self.ends[i] < len(self.lines) and not self.lines[self.ends[i]].strip()
                   for i in range(len(self.starts) - 1))

    # ---- one node as a ruamel object ------------------------------------------------------------

    def load_node(self, i: int) -> tuple[CommentedMap, tuple[int, int, int]]:
        """Node i as a round-trip mapping, and the indentation that dumps it back byte for byte."""
        wrapped = "nodes:\n" + self.snippet(i)
        for indent in _INDENTS:
            node = _yaml(indent).load(wrapped)["nodes"][0]
            if self._dump(node, indent, self.dash_column(i)) == self.snippet(i):
                return node, indent
        raise ForgeError(f"{self.file}:{self.starts[i] + 1}: node '{self.names[i]}' is written in a layout this "
                         "command cannot reproduce exactly; edit it by hand")

    def _dump(self, node: CommentedMap, indent: tuple[int, int, int], column: int) -> str:
        out = io.StringIO()
        _yaml(indent).dump({"nodes": [node]}, out)
        body = out.getvalue().split("\n", 1)[1]
        lines = body.splitlines()
        shift = column - (len(lines[0]) - len(lines[0].lstrip()))
        fixed = [(" " * shift + line if shift >= 0 else line[-shift:]) if line.strip() else "" for line in lines]
        end = self.line_end()
        return "".join(line + end for line in fixed)

    def render_node(self, node: CommentedMap, indent: tuple[int, int, int], column: int) -> str:
        return self._dump(node, indent, column)

    # ---- splicing -------------------------------------------------------------------------------

    def replaced(self, i: int, node_text: str) -> str:
        return "".join(self.lines[:self.starts[i]]) + node_text + "".join(self.lines[self.ends[i]:])

    def inserted_after(self, i: int, node_text: str) -> tuple[str, int]:
        """The text with a node inserted after node i, and the 0-based line where it starts."""
        at = self.ends[i]
        gap = self.line_end() if self.blank_between_nodes() else ""
        if at >= len(self.lines) and self.lines and not self.lines[-1].endswith("\n"):
            gap = self.line_end() + gap  # the file ended without a newline
        return "".join(self.lines[:at]) + gap + node_text + "".join(self.lines[at:]), at + gap.count("\n")

    def removed(self, i: int) -> str:
        start, end = self.starts[i], self.ends[i]
        blank_after = end < len(self.lines) and not self.lines[end].strip()
        blank_before = start > 0 and not self.lines[start - 1].strip()
        if blank_after and blank_before:
            end += 1  # keep one blank line between the neighbours, not two
        return "".join(self.lines[:start]) + "".join(self.lines[end:])

    def with_expected(self, updates: dict[str, int]) -> "NodeText":
        """A copy whose cluster.expected numbers are set in place (same line count)."""
        expected = (self.doc.get("cluster") or {}).get("expected")
        lines = list(self.lines)
        for key, value in updates.items():
            line, col = expected.lc.value(key)
            match = re.compile(r"-?[0-9]+").match(lines[line], col)
            if not match:
                raise ForgeError(f"{self.file}:{line + 1}: cluster.expected.{key} is not a plain number; update it by hand")
            lines[line] = lines[line][:match.start()] + str(value) + lines[line][match.end():]
        return NodeText(self.file, lines, self.starts, self.ends, self.doc)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def flow_seq(items: list[Any], flow: bool) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style() if flow else seq.fa.set_block_style()
    return seq


def flow_map(items: dict[str, Any], flow: bool) -> CommentedMap:
    mapping = CommentedMap(items)
    mapping.fa.set_flow_style() if flow else mapping.fa.set_block_style()
    return mapping


def is_flow(value: Any, default: bool) -> bool:
    if isinstance(value, (CommentedMap, CommentedSeq)):
        return bool(value.fa.flow_style())
    return default

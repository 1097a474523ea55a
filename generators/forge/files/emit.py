"""Turn objects into file text: one YAML dialect, a header on every file, no timestamps.

The dialect is PyYAML's SafeDumper with our `_Dumper` tweaks: `reference_dump` defines it. PyYAML's
emitter is pure Python and was ~90% of a cold `forge generate`; libyaml's C emitter cannot stand in,
as it writes lists under keys without indentation, which would change every generated file. So
`dump` writes the block structure itself (dicts, lists, tuples) and decides each distinct scalar's
text once, remembering it: PyYAML's own analysis and resolver choose plain or single-quoted, literal
blocks follow its write_literal, and anything else (double quotes, floats) is asked of PyYAML by
dumping the scalar alone. Whatever the writer cannot be sure to write the same way (a non-string
key, a complex `? ` key, another type, text that would span lines outside a literal block or be
folded at the width) sends the whole document to PyYAML. tests/test_emit.py holds the two to the
same bytes on every generated file and on random documents of tricky scalars.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import yaml

STANDARD_LABELS = {"app.kubernetes.io/managed-by": "forge", "app.kubernetes.io/part-of": "forge"}
CLUSTER_LABEL = "forge.exa.ai/cluster"
PART_OF = "app.kubernetes.io/part-of"


class _Dumper(yaml.SafeDumper):
    """Block style, insertion order, multi-line strings as literal blocks (readable diffs)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):  # lists indented under keys
        return super().increase_indent(flow, False)

    def ignore_aliases(self, data) -> bool:  # a shared list is written out in full, never as &id001
        return True


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def reference_dump(obj: Any) -> str:
    """The dialect's definition (and `dump`'s fallback): PyYAML's own emitter, slow."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1_000_000, allow_unicode=True)


class _Fallback(Exception):
    """A document the writer leaves to PyYAML."""


_SCALAR_TYPES = (str, int, float, bool, type(None))
_CONTAINERS = (dict, list, tuple)
_STR = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()  # SafeDumper's: reads a plain scalar as null, bool, int, float...
_ANALYZER = _Dumper(None, allow_unicode=True)  # PyYAML's own analysis of which styles a scalar allows
# A subset of what that analysis allows plain (and single-quoted): printable ASCII, no leading
# indicator, no `: `, ` #`, trailing `:` or space, double space. It only saves analysing the
# commonest strings character by character in Python, so it has to be safe, not complete.
_PLAIN = re.compile(r"(?!.*(?:: |:$| #|  | $))[A-Za-z0-9_/(=+$^][ -~]*\Z")
_BREAK = re.compile("[\n\x85\u2028\u2029]")  # PyYAML's line breaks
# What PyYAML writes as a literal block (with allow_unicode): no character it escapes, no line
# break other than \n (the others are written raw, \n-splitting would miss them).
_BLOCK = re.compile(r"[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]*\Z")
# Plain and quoted text is folded past the width (1,000,000 columns): far longer text goes to PyYAML.
_LONGEST = 100_000
_LONGEST_KEY = 100  # a longer key may not be a simple key (under 128 characters with its tag)
_REMEMBERED = 100_000  # distinct scalars remembered per process: memory stays bounded on any fleet
_REMEMBERED_LONGEST = 4096  # longer strings (scripts, dashboards) are decided again: cheap, and not kept

# Each distinct scalar's text, by (type, value): True and 1 and 1.0 are equal keys in a dict, and
# the repr tells -0.0 from 0.0. A key's entry is None when PyYAML would not write it as a simple key.
Scalar = tuple[str, tuple[str, ...], bool]  # see _ask_value
_UNASKED: Any = object()
_keys: dict[str, str | None] = {}
_values: dict[tuple, Scalar | None] = {}


def _one_line(text: str) -> str | None:
    """PyYAML's text for a string without line breaks, when it is plain or single-quoted (its
    choose_scalar_style); None when it is double-quoted."""
    if _PLAIN.match(text):
        plain = single = True
    else:
        analysis = _ANALYZER.analyze_scalar(text)
        plain, single = analysis.allow_block_plain, analysis.allow_single_quoted
    if plain and _RESOLVER.resolve(yaml.ScalarNode, text, (True, False)) == _STR:
        return text
    return "'" + text.replace("'", "''") + "'" if single else None


def _ask_key(key: str) -> str | None:
    if key and len(key) < _LONGEST_KEY and not _BREAK.search(key) and (text := _one_line(key)) is not None:
        return text
    text = reference_dump({key: 0})
    if text.startswith("? ") or not text.endswith(": 0\n") or len(text) > _LONGEST:
        return None
    text = text[:-4]
    return None if _BREAK.search(text) else text


def _literal(text: str) -> Scalar:
    """PyYAML's literal block for `text` (its determine_block_hints and write_literal)."""
    hints = "2" if text[0] in " \n" else ""
    if text[-1] != "\n":
        hints += "-"
    elif len(text) == 1 or text[-2] == "\n":
        hints += "+"
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return "|" + hints, tuple(lines), hints.endswith("+")


def _decide_value(value: Any) -> Scalar | None:
    kind = type(value)
    if kind is bool or value is None:
        return {True: "true", False: "false", None: "null"}[value], (), False
    if kind is int:
        return str(value), (), False
    if kind is str:
        if not _BREAK.search(value):
            if len(value) < _LONGEST and (text := _one_line(value)) is not None:
                return text, (), False
        elif _BLOCK.match(value) and " \n" not in value and not value.endswith(" "):
            return _literal(value)  # the representer asks "|" for every string with a \n
    return _ask_value(value)


def _ask_value(value: Any) -> Scalar | None:
    """(text on the indicator's line, literal block lines without their indentation, whether the
    block keeps its final line breaks: `|+`); None when the writer must not write it."""
    text = reference_dump({"k": value})
    if not text.startswith("k: ") or len(text) > _LONGEST or any(b in text for b in "\x85\u2028\u2029"):
        return None
    head, _, rest = text[3:].partition("\n")
    if not head.startswith("|"):
        return None if rest else (head, (), False)
    keep = head.endswith("+")
    if keep:  # the stream then ends with `...`: a kept block is open-ended
        if not rest.endswith("\n...\n"):
            return None
        rest = rest[:-4]
    lines = rest.split("\n")[:-1]
    if any(line and not line.startswith("  ") for line in lines):
        return None
    return head, tuple(line[2:] for line in lines), keep


def _remembered(table: dict, memo: Any, decide: Callable[[Any], Any], value: Any) -> Any:
    """`decide(value)`, asked once per memo (the table is emptied when it grows too large)."""
    found = table.get(memo, _UNASKED)
    if found is _UNASKED:
        if len(table) > _REMEMBERED:
            table.clear()
        found = table[memo] = decide(value)
    if found is None:
        raise _Fallback
    return found


def _key(key: Any) -> str:
    if type(key) is not str:
        raise _Fallback
    return _remembered(_keys, key, _ask_key, key)


def _scalar(value: Any) -> Scalar:
    kind = type(value)
    if kind not in _SCALAR_TYPES:
        raise _Fallback
    if kind is str and len(value) > _REMEMBERED_LONGEST:
        found = _decide_value(value)
        if found is None:
            raise _Fallback
        return found
    return _remembered(_values, (kind, repr(value)) if kind is float else (kind, value), _decide_value, value)


def _write(node: dict | list | tuple, indent: int, out: list[str], inline: bool) -> None:
    """A non-empty collection whose entries start at column `indent`, its first entry on the
    current line when `inline` (right after a list's `- `)."""
    pad = " " * indent
    if type(node) is dict:
        for key, value in node.items():
            text = _key(key)
            out.append(f"{text}:" if inline else f"{pad}{text}:")
            inline = False
            _value(value, indent, out, in_list=False)
    else:
        for item in node:
            out.append("-" if inline else f"{pad}-")
            inline = False
            _value(item, indent, out, in_list=True)


def _value(value: Any, indent: int, out: list[str], in_list: bool) -> None:
    """What follows a `key:` or a `-` written at column `indent`."""
    kind = type(value)
    if kind in _CONTAINERS:
        if not value:
            out.append(" {}\n" if kind is dict else " []\n")
        else:
            out.append(" " if in_list else "\n")
            _write(value, indent + 2, out, inline=in_list)
        return
    head, lines, _ = _scalar(value)
    out.append(f" {head}\n")
    if lines:
        pad = " " * (indent + 2)
        out.extend(f"{pad}{line}\n" if line else "\n" for line in lines)


def _open_ended(node: Any) -> bool:
    """Whether the document's last scalar is a `|+` block, after which PyYAML ends the stream with `...`."""
    while type(node) in _CONTAINERS and node:
        node = next(reversed(node.values())) if type(node) is dict else node[-1]
    return type(node) is str and _scalar(node)[2]


def fast_dump(obj: Any) -> str | None:
    """The writer: `reference_dump(obj)` byte for byte, or None for a document it leaves to PyYAML."""
    if type(obj) not in _CONTAINERS or not obj:
        return None
    out: list[str] = []
    try:
        _write(obj, 0, out, inline=False)
        if _open_ended(obj):
            out.append("...\n")
    except (_Fallback, RecursionError):
        return None
    return "".join(out)


def dump(obj: Any) -> str:
    text = fast_dump(obj)
    return reference_dump(obj) if text is None else text


def header(generator: str, source: str) -> str:
    return (f"# Generated by {generator} from {source}. Do not edit: regenerate with `make generate`.\n")


def yaml_file(generator: str, source: str, docs: Iterable[Any]) -> str:
    return header(generator, source) + "---\n".join(dump(d) for d in docs)


def labels_for(cluster: str) -> dict[str, str]:
    return {**STANDARD_LABELS, CLUSTER_LABEL: cluster}


def kustomization(generator: str, source: str, cluster: str, resources: list[str], part_of: bool = True,
                  patches: list[str] = ()) -> str:
    """`part_of` False: every standard label but app.kubernetes.io/part-of (a folder holding Argo
    CD's own configuration, which must stay part-of argocd). `patches`: a cluster's hand-written
    patches (forge.generate.overrides), applied after everything else."""
    labels = labels_for(cluster) if part_of else {k: v for k, v in labels_for(cluster).items() if k != PART_OF}
    doc = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
        # Our standard labels on every object this overlay emits (not on selectors: immutable).
        "labels": [{"pairs": labels, "includeSelectors": False}],
    }
    if patches:
        doc["patches"] = [{"path": p} for p in patches]
    return yaml_file(generator, source, [doc])

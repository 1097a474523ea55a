"""Read a YAML stream ~3x faster than PyYAML's CSafeLoader, with exactly its result.

PyYAML's C loader parses in libyaml but resolves and constructs every scalar in Python, and that
is most of `forge validate`'s time. ryaml runs the same parser (serde_yaml's translation of
libyaml) and builds the Python objects in Rust. What differs is how a *plain* (unquoted) scalar
is typed: serde_yaml reads YAML 1.2's core schema, PyYAML (like Kubernetes' sigs.k8s.io/yaml)
YAML 1.1: `on`, `yes`, `0o17`, `1e3`, `1_000`, `1:30`, `<<` (a merge key) differ. PyYAML also
refuses tags it does not know and an anchor defined twice, which ryaml accepts.

So the text is cut into documents at the `---` lines (where libyaml ends a document too), each
is read by ryaml, and kept when nothing in it can differ; otherwise PyYAML reads it:
- a string that PyYAML's resolver would not read as a string if it were plain (`on`, `1_000`),
  while ryaml would (so it may have been plain): kept when the text has no plain occurrence of
  it (one that starts after white space, a flow indicator or ':', and ends at one). A string
  ryaml would not read as a string (`true`, `8080`) was quoted: the same to both;
- a float, when the text holds a plain number in a form the two read differently: an exponent
  without a dot or a sign (`1e3`), a sign before a leading dot (`-.5`), an underscore
  (_ODD_FLOAT); plain decimals (`0.95`, `.5`, `1.`) read alike; `0o`/`0O` in the text (ryaml's octal);
- a key starting with `!` (ryaml's way of keeping a local tag), or a `!!`, `!<` or `! ` tag,
  or an anchor name used twice, wherever a tag or anchor could start;
- any value of another type. Booleans, null and the other integers read alike.
Any error, or a document that is not a mapping, and the caller reads the whole text with PyYAML,
so errors are PyYAML's own. tests/validate/test_fastyaml.py holds both equal on generated text.
"""
from __future__ import annotations

import re
from typing import Any

import ryaml
import yaml

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_Base):  # type: ignore[misc, valid-type]
    """Safe loader that reads values the way kubectl / Argo CD (sigs.k8s.io/yaml) do.

    Subclassed so we never mutate yaml.SafeLoader globally for other users.
    """


def _as_str(loader: yaml.BaseLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


# PyYAML resolves a bare `=` to the YAML 1.1 "value" type and then has no constructor for it
# (pyyaml#89); CRDs use `=` in enums (e.g. prometheus-operator's matcher types). Read it as text.
Loader.add_constructor("tag:yaml.org,2002:value", _as_str)
# Unquoted dates would become datetime objects, which no JSON schema can check (and jsonschema_rs
# refuses). The Kubernetes tool chain turns YAML into JSON, where they are plain strings.
Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_str)


def load_all(text: str) -> list[Any]:
    """Every document, PyYAML's way."""
    return list(yaml.load_all(text, Loader=Loader))


_HARMLESS = frozenset({"tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value",
                       "tag:yaml.org,2002:yaml"})  # text to PyYAML too (timestamp and value: _as_str)
_DELIMITERS = " \t\r\n\x85\u2028\u2029[]{},:\ufeff"
_END = r"(?=[\s,\[\]{}:]|\Z)"
# A tag or an anchor where one can start (after a delimiter, or first), the mark found first and
# the start checked behind it (PromQL's `!=` would otherwise cost a Python step each): any tag,
# a tag other than a local one (`!t`; not `!!t`, `!<t>` or a bare `!`), an anchor's name.
_TAG_AT = re.compile(r"!(?<![^" + re.escape(_DELIMITERS) + r"]!)")
_OTHER_TAG_AT = re.compile(r"!(?<![^" + re.escape(_DELIMITERS) + r"]!)(?![0-9A-Za-z#;/?:@&=+$_.~*'()%-])")
_ANCHOR_AT = re.compile(r"&(?<![^" + re.escape(_DELIMITERS) + r"]&)([0-9A-Za-z_-]*)")
# A plain number PyYAML would read otherwise than ryaml if ryaml read it as a float (found by
# reading every short token of digits, dots, signs and exponents both ways; see the tests): an
# exponent without a dot or sign, a sign before a leading dot, an underscore. Its first character
# comes first and the token's start is checked behind it: a pattern starting with the look-behind
# tries every position (16 ms per 100-node cluster's output, against 3).
_ODD_FLOAT = re.compile(r"[-+0-9.](?<![^" + re.escape(_DELIMITERS) + r"].)(?:"
                        r"(?<=[-+])(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE]|\.[0-9]|\.?[0-9][0-9.]*_)"  # after a sign
                        r"|(?<=[0-9])(?:[0-9]*\.?[0-9]*[eE]|[0-9.]*_)"  # after a first digit
                        r"|(?<=\.)(?:[0-9]+[eE]|[0-9][0-9.]*_))")  # after a leading dot
_OCTAL = re.compile("0[oO]")  # one scan, not two
# The literal first, the line start checked behind it (as forge.validate.crd_index does): a
# pattern anchored at `^` tries every position, ~4 ms per 100-node cluster's output for nothing.
_DOCUMENT = re.compile(r"---(?<=^---)(?=[ \t\r\n]|\Z)", re.M)
_DIRECTIVE = re.compile(r"%(?<=^%)", re.M)
_SUSPECT: dict[str, re.Pattern[str] | None] = {}  # string -> its plain occurrences, None when harmless


_NONE = type(None)


class _Unsure(Exception):
    """This document is for PyYAML."""


def load_documents(text: str) -> list[dict[str, Any]] | None:
    """The non-empty documents of the stream, all mappings, exactly as `load_all` reads them;
    None when the caller must read the whole text with PyYAML: on any error, or a document that
    is not a mapping (its error names the document's place in the whole stream)."""
    directives = bool(_DIRECTIVE.search(text))
    try:
        try:
            return _mappings(_read(text, directives))
        except _Unsure:
            pass
        # A directive (%YAML, %TAG) applies to the document after it: no cutting where there are some.
        starts = [0] if directives else [0, *(m.start() for m in _DOCUMENT.finditer(text) if m.start())]
        out: list[Any] = []
        for i, begin in enumerate(starts):
            chunk = text[begin:starts[i + 1] if i + 1 < len(starts) else len(text)]
            try:
                out += _read(chunk, directives)
            except _Unsure:
                out += load_all(chunk)
        return _mappings(out)
    except Exception:  # noqa: BLE001 - whatever it is, PyYAML's reading of the whole text decides
        return None


def _mappings(docs: list[Any]) -> list[dict[str, Any]] | None:
    if any(not isinstance(d, dict) for d in docs if d is not None):
        return None
    return [d for d in docs if d is not None]


def _read(text: str, directives: bool) -> list[Any]:
    """ryaml's reading of the text; _Unsure when PyYAML's could differ (see the module doc)."""
    docs = ryaml.loads_all(text) or []
    _check(text, docs, directives)
    return docs


def _check(chunk: str, docs: list[Any], directives: bool) -> None:
    """Raise _Unsure unless ryaml's reading of the chunk is PyYAML's (see the module doc)."""
    keys: set[Any] = set()
    strings: set[str] = set()
    floats = False
    stack = list(docs)
    while stack:
        node = stack.pop()
        if type(node) is dict:
            keys.update(node)  # checked below, once per distinct key
            values: Any = node.values()
        else:
            values = node
        for value in values:
            kind = type(value)
            if kind is str:
                strings.add(value)
            elif kind is dict or kind is list:
                stack.append(value)
            elif kind is float:
                floats = True  # checked below, against the text
            elif kind is not int and kind is not bool and kind is not _NONE:
                raise _Unsure  # a type ryaml should not make
    for key in keys:
        kind = type(key)
        if kind is str:
            if key[:1] == "!":
                raise _Unsure  # a local tag, or a key that looks like one
            strings.add(key)
        elif kind is float:
            floats = True
        elif kind is not int and kind is not bool and kind is not _NONE:
            raise _Unsure
    if _OCTAL.search(chunk) or (floats and _ODD_FLOAT.search(chunk)):
        raise _Unsure
    if "!" in chunk or "&" in chunk:
        _marks(chunk, directives)
    for text in strings:
        if text[:1] in _TYPED_FIRST and _TYPED.match(text):
            found = _suspect(text)
            if found is not None and found.search(chunk):
                raise _Unsure


def _marks(chunk: str, directives: bool) -> None:
    """Tags and anchors: a local tag (`!t`) shows as a key, checked by the caller; any other tag,
    or an anchor name used twice, and PyYAML reads the document."""
    if "!" in chunk and (_TAG_AT if directives else _OTHER_TAG_AT).search(chunk):
        raise _Unsure
    if "&" in chunk:
        names = [name for name in _ANCHOR_AT.findall(chunk) if name]  # an empty name is an error to both
        if len(names) != len(set(names)):
            raise _Unsure


def _suspect(text: str) -> re.Pattern[str] | None:
    """A pattern finding `text` as a plain scalar, when PyYAML would type that plain scalar
    otherwise than ryaml reads `text`; None when they cannot differ."""
    tag = next((t for t, rx in Loader.yaml_implicit_resolvers.get(text[:1], ()) if rx.match(text)), None)
    if tag is None or tag in _HARMLESS:
        return None
    if text not in _SUSPECT:  # few: quoted numbers and booleans, `on`, `1_000`
        try:
            plain_is_text = isinstance(ryaml.loads(text), str)
        except Exception:  # noqa: BLE001 - not a lone scalar to ryaml: cannot tell
            plain_is_text = True
        escaped = re.escape(text)
        # Else it was quoted (ryaml would not have made a plain one text): text to both.
        _SUSPECT[text] = re.compile(escaped + "(?<![^" + re.escape(_DELIMITERS) + "]" + escaped + ")" + _END) \
            if plain_is_text else None
    return _SUSPECT[text]


def _typed() -> re.Pattern[str]:
    """Any text one of PyYAML's implicit resolvers would type otherwise than as a string (a
    quick test, whatever the first character; _suspect then asks the resolvers in order)."""
    patterns = {rx for resolvers in Loader.yaml_implicit_resolvers.values() for tag, rx in resolvers if tag not in _HARMLESS}
    return re.compile("|".join(f"(?{'x' if rx.flags & re.X else ''}:{rx.pattern})"
                               for rx in sorted(patterns, key=lambda rx: rx.pattern)))


_TYPED = _typed()
# PyYAML's resolvers are indexed by the first character of what they type: a string starting with
# any other (most of them) is text to it whatever follows.
_TYPED_FIRST = frozenset(c for c, resolvers in Loader.yaml_implicit_resolvers.items() if c is not None
                         and any(tag not in _HARMLESS for tag, _ in resolvers))

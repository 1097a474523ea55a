"""forge.files.emit's writer against its oracle: `dump` must give exactly `reference_dump`'s bytes (PyYAML's
own emitter with the house dialect), on every file generate builds for the shipped fleets and the
fixture fleets, and on random documents full of scalars PyYAML quotes, escapes or writes as blocks."""
from __future__ import annotations

import difflib
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forge.files import emit
from forge.generate.incremental import build_cluster
from tests.helpers import FIXTURE_CLUSTERS, REPO

INVENTORIES = sorted((REPO / "clusters").glob("*/inventory.yaml")) + sorted(FIXTURE_CLUSTERS.glob("*/inventory.yaml"))

# Strings the resolver reads as another type, indicators, whitespace at the edges, every chomping
# and indentation indicator of a literal block, escapes, unicode, and lengths past the writer's limits.
TRICKY_STRINGS = [
    "yes", "No", "on", "OFF", "y", "n", "true", "False", "null", "Null", "~", "", " ", "  ", " lead", "trail ",
    "a: b", "a:b", "a:", ":a", "- x", "-x", "--flag=1", "---", "...", "-", "?", "? x", "#c", "a #c", "a#c",
    "1.0", "1", "-1", "+1", "0x1F", "0o17", "017", "1e3", "1_000", ".inf", "-.Inf", ".NaN", "1:20", "2024-01-01",
    "2024-01-01T10:00:00Z", "@x", "`x", "*a", "&a", "!t", "!!str", "%", "%x", "|", ">", "'q'", '"d"', "it's",
    "a'b\"c", "{a}", "[a]", "a,b", "a, b", "=", "<<", "a  b", "multi\nline", "multi\nline\n", "ends\n\n",
    "\n", "\n\n", "\nlead", " lead\nx", "x\n y", "x \ny", "x\n \ny", "trailing\nspace ", "\ttab", "a\tb",
    "tab\tin\nblock", "caf\u00e9", "\u00e9\n\u00e8\n", "\u65e5\u672c", "\U0001f600", "\u2028", "a\u2029b",
    "a\x85b\nc", "\ufeff", "\x00", "\x07bell", "\x1b[0m", "\x7f", "\r\n", "a\rb", "back\\slash", "x" * 200,
    "word " * 40, "y" * 130, "line\n" * 50, "past the memo\n" * 400, "z" * 5000,
]
SCALARS = TRICKY_STRINGS + [0, 1, -7, 10**30, 1.0, -0.0, 0.5, 1e17, 1e-7, math.inf, -math.inf, math.nan,
                            True, False, None, {}, []]


@pytest.fixture(scope="module")
def recorded() -> dict[str, tuple[dict[str, str], list]]:
    """Each fleet's files as generated, and the documents that went through `dump` on the way."""
    out = {}
    for path in INVENTORIES:
        docs: list = []
        real = emit.dump
        emit.dump = lambda obj: (docs.append(obj), real(obj))[1]
        try:
            built = build_cluster(REPO, path)
        finally:
            emit.dump = real
        assert built is not None, f"{path} does not load"
        out[path.relative_to(REPO).as_posix()] = (built[1], docs)
    return out


@pytest.mark.parametrize("inventory", [p.relative_to(REPO).as_posix() for p in INVENTORIES])
def test_every_generated_file_is_byte_identical_to_pyyaml(inventory: str, recorded, monkeypatch) -> None:
    files, docs = recorded[inventory]
    monkeypatch.setattr(emit, "dump", emit.reference_dump)
    reference = build_cluster(REPO, REPO / inventory)[1]
    assert sorted(files) == sorted(reference)
    for name, text in files.items():
        assert text == reference[name], f"{name} differs from PyYAML:\n" + "".join(difflib.unified_diff(
            reference[name].splitlines(True), text.splitlines(True), "pyyaml", "forge.files.emit"))
    # The writer itself wrote them: no document was handed back to PyYAML.
    assert docs and all(emit.fast_dump(doc) is not None for doc in docs)


def test_the_writer_writes_every_tricky_scalar_itself() -> None:
    """Values in mappings and lists, nested in both, where literal blocks are re-indented; keys too
    (those PyYAML writes as `? ` complex keys, or with raw line breaks, go to PyYAML whole)."""
    values = [s for s in SCALARS if not (isinstance(s, str) and any(b in s for b in "\x85\u2028\u2029"))]
    doc = {"top": {f"k{i}": v for i, v in enumerate(values)}, "list": values,
           "deep": [[{"a": [{"b": v}]}] for v in values], "last": "kept\n\n"}
    assert emit.fast_dump(doc) == emit.reference_dump(doc)
    for key in TRICKY_STRINGS:
        doc = {key: ["x\n", {key: key}], "z": 1}
        assert emit.dump(doc) == emit.reference_dump(doc), repr(key)
        if key and len(key) < 100 and "\n" not in key and key.isascii() and key.isprintable():
            assert emit.fast_dump(doc) is not None, repr(key)


def test_documents_the_writer_leaves_to_pyyaml() -> None:
    for doc in ({1: "int key"}, {None: 1}, {"a\nb": 1}, {"k" * 130: 1}, {"": 1}, {"k": b"bytes"},
                {"k": {1, 2}}, {"k": "x" * 200_000}, "top-level scalar", [], {}, None):
        assert emit.fast_dump(doc) is None
        assert emit.dump(doc) == emit.reference_dump(doc)


_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
# Strings glued from the pieces PyYAML's rules turn on: edges, breaks, indicators, resolvable words.
_PIECES = ["a", "b", " ", "  ", "\n", "\t", ":", ": ", "#", " #", "-", "- ", "?", "'", '"', ",", "[", "{", "&", "*",
           "!", "|", ">", "%", "@", "`", "~", "yes", "null", "1", "0x1", "1.5", "2024-01-01", "\u00e9", "\u2028",
           "\x85", "\ufeff", "\x00"]
_glued = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join)
_strings = st.sampled_from(TRICKY_STRINGS) | _glued | _text
_leaves = (_strings | _strings | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.booleans()
           | st.none() | st.just({}) | st.just([]))
_documents = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                          | st.dictionaries(_strings, inner, max_size=4), max_leaves=25)


@settings(max_examples=500, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_documents)
def test_random_documents_are_byte_identical_to_pyyaml(doc) -> None:
    assert emit.dump(doc) == emit.reference_dump(doc)


@settings(max_examples=2000, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_strings)
def test_random_strings_are_byte_identical_to_pyyaml_as_keys_values_and_items(text: str) -> None:
    doc = {"value": text, "list": [text, {"in": [text]}], text: "key"}
    assert emit.dump(doc) == emit.reference_dump(doc)
    assert emit.dump(doc["list"]) == emit.reference_dump(doc["list"])

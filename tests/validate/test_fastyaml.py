"""forge.validate.fastyaml reads every text exactly as PyYAML's loader does (same documents, same
types, same key order, or the same error), on generated YAML full of scalars YAML 1.1 and 1.2
read differently, on random text, and on every YAML file the repo and the upstream data hold.
FORGE_FUZZ_EXAMPLES sets the examples per property (`make fuzz`: 10,000)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from forge.validate.fastyaml import load_documents
from forge.validate.objects import load_yaml_stream, pyyaml_stream
from tests.helpers import REPO

EXAMPLES = int(os.environ.get("FORGE_FUZZ_EXAMPLES", "100")) * 3
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=EXAMPLES <= 300,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Plain scalars on which YAML 1.1 (PyYAML) and 1.2 (ryaml) differ, or that look like they might.
AMBIGUOUS = [
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "n", "true", "True", "FALSE",
    "null", "Null", "~", "", "<<", "=", "0o17", "+0o17", "0O17", "017", "-017", "00", "08", "0_7", "1_000", "0x1F", "0x_1",
    "0xFF_FF", "-0x1F", "+0b101", "0b1_0", "1:30", "-1:30", "190:20:30.15", "10:00:00", "1e3", "1E3", "1e+3", "1.5e3",
    "1.5e+3", "1.0e-3", "6.8523015e+5", "685.230_15e+03", ".5", "-.5", "+.5", "1.", "-1.", "01.5", ".inf", "-.Inf",
    "+.INF", ".nan", ".NaN", "inf", "nan", "Infinity", "12345678901234567890", "123456789012345678901234567890",
    "-9223372036854775809", "2024-01-02", "2001-12-14t21:59:43.10-05:00", "1.34", "10.0.0.0/16", "100Mi", "0.95", "8080",
    "-1", "+1", "0", "-0", "1e9", "1_", "_1", "0b", "0x", "0o", "1,000", "a:b", "!", "&", "*",
]
TOKEN = st.one_of(st.sampled_from(AMBIGUOUS),
                  st.text(alphabet="0123456789._:+-eExXoObBinfaNIyYsSnN<=~tTrRuUlL", min_size=1, max_size=8))


@st.composite
def scalar(draw) -> str:
    token = draw(TOKEN)
    style = draw(st.sampled_from(["plain", "plain", "plain", "single", "double", "block"]))
    if style == "single":
        return "'" + token.replace("'", "''") + "'"
    if style == "double":
        return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == "block":
        return f"|-\n{' ' * 12}{token}\n"
    prefix = draw(st.sampled_from(["", "", "", "", "&a ", "&b ", "!!str ", "!t ", "!= ", "! ", "!!int ", "*a "]))
    return prefix + token if prefix != "*a " else "*a"


@st.composite
def node(draw, depth: int = 0, indent: int = 0) -> str:
    """A block value (after `key:` or `-`) as text, nested up to three levels."""
    kind = draw(st.sampled_from(["scalar", "scalar", "flow", "map", "seq"] if depth < 3 else ["scalar", "flow"]))
    pad = " " * (indent + 2)
    if kind == "scalar":
        return " " + draw(scalar())
    if kind == "flow":
        items = draw(st.lists(st.tuples(TOKEN, TOKEN), max_size=3))
        if draw(st.booleans()):
            return " {" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
        return " [" + ", ".join(v for _, v in items) + "]"
    lines = []
    for key, value in draw(st.lists(st.tuples(TOKEN, st.deferred(lambda: node(depth + 1, indent + 2))), min_size=1, max_size=3)):
        lines.append(f"{pad}- {key}:{value}" if kind == "seq" else f"{pad}{key}:{value}")
    return "\n" + "\n".join(lines)


@st.composite
def stream(draw) -> str:
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        pairs = draw(st.lists(st.tuples(st.one_of(TOKEN, scalar()), node()), min_size=1, max_size=4))
        docs.append("\n".join(f"{k}:{v}" for k, v in pairs))
    head = draw(st.sampled_from(["", "", "---\n", "%YAML 1.1\n---\n", "\ufeff", "# c\n"]))
    return head + "\n---\n".join(docs) + draw(st.sampled_from(["", "\n", "\n...\n", "\n---\n"]))


def outcome(read, text: str) -> tuple:
    """repr() tells types apart (1 and 1.0 and True), keeps key order and makes nan equal to nan."""
    try:
        return ("read", repr(read(text)))
    except Exception as exc:  # noqa: BLE001 - the error itself is what is compared
        return ("error", type(exc).__name__, str(exc))


def assert_same(text: str) -> None:
    expected = outcome(pyyaml_stream, text)
    assert outcome(load_yaml_stream, text) == expected, text
    fast = load_documents(text)  # the fast path alone: a result, when it gives one, is PyYAML's
    if fast is not None:
        assert ("read", repr(fast)) == expected, text


@PROPERTY
@given(stream())
def test_generated_yaml_reads_as_pyyaml_reads_it(text):
    assert_same(text)


@PROPERTY
@given(scalar(), scalar(), st.sampled_from(["k: {0}\nv: {1}\n", "{0}: x\n", "k: [{0}, {1}]\n", "k: {{{0}: {1}}}\n",
                                            "k:\n- {0}\n- {1}\n", "{{\"k\":{0}}}\n"]))
def test_one_scalar_at_a_time_reads_as_pyyaml_reads_it(first, second, shape):
    """Each scalar alone in a small document, so that no other one sends it to PyYAML."""
    assert_same(shape.format(first, second))
    assert_same(shape.format(first, "x"))


@PROPERTY
@given(st.text(alphabet="yesonf01789._:+-eEoxb<=~!&*'\"[]{},#|>?- \t\n", max_size=40))
def test_random_text_reads_as_pyyaml_reads_it(text):
    assert_same(text)


@pytest.mark.parametrize("text, value", [
    ("a: on\nb: 'on'\n", [{"a": True, "b": "on"}]),
    ("a: '1_000'\nb: 1_000\n", [{"a": "1_000", "b": 1000}]),
    ("a: 0o17\n", [{"a": "0o17"}]),
    ("b: 017\n", [{"b": 15}]),
    ("c: 1e3\n", [{"c": "1e3"}]),
    ("c: -.5\n", [{"c": "-.5"}]),
    ("d: 1.5e+3\n", [{"d": 1500.0}]),
    ("base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n", [{"base": {"x": 1}, "m": {"x": 1, "y": 2}}]),
    ("a: !!binary aGk=\n", [{"a": b"hi"}]),
])
def test_yaml_1_1_wins_where_the_two_differ(text, value):
    assert load_yaml_stream(text) == value


def test_every_short_number_like_token_reads_as_pyyaml_reads_it():
    """Where ryaml makes a float, PyYAML may not (`1e3`, `-.5`) or may read another: every plain
    token of up to four digits, dots, signs and exponent letters, as a value and as a key."""
    tokens = [""]
    for _ in range(4):
        tokens = [t + c for t in tokens for c in "01._eE+-"]
        for token in tokens:
            assert_same(f"k: {token}\nv: 0.5\n")
            assert_same(f"{token}: v\n")


def test_plain_decimals_and_rendered_objects_keep_the_fast_path(monkeypatch):
    from forge.validate import fastyaml

    def pyyaml(text):
        raise AssertionError(f"PyYAML was asked to read {text!r}")

    monkeypatch.setattr(fastyaml, "load_all", pyyaml)
    assert load_documents("a: 0.95\nb: [.5, 1., -2.25]\n") == [{"a": 0.95, "b": [0.5, 1.0, -2.25]}]
    rule = "spec:\n  groups:\n  - rules:\n    - expr: up{job=\"x\"} != 1\n        != 2 > 0.95\n      for: 5m\n"
    assert load_documents(rule) == [{"spec": {"groups": [{"rules": [{"expr": 'up{job="x"} != 1 != 2 > 0.95', "for": "5m"}]}]}}]


def test_only_strings_starting_as_a_resolver_does_are_looked_at():
    """The first-character shortcut holds while PyYAML has no resolver for any first character."""
    from forge.validate.fastyaml import Loader, _TYPED_FIRST

    assert None not in Loader.yaml_implicit_resolvers
    assert {"y", "o", "0", "-", "~", "", "<"} <= _TYPED_FIRST and not {"a", "h", "/"} & _TYPED_FIRST


def test_errors_are_pyyaml_s():
    for text in ("a: !foo 5\n", "a: &x 1\nb: &x 2\n", "a: [1, 2\n", "a: 1\n---\n- b\n"):
        assert outcome(load_yaml_stream, text) == outcome(pyyaml_stream, text)
        assert outcome(load_yaml_stream, text)[0] == "error"


def test_rendered_kubernetes_objects_take_the_fast_path():
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {gpu: \"true\", n: \"8\"}\n"
            "data:\n  on: \"on\"\n  script: |\n    if [ $x != 1 ] && true; then echo on; fi\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  paused: false\n")
    assert load_documents(text) == pyyaml_stream(text)


def _yaml_files() -> list[Path]:
    upstream = os.environ.get("FORGE_UPSTREAM")
    roots = [REPO / "overlays", REPO / "clusters", REPO / "base", REPO / "tests", REPO / "build" / "rendered",
             *([Path(upstream)] if upstream else [])]
    return [p for root in roots if root.is_dir() for p in sorted(root.rglob("*.y*ml"))]


def test_every_yaml_file_here_reads_as_pyyaml_reads_it():
    files = _yaml_files()
    assert len(files) > 100
    for path in files:
        assert_same(path.read_text(encoding="utf-8"))

"""The walks validation makes through every object (pod specs, image fields) and what lets it skip
them: a key the YAML text never spells cannot be in any object read from it."""
from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from forge.validate.objects import absent_keys, load_yaml_stream
from forge.validate.podsecurity import PodSpecs, pod_specs, pod_specs_deep
from forge.validate.policies import check_policies

EXAMPLES = int(os.environ.get("FORGE_FUZZ_EXAMPLES", "100")) * 3
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=EXAMPLES <= 300,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Ways a mapping key can be written: the walked names as written, spelt by escapes inside double
# quotes, and names that only look alike.
KEYS = ["image", "containers", "'image'", '"image"', '"containers"', '"\\x69mage"', '"\\u0069mage"',
        '"\\U00000063ontainers"', "imag", "images", "name", "a", "'im''age'", '"ima\\"ge"']


def _keys(node: Any, out: set[Any]) -> set[Any]:
    if isinstance(node, dict):
        out.update(node)
        for value in node.values():
            _keys(value, out)
    elif isinstance(node, list):
        for value in node:
            _keys(value, out)
    return out


@st.composite
def value(draw, depth: int = 0, indent: int = 2) -> str:
    kind = draw(st.sampled_from(["scalar", "flow", "block", "seq", "alias"] if depth < 3 else ["scalar", "flow"]))
    pad = " " * indent
    if kind == "scalar":
        return " " + draw(st.sampled_from(["x", "'image'", '"\\x69mage"', "1", "[]"]))
    if kind == "flow":
        pairs = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(["1", "x", "[a]"])), max_size=3))
        return " {" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    if kind == "alias":
        return " *base"
    rows = draw(st.lists(st.tuples(st.sampled_from(KEYS), st.deferred(lambda: value(depth + 1, indent + 2))),
                         min_size=1, max_size=3))
    if kind == "seq":
        return "\n" + "\n".join(f"{pad}- {k}:{v}" for k, v in rows)
    return "\n" + "\n".join(f"{pad}{k}:{v}" for k, v in rows)


@st.composite
def stream(draw) -> str:
    base = "base: &base {" + draw(st.sampled_from(["a: 1", '"\\x69mage": x', "containers: []"])) + "}\n"
    rows = draw(st.lists(st.tuples(st.sampled_from(KEYS), value()), min_size=1, max_size=4))
    merge = draw(st.sampled_from(["", "m:\n  <<: *base\n"]))
    explicit = draw(st.sampled_from(["", '? "ima\\\n  ge"\n: 1\n']))  # an escaped line break inside a key
    return base + "".join(f"{k}:{v}\n" for k, v in rows) + merge + explicit


@PROPERTY
@given(stream())
def test_no_object_read_from_a_text_holds_a_key_absent_keys_rules_out(text):
    try:
        objects = load_yaml_stream(text)
    except Exception:  # noqa: BLE001 - generated text PyYAML refuses says nothing either way
        return
    found = _keys(objects, set())
    assert not (absent_keys(text) & found), text


def test_absent_keys_reads_the_text_and_gives_up_on_escapes():
    assert absent_keys("kind: NodeFeatureRule\nspec: {labels: {rack: r1}}\n") == {"image", "containers"}
    assert absent_keys("spec: {containers: [{name: c, image: 'busybox:1'}]}\n") == frozenset()
    assert absent_keys("metadata: {annotations: {note: 'no image here'}}\n") == {"containers"}
    escaped = 'spec: {"\\x69mage": "busybox:latest"}\n'
    assert load_yaml_stream(escaped) == [{"spec": {"image": "busybox:latest"}}]
    assert absent_keys(escaped) == frozenset()


def test_check_policies_skips_the_image_search_only_when_told():
    obj = {"kind": "Pod", "metadata": {}, "spec": {"containers": [{"name": "c", "image": "busybox:latest"}]}}
    assert check_policies(obj, required_labels={}) == [("spec.containers[0].image", "image 'busybox:latest' uses the 'latest' tag")]
    assert check_policies(obj, required_labels={}, images=False) == []


def test_pod_spec_memo_takes_objects_known_to_hold_none():
    pod = {"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}
    specs = PodSpecs()
    assert specs(pod) == [("spec", pod["spec"])]
    other = {"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}
    specs.none_in([other])
    assert specs(other) == []


JOB = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
    "Master": {"template": {"spec": {"containers": [{"name": "m"}], "initContainers": [{"name": "i"}]}}},
    "Worker": {"template": {"spec": {"containers": [{"name": "w"}]}}}}},
    "status": [{"containers": [{"name": "x"}]}, [{"containers": []}], {"containers": ["not", "named"]}], 1: {"containers": [{"name": "k"}]}}


def test_the_recursive_walk_finds_what_the_explicit_stack_finds():
    assert pod_specs(JOB) == pod_specs_deep(JOB)
    assert [p for p, _ in pod_specs(JOB)] == ["spec.pytorchReplicaSpecs.Master.template.spec",
                                              "spec.pytorchReplicaSpecs.Worker.template.spec", "status[0]", "1"]
    assert pod_specs([JOB], "items") == pod_specs_deep([JOB], "items")


def test_deeper_than_the_stack_the_walks_still_answer():
    deep: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox:latest"}]}
    for _ in range(5000):
        deep = {"x": deep}
    obj = {"kind": "Thing", "metadata": {}, "spec": deep}
    [(path, _)] = pod_specs(obj)
    assert path.startswith("spec.x.x.") and path.endswith(".x")
    assert check_policies(obj, required_labels={}) == [("", "nested too deeply to check its images")]

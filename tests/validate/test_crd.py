from __future__ import annotations

import copy
from pathlib import Path

import pytest

from forge.validate.crd import CrdSchemas

FIXTURES = Path(__file__).parent / "fixtures"  # hand-written CRDs, not upstream ones

WIDGET = {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w", "namespace": "n", "labels": {"a": "b"}, "annotations": {"x": "y"}},
    "spec": {"size": "small"},
}


@pytest.fixture(scope="module")
def crds() -> CrdSchemas:
    c = CrdSchemas()
    assert c.add_dir(FIXTURES / "crds") == 2  # recursive, multi-doc, ConfigMap skipped
    return c


def widget(**spec) -> dict:
    obj = copy.deepcopy(WIDGET)
    obj["spec"].update(spec)
    return obj


def test_valid_cr_passes(crds):
    assert crds.validate(widget()) == []


def test_unknown_field_rejected(crds):
    assert crds.validate(widget(colour="red")) == [("spec.colour", "unknown field")]
    obj = widget()
    obj["status"] = {"ready": True, "phase": "x"}
    assert crds.validate(obj) == [("status.phase", "unknown field")]


def test_unknown_top_level_field_rejected(crds):
    obj = widget()
    obj["extra"] = 1
    assert crds.validate(obj) == [("extra", "unknown field")]


def test_int_or_string(crds):
    assert crds.validate(widget(port=8080)) == []
    assert crds.validate(widget(port="http")) == []
    assert crds.validate(widget(port=1.5))[0][0] == "spec.port"


def test_preserve_unknown_fields(crds):
    assert crds.validate(widget(settings={"level": 3, "anything": {"goes": [1, 2]}})) == []
    # declared properties inside a preserved object are still typed
    assert crds.validate(widget(settings={"level": "high"})) == [("spec.settings.level", "expected integer, got string")]


def test_embedded_resource(crds):
    tmpl = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    assert crds.validate(widget(template=tmpl)) == []


def test_nullable_enum_required_and_exclusive_minimum(crds):
    assert crds.validate(widget(note=None)) == []
    assert crds.validate(widget(size="huge"))[0][0] == "spec.size"
    obj = widget()
    del obj["spec"]["size"]
    assert crds.validate(obj) == [("spec.size", "required field missing")]
    assert crds.validate(widget(replicas=0))[0][0] == "spec.replicas"  # exclusiveMinimum: true + minimum: 0
    assert crds.validate(widget(replicas=1)) == []


def test_free_form_map_and_bare_object(crds):
    assert crds.validate(widget(labels={"k": "v"})) == []
    assert crds.validate(widget(labels={"k": 1})) == [("spec.labels.k", "expected string, got integer")]
    # a bare `type: object` keeps no fields in the API server (pruning), so strict rejects them
    assert crds.validate(widget(marker={})) == []
    assert crds.validate(widget(marker={"x": 1})) == [("spec.marker.x", "unknown field")]


def test_list_type_set_must_be_unique(crds):
    assert crds.validate(widget(zones=["a", "b"])) == []
    assert crds.validate(widget(zones=["a", "a"]))[0][0] == "spec.zones"


def test_metadata_is_checked_loosely(crds):
    obj = widget()
    obj["metadata"]["finalizers"] = ["x"]
    assert crds.validate(obj) == []
    obj["metadata"]["labels"] = {"a": 1}
    assert crds.validate(obj) == [("metadata.labels.a", "expected string, got integer")]


def test_missing_crd_is_none_not_pass(crds):
    assert crds.validate({"apiVersion": "example.com/v1", "kind": "Sprocket", "metadata": {"name": "s"}}) is None
    assert crds.validate({"apiVersion": "other.io/v1", "kind": "Widget"}) is None


def test_unknown_or_unserved_version(crds):
    obj = widget()
    obj["apiVersion"] = "example.com/v2"
    [(path, msg)] = crds.validate(obj)
    assert path == "apiVersion" and "v1" in msg
    obj["apiVersion"] = "example.com/v1beta1"
    [(path, msg)] = crds.validate(obj)
    assert path == "apiVersion" and "does not serve" in msg


def test_kinds_and_scope(crds):
    assert ("example.com/v1", "Widget") in crds.kinds()
    assert ("example.com/v1alpha1", "Gadget") in crds.kinds()
    assert crds.is_namespaced("example.com/v1", "Widget") is True
    assert crds.is_namespaced("example.com/v1alpha1", "Gadget") is False
    assert crds.is_namespaced("example.com/v1", "Nope") is None


def test_add_objects_from_rendered_output():
    from forge.validate.objects import load_yaml_stream

    c = CrdSchemas()
    text = (FIXTURES / "crds" / "nested" / "more.yaml").read_text()
    assert c.add_objects(load_yaml_stream(text)) == 1
    assert c.validate({"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": {"name": "g"},
                       "spec": {"image": "x:1", "bogus": 1}}) == [("spec.bogus", "unknown field")]


def test_validator_compiled_once(crds):
    crds.validate(widget())
    crd = crds._crds[("example.com", "Widget")]
    first = crd.validators["v1"]
    crds.validate(widget())
    assert crd.validators["v1"] is first


def test_junctor_branches_do_not_forbid_fields():
    from forge.validate.crd import convert

    node = {"type": "object", "properties": {"a": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}}},
            "anyOf": [{"properties": {"a": {"properties": {"x": {}}}}}, {"required": ["a"]}]}
    out = convert(node)
    assert out["additionalProperties"] is False and out["properties"]["a"]["additionalProperties"] is False
    branch = out["anyOf"][0]
    assert "additionalProperties" not in branch and "additionalProperties" not in branch["properties"]["a"]

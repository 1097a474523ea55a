from __future__ import annotations

from pathlib import Path

from forge.validate.values import check_values, coalesce

CHART = Path(__file__).parent / "fixtures" / "chart"  # hand-written fixture chart data (see its values.yaml)


def test_known_keys_pass():
    assert check_values({"replicas": 2, "image": {"tag": "1.0"}, "resources": {"limits": {"cpu": "2"}}}, CHART) == []


def test_unknown_key_reported_with_path_and_hint():
    [(path, reason)] = check_values({"image": {"tga": "1.0"}}, CHART)
    assert path == "image.tga"
    assert reason.startswith("unknown key 'tga'")
    assert "did you mean 'tag'" in reason and "repository, tag" in reason


def test_unknown_top_level_key():
    [(path, reason)] = check_values({"replica": 2}, CHART)
    assert path == "replica" and "did you mean 'replicas'" in reason


def test_free_form_maps_accepted():
    # nodeSelector defaults to {} and affinity to null: the chart takes any map there
    assert check_values({"nodeSelector": {"nvidia.com/gpu.present": "true"},
                         "affinity": {"nodeAffinity": {"x": 1}}}, CHART) == []


def test_lists_not_descended_and_null_deletes():
    assert check_values({"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}], "image": None}, CHART) == []


def test_declared_path_accepted():
    values = {"migManager": {"config": {"name": "custom", "data": {"config.yaml": "..."}}}}
    assert [p for p, _ in check_values(values, CHART)] == ["migManager.config.data"]
    assert check_values(values, CHART, frozenset({"migManager.config.data"})) == []


def test_declared_path_below_missing_parent():
    values = {"extra": {"inner": {"x": 1}, "other": 1}}
    problems = check_values(values, CHART, frozenset({"extra.inner"}))
    assert [p for p, _ in problems] == ["extra.other"]


def test_type_mismatch():
    problems = check_values({"replicas": {"min": 1}, "resources": "big", "tolerations": {"a": 1}}, CHART)
    assert ("replicas", "chart default is a scalar, we set a map") in problems
    assert ("resources", "chart default is a map, we set a scalar") in problems
    assert ("tolerations", "chart default is a list, we set a map") in problems
    # the fixture schema types replicas too, so that is reported a second time, by the schema
    assert ("replicas", "values.schema.json: expected integer, got object") in problems
    assert len(problems) == 4


def test_subchart_keys_checked_against_subchart_defaults():
    ok = {"sub": {"worker": {"enabled": False, "config": {"free": "form"}}, "fromParent": False, "global": {"x": 1}}}
    assert check_values(ok, CHART) == []
    [(path, reason)] = check_values({"sub": {"wroker": {}}}, CHART)
    assert path == "sub.wroker" and "did you mean 'worker'" in reason


def test_global_always_allowed():
    assert check_values({"global": {"imageRegistry": "r.example.com"}}, CHART) == []


def test_schema_violation_reported():
    problems = check_values({"replicas": 0}, CHART)
    assert problems == [("replicas", "values.schema.json: 0 is less than the minimum of 1")]


def test_schema_checks_merged_values():
    # the default tag "" is fine for the schema; a number is not
    assert check_values({"image": {"tag": 1.5}}, CHART) == [("image.tag", "values.schema.json: expected string, got number")]


def test_subchart_schema_checked():
    problems = check_values({"sub": {"logLevel": "loud"}}, CHART)
    assert [p for p, _ in problems] == ["sub.logLevel"]
    assert problems[0][1].startswith("values.schema.json:")


def test_coalesce_is_helm_like():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert coalesce(base, {"a": {"c": [3]}, "d": None}) == {"a": {"b": 1, "c": [3]}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}


def test_label_maps_are_free_form_even_with_an_example_default(tmp_path):
    # Fixture chart data (not an upstream chart): a nodeSelector default with one example label.
    (tmp_path / "values.yaml").write_text("operator:\n  nodeSelector:\n    kubernetes.io/os: linux\n  replicas: 1\n")
    assert check_values({"operator": {"nodeSelector": {"node-role.kubernetes.io/control-plane": ""}}}, tmp_path) == []
    assert check_values({"operator": {"replicaz": 2}}, tmp_path) == [
        ("operator.replicaz", "unknown key 'replicaz' (did you mean 'replicas'? chart default has: nodeSelector, replicas)")]

from __future__ import annotations

import pytest

from forge.validate.failure import Failure
from forge.validate.objects import load_yaml_stream, object_id, to_failures


def test_stream_skips_empty_docs_and_keeps_dates_and_equals_as_text():
    text = "---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  day: 2024-01-02\n  op: =\n---\n"
    docs = load_yaml_stream(text)
    assert len(docs) == 1
    assert docs[0]["data"] == {"day": "2024-01-02", "op": "="}


def test_stream_rejects_non_mapping():
    with pytest.raises(ValueError):
        load_yaml_stream("- a\n- b\n")


def test_object_id():
    assert object_id({"kind": "Deployment", "metadata": {"name": "w", "namespace": "n"}}) == "Deployment/n/w"
    assert object_id({"kind": "ClusterRole", "metadata": {"name": "r"}}) == "ClusterRole/r"


def test_to_failures():
    [f] = to_failures("c1", "gpu", "ClusterRole/r", [("rules", "bad")])
    assert f == Failure("c1", "gpu", "ClusterRole/r", "rules", "bad")
    assert f.line() == "c1 / gpu / ClusterRole/r / rules / bad"

"""`forge diff -o json` (issue 24, wall 6): kind forge.diff, version 1, the risks with their
severity and reason, each cluster's objects with their field changes; no Secret value."""
from __future__ import annotations

import json

from forge.diff import Report
from forge.diff.json_report import document
from forge.diff.objects import compare

from tests.helpers import forge


def test_diff_json_after_a_node_is_added(repo, kustomize):
    added = forge(repo, "node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05",
                  "--like", "h200-gpu-18")
    assert added.exit_code == 0, added.output
    result = forge(repo, "diff", "--base", "HEAD", "-o", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert (doc["kind"], doc["version"], doc["changed"]) == ("forge.diff", 1, True)
    assert doc["base"]["ref"] == "HEAD" and doc["head"] == {"label": "working tree"} and doc["stale"] == []
    capacity = [r for r in doc["risks"] if r["kind"] == "capacity"]
    assert capacity == [{"severity": "low", "cluster": "h200", "component": "inventory", "kind": "capacity",
                         "reason": "GPU nodes 18 -> 19, GPUs 144 -> 152, NVMe TB 230.4 -> 243.2"}]
    assert {r["severity"] for r in doc["risks"]} <= {"high", "medium", "low"}
    by_name = {c["cluster"]: c for c in doc["clusters"]}
    assert set(by_name) == {"a100", "h200", "h200-burst"}
    assert by_name["a100"] == {"cluster": "a100", "added": 0, "changed": 0, "removed": 0, "objects": []}
    h200 = by_name["h200"]
    assert h200["added"] == len([o for o in h200["objects"] if o["action"] == "added"]) >= 1
    assert doc["totals"] == {k: sum(c[k] for c in doc["clusters"]) for k in ("added", "changed", "removed")}
    rule = next(o for o in h200["objects"] if o["name"] == "forge-node-h200-gpu-19")
    assert (rule["component"], rule["action"], rule["kind"], rule["group"]) == (
        "node-feature-discovery", "added", "NodeFeatureRule", "nfd.k8s-sigs.io")
    assert rule["new"]["metadata"]["name"] == "forge-node-h200-gpu-19" and rule["fields"] == []
    values = next(o for o in h200["objects"] if o["kind"] == "HelmValues" and o["name"] == "prometheus")
    retention = next(f for f in values["fields"] if f["path"] == "prometheus.prometheusSpec.retentionSize")
    assert retention["op"] == "changed" and retention["sensitive"] is False and retention["old"] != retention["new"]
    assert doc["reach"] == [{"ring": "fleet", "clusters": ["h200"]}]


def test_a_secret_value_never_reaches_the_json():
    old = {("", "Secret", "ns", "s"): {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"},
                                       "stringData": {"password": "hunter2"}}}
    new = {("", "Secret", "ns", "s"): {**old[("", "Secret", "ns", "s")], "stringData": {"password": "swordfish", "user": "bob"}},
           ("", "Secret", "ns", "t"): {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t", "namespace": "ns"},
                                       "data": {"token": "c2VjcmV0"}}}
    from forge.diff.objects import Identity

    old = {Identity(*k): v for k, v in old.items()}
    new = {Identity(*k): v for k, v in new.items()}
    report = Report("HEAD", "HEAD (abc)", "working tree", ["c1"], compare("c1", "x", old, new))
    text = json.dumps(document(report))
    assert "hunter2" not in text and "swordfish" not in text and "c2VjcmV0" not in text and "bob" not in text
    objects = document(report)["clusters"][0]["objects"]
    changed = next(o for o in objects if o["action"] == "changed")
    assert {(f["path"], f["op"], f["sensitive"], f.get("old"), f.get("new")) for f in changed["fields"]} == {
        ("stringData.password", "changed", True, "<redacted>", "<redacted>"),
        ("stringData.user", "added", True, None, "<redacted>")}
    assert next(o for o in objects if o["action"] == "added")["new"]["data"] == {"token": "<redacted>"}


def test_json_goes_without_markdown(repo):
    result = forge(repo, "diff", "--base", "HEAD", "-o", "json", "--format", "markdown")
    assert result.exit_code == 2
    assert result.stderr == "error: -o json: goes without --format markdown (the JSON document is the whole output)\n"

"""The PR comment stays readable and under GitHub's size limit however large the change."""
from __future__ import annotations

from forge.diff import Report
from forge.diff.objects import Identity, ObjectChange, diff_object
from forge.diff.report import COMMENT_MARKER, MAX_COMMENT_CHARS, MAX_OBJECT_LINES, markdown, text


def config_map(name: str, lines: int, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "flyte"},
            "data": {f"key{i}": f"{value}-{i}" for i in range(lines)}}


def changed(name: str, lines: int) -> ObjectChange:
    old, new = config_map(name, lines, "old"), config_map(name, lines, "new")
    ident = Identity("", "ConfigMap", "flyte", name)
    return ObjectChange("h200", "flyte", ident, "changed", old, new, diff_object(ident, old, new))


def test_one_large_object_is_cut_with_a_count():
    report = Report("main", "main (abc)", "working tree", ["a100", "h200"], [changed("big", 100)])
    md = markdown(report)
    assert md.startswith(COMMENT_MARKER + "\n")
    body = md.split("```diff\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert len(body) == MAX_OBJECT_LINES + 1
    assert body[:3] == ["# data.key0", "- old-0", "+ new-0"]
    assert body[-1] == f"# ... {3 * 100 - MAX_OBJECT_LINES} more lines (run `forge diff` locally for all)"
    assert "| h200 | flyte | 0 | 1 | 0 |" in md
    assert "No change on: `a100`." in md


def test_many_objects_stop_at_the_comment_budget_and_say_how_many_are_left():
    changes = [changed(f"cm-{i:04d}", 30) for i in range(400)]
    report = Report("origin/main", "origin/main (abc)", "working tree", ["h200"], changes)
    md = markdown(report)
    assert len(md) <= MAX_COMMENT_CHARS
    shown = md.count("<details>")
    assert 0 < shown < 400
    assert md.rstrip().endswith(f"_{400 - shown} more objects not shown (the comment is capped at 60,000 characters): "
                                "run `forge diff --base origin/main` for the full diff._")
    assert "| h200 | flyte | 0 | 400 | 0 |" in md


def test_no_change():
    report = Report("HEAD", "HEAD (abc)", "working tree", ["a100", "h200"])
    assert "No Kubernetes object or Helm values change on any cluster (a100, h200)." in markdown(report)
    assert text(report) == "forge diff: HEAD (abc) -> working tree\n\nno changes\n\na100: no changes\n\nh200: no changes\n"


def test_multiline_text_is_shown_as_a_line_diff():
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"run.sh": "set -e\necho one\nexit 0\n"}}
    new = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"run.sh": "set -e\necho two\nexit 0\n"}}
    ident = Identity("", "ConfigMap", "", "s")
    report = Report("HEAD", "HEAD (abc)", "working tree", ["h200"],
                    [ObjectChange("h200", "x", ident, "changed", old, new, diff_object(ident, old, new))])
    assert '        data["run.sh"]:\n          @@ -1,3 +1,3 @@\n           set -e\n          -echo one\n          +echo two\n' in text(report)

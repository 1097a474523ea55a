"""The static scan of which values keys a chart's templates read (forge.upstream.reads), on small
inline templates written for these tests (not taken from any upstream chart)."""
from __future__ import annotations

from typing import Any

import pytest

from forge.upstream.chart import Chart, Dependency
from forge.upstream.reads import ReadScan, redundant_keys, unread_keys


def chart(templates: dict[str, str], values: dict[str, Any] | None = None, **kw: Any) -> Chart:
    return Chart("t", "1.0.0", kw.pop("type", "application"), values or {},
                 {f"templates/{n}": t for n, t in templates.items()}, {}, kw.pop("deps", []), kw.pop("subcharts", {}))


def unread(templates: dict[str, str], values: dict[str, Any], **kw: Any) -> list[str]:
    return [key for key, _ in unread_keys(chart(templates, **kw), values)]


@pytest.mark.parametrize("template, read, not_read", [
    # direct, through $, through a variable bound to the root context
    ("{{ .Values.a.b }}", ["a.b"], ["a.c"]),
    ("{{ $.Values.a.b }}", ["a.b"], ["a.c"]),
    ("{{- $root := . }}{{ $root.Values.a.b }}", ["a.b"], ["a.c"]),
    ("{{ index .Values \"a\" \"b\" }}", ["a.b"], ["a.c"]),
    ("{{ get .Values.a \"b\" }}", ["a.b"], ["a.c"]),
    ("{{ if hasKey .Values.a \"b\" }}x{{ end }}", ["a.b"], ["a.c"]),
    ("{{ dig \"a\" \"b\" \"\" .Values }}", ["a.b"], ["a.c"]),
    # a non-literal key: the whole map may be read
    ("{{ range $k := list \"b\" }}{{ index $.Values.a $k }}{{ end }}", ["a.b", "a.c"], ["z"]),
    # `with` rebinds the dot; `else` goes back to the outer one
    ("{{ with .Values.a }}{{ .b }}{{ else }}{{ .Values.z }}{{ end }}", ["a.b", "z"], ["a.c"]),
    # variables bound to values, also through `default`, also reassigned
    ("{{ $a := .Values.a | default dict }}{{ $a.b }}", ["a.b"], ["a.c"]),
    ("{{ $x := dict }}{{ if true }}{{ $x = .Values.a }}{{ end }}{{ $x.b }}", ["a.b"], ["a.c"]),
    # passed whole: toYaml, piped, through tpl, merge, via `with` and `.`
    ("{{ toYaml .Values.a }}", ["a.b", "a.c.d"], ["z"]),
    ("{{ .Values.a | toYaml | nindent 2 }}", ["a.b"], ["z"]),
    ("{{ tpl (toYaml .Values.a) . }}", ["a.b"], ["z"]),
    ("{{ with .Values.a }}{{ toYaml . }}{{ end }}", ["a.b"], ["z"]),
    ("{{ merge (dict) .Values.a | toJson }}", ["a.b"], ["z"]),
    # ranged over: the elements' fields are not followed, the whole is read
    ("{{ range .Values.a }}{{ .name }}{{ end }}", ["a.b"], ["z"]),
    ("{{ range $k, $v := .Values.a }}{{ $k }}{{ end }}", ["a.b"], ["z"]),
    # a scalar use reads the key, not what is below it
    ("{{ if .Values.a }}yes{{ end }}", [], ["a.b"]),
    ("{{ .Values.a.b | quote }}", ["a.b"], ["a.c"]),
    # `(expr).field`
    ("{{ (index .Values \"a\").b }}", ["a.b"], ["a.c"]),
    # comments and strings that look like code are not code
    ("{{/* .Values.z */}}{{ printf \"{{ .Values.y }}\" }}", [], ["z", "y"]),
])
def test_read_paths(template: str, read: list[str], not_read: list[str]):
    values: dict[str, Any] = {}
    for key in read + not_read:
        node = values
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = 1
    assert unread({"t.yaml": template}, values) == not_read


def test_helpers_are_followed_with_the_context_they_are_given():
    helpers = """
{{- define "t.image" -}}{{ .repository }}:{{ .tag }}{{- end }}
{{- define "t.name" -}}{{ .Values.nameOverride }}{{- end }}
{{- define "t.unused" -}}{{ .Values.never }}{{- end }}
{{- define "t.ctx" -}}{{ .root.Values.fromDict }} {{ .cfg.deep }}{{- end }}
"""
    main = """
image: {{ include "t.image" .Values.image }}
name: {{ include "t.name" . }}
{{ template "t.name" . }}
{{ include "t.ctx" (dict "root" $ "cfg" .Values.cfg) }}
{{ include "undefined.helper" .Values.passed }}
"""
    values = {"image": {"repository": "r", "tag": "1", "digest": "x"}, "nameOverride": "n", "never": 1,
              "fromDict": 1, "cfg": {"deep": 1, "other": 1}, "passed": {"deep": 1}}
    # a dict context keeps its fields; an undefined helper gets its argument whole
    assert unread({"_helpers.tpl": helpers, "main.yaml": main}, values) == ["image.digest", "never", "cfg.other"]


def test_notes_and_partials_are_not_rendered_output():
    c = chart({"NOTES.txt": "{{ .Values.a }}", "_x.tpl": "{{ .Values.b }}", "c.yaml": "{{ .Values.c }}"})
    c.templates.pop("templates/NOTES.txt")  # as load_chart leaves it out
    assert [k for k, _ in unread_keys(c, {"a": 1, "b": 1, "c": 1})] == ["a", "b"]


def test_subcharts_alias_condition_tags_and_globals():
    sub = chart({"s.yaml": "{{ .Values.port }} {{ .Values.global.domain }}"}, {"port": 1})
    lib = chart({"_lib.tpl": '{{- define "lib.x" -}}{{ .Values.libKey }}{{- end }}'}, type="library")
    top = chart({"t.yaml": '{{ include "lib.x" . }}'}, {"side": {"enabled": False}},
                deps=[Dependency("sub", "side", "side.enabled", ()), Dependency("other", None, None, ("extras",)),
                      Dependency("lib", None, None, ())],
                subcharts={"side": sub, "other": chart({"o.yaml": "{{ .Values.x }}"}), "lib": lib})
    values = {"side": {"enabled": True, "port": 2, "bogus": 1, "global": {"domain": "d2"}}, "global": {"domain": "d", "nope": 1},
              "tags": {"extras": False}, "other": {"x": 1}, "libKey": 1}
    scan = ReadScan(top, values)
    assert [k for k, _ in unread_keys(top, values)] == ["side.bogus", "global.nope", "other.x"]
    assert scan.why_unread(("other", "x")) == (
        "ignored: subchart t 1.0.0 ('other') is disabled (tags extras are false), Helm does not render it")
    # the condition switches the subchart off: its keys are not read, the condition itself is
    values["side"]["enabled"] = False
    assert [k for k, _ in unread_keys(top, values)] == [
        "side.port", "side.bogus", "side.global.domain", "global.domain", "global.nope", "other.x"]


def test_redundant_keys_compare_with_the_defaults_subcharts_included():
    sub = chart({}, {"port": 1, "list": [1, 2]})
    top = chart({}, {"a": {"b": True, "c": "x"}, "side": {"port": 5}}, deps=[Dependency("sub", "side", None, ())],
                subcharts={"side": sub})
    values = {"a": {"b": True, "c": "y"}, "side": {"port": 5, "list": [1, 2]}, "new": 1}
    assert redundant_keys(top, values) == [
        ("a.b", "redundant: true is already the chart's default"),
        ("side.port", "redundant: 5 is already the chart's default"),  # the parent's override of the subchart's 1
        ("side.list", "redundant: [1, 2] is already the chart's default"),
    ]
    assert redundant_keys(top, values, exempt=["a", "side.list"]) == [("side.port", "redundant: 5 is already the chart's default")]
    # 1 and true are not the same value for a chart
    assert redundant_keys(chart({}, {"x": 1}), {"x": True}) == []

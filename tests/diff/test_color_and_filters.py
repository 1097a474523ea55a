"""forge diff's colour (--color auto|always|never: removed red, added green, headings and hunks
cyan; the text format only) and its filters (--component, --kind; an unknown name is one line,
exit 2), issue 24 wall 9."""
from __future__ import annotations

import sys

import pytest

from forge.diff import Report
from forge.commands.diff import use_color
from forge.diff.narrow import narrow
from forge.diff.objects import Identity, compare
from forge.diff.report import text

from tests.helpers import forge

RED, GREEN, CYAN = "\x1b[31m", "\x1b[32m", "\x1b[36m"


def cm(name: str, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": data}


def report() -> Report:
    old = {Identity("", "ConfigMap", "ns", "a"): cm("a", {"k": "1", "gone": "x"}),
           Identity("", "ConfigMap", "ns", "b"): cm("b", {"conf": "one\ntwo\nthree\n"}),
           Identity("", "ConfigMap", "ns", "old"): cm("old", {})}
    new = {Identity("", "ConfigMap", "ns", "a"): cm("a", {"k": "2", "new": "y"}),
           Identity("", "ConfigMap", "ns", "b"): cm("b", {"conf": "one\n2\nthree\n"}),
           Identity("", "ConfigMap", "ns", "fresh"): cm("fresh", {})}
    changes = compare("c1", "loki", old, new)
    changes += compare("c1", "alloy", {}, {Identity("monitoring.coreos.com", "PrometheusRule", "ns", "r"): {"kind": "PrometheusRule"}})
    return Report("HEAD", "HEAD (abc)", "working tree", ["c1"], changes)


def test_text_in_colour():
    painted = text(report(), color=True)
    lines = painted.splitlines()
    assert f"{RED}    - ConfigMap ns/old" in painted and f"{GREEN}    + ConfigMap ns/fresh" in painted
    assert f"{CYAN}c1: 2 added, 2 changed, 1 removed" in painted and f"{CYAN}  loki" in painted
    assert any(line.startswith(f"{GREEN}        data.new: added y") for line in lines)
    assert any(line.startswith(f"{RED}        data.gone: removed (was x)") for line in lines)
    assert any(line.startswith(CYAN) and "@@" in line for line in lines)
    assert any(line.startswith(RED) and line.endswith("-two\x1b[0m") for line in lines)
    assert any(line.startswith(GREEN) and line.endswith("+2\x1b[0m") for line in lines)
    assert "    ~ ConfigMap ns/a\n" in painted and "        data.k: '1' -> '2'\n" in painted  # a change: no colour
    assert "\x1b[" not in text(report()) and text(report()) == text(report(), color=False)


def test_when_auto_colours(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto") and use_color("always") and not use_color("never")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto") and use_color("always")
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set and empty is as unset
    assert use_color("auto")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False, raising=False)
    monkeypatch.delenv("NO_COLOR")
    assert not use_color("auto")


def test_narrow_counts_what_it_leaves_out():
    r = narrow(report(), ("alloy",), ())
    assert [(c.component, c.ident.kind) for c in r.changes] == [("alloy", "PrometheusRule")]
    assert r.hidden_objects == 4 and r.filters == {"components": ["alloy"], "kinds": []}
    assert "note: only --component alloy: 4 objects of others not shown\n" in text(r)
    r = narrow(report(), (), ("ConfigMap",))
    assert {c.component for c in r.changes} == {"loki"} and r.hidden_objects == 1


def test_colour_and_filters_on_the_cli(repo, kustomize):
    added = forge(repo, "node", "add", "h200", "h200-gpu-19", "--profile", "sr680a-h200", "--rack", "h200-r05",
                  "--like", "h200-gpu-18")
    assert added.exit_code == 0, added.output
    always = forge(repo, "diff", "--base", "HEAD", "--color", "always")
    assert always.exit_code == 1 and f"{GREEN}    + NodeFeatureRule forge-node-h200-gpu-19" in always.stdout
    auto = forge(repo, "diff", "--base", "HEAD")  # the test's stdout is no terminal
    assert auto.exit_code == 1 and "\x1b[" not in auto.stdout
    assert auto.stdout == forge(repo, "diff", "--base", "HEAD", "--color", "never").stdout
    md = forge(repo, "diff", "--base", "HEAD", "--format", "markdown", "--color", "always")
    assert "\x1b[" not in md.stdout

    only = forge(repo, "diff", "--base", "HEAD", "--component", "prometheus", "--kind", "PrometheusRule")
    assert only.exit_code == 1, only.output
    objects = [line.strip() for line in only.stdout.splitlines() if line.startswith("    ") and line[4] in "+-~"]
    assert objects == ["~ PrometheusRule monitoring/forge-fleet (monitoring.coreos.com)"]
    assert "risks (" not in only.stdout  # the quota and capacity risks are kueue's and the inventory's
    assert "note: only --component prometheus; --kind PrometheusRule: " in only.stdout
    nfd = forge(repo, "diff", "--base", "HEAD", "--component", "node-feature-discovery")
    assert "+ NodeFeatureRule forge-node-h200-gpu-19" in nfd.stdout and "ResourceQuota" not in nfd.stdout


@pytest.mark.parametrize(("option", "value", "line"), [
    ("--component", "promethues", "error: --component promethues: no such component; did you mean prometheus? (components: alloy, "),
    ("--kind", "Prometheusrule", "error: --kind Prometheusrule: no such kind; did you mean PrometheusRule? (kinds: "),
])
def test_an_unknown_filter_is_one_line(repo, option, value, line):
    result = forge(repo, "diff", "--base", "HEAD", option, value)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(line), result.stderr

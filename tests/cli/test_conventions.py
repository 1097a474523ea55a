"""CLI conventions (issue 24, wall 7): --version, shell completion, the repo root found from a
subfolder, -o json with a versioned shape and --format github annotations on check and validate,
validate failures naming the rendered file and line and the source forge wrote the object from."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, forge

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
ENV.pop("FORGE_ROOT", None)
FORGE = [sys.executable, "-m", "forge.commands.main"]


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGE, *args], capture_output=True, text=True, env=env or ENV, timeout=300, cwd=cwd)


def test_version_is_the_package_s():
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M).group(1)
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout == f"forge {version}\n"


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F _forge_completion forge"),
                                               ("zsh", "#compdef forge"), ("fish", "complete --no-files --command forge")])
def test_completion_scripts(shell: str, marker: str):
    proc = run("completion", shell)
    assert proc.returncode == 0 and marker in proc.stdout and "_FORGE_COMPLETE" in proc.stdout


def test_the_bash_completion_answers_with_forge_s_commands():
    """What the script asks forge for when TAB is pressed after `forge ge`."""
    env = {**ENV, "COMP_WORDS": "forge ge", "COMP_CWORD": "1", "_FORGE_COMPLETE": "bash_complete"}
    proc = subprocess.run([*FORGE], capture_output=True, text=True, env=env, timeout=60)
    assert "plain,generate" in proc.stdout.splitlines()


def test_a_bad_shell_is_a_usage_error():
    proc = run("completion", "tcsh")
    assert proc.returncode == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in proc.stderr


def test_the_repo_root_is_found_from_a_subfolder(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    proc = run("check", cwd=repo_inputs / "clusters/h200")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "generated files are in step with the inventories\n"
    (repo_inputs / "overlays/h200/loki/values.yaml").write_text("# edited\n")
    proc = run("check", cwd=repo_inputs / "overlays/h200/loki")
    assert proc.returncode == 1 and "overlays/h200/loki/values.yaml (changed)" in proc.stderr


def test_check_json_and_github(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    ok = json.loads(forge(repo_inputs, "check", "-o", "json").stdout)
    assert ok == {"kind": "forge.check", "version": 1, "ok": True, "out_of_date": [], "changed_by_hand": []}
    values = repo_inputs / "overlays/a100/loki/values.yaml"
    values.write_text(values.read_text() + "# by hand\n")
    result = forge(repo_inputs, "check", "-o", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["out_of_date"] == [{"path": "overlays/a100/loki/values.yaml", "state": "changed"}]
    assert doc["changed_by_hand"][0]["path"] == "overlays/a100/loki/values.yaml"
    github = forge(repo_inputs, "check", "--format", "github")
    assert ("::error file=overlays/a100/loki/values.yaml,title=forge check::out of date (changed): run `make generate`"
            in github.stdout)


def test_validate_names_the_rendered_line_and_the_source(repo_inputs: Path, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    pod = repo_inputs / "clusters/h200/overrides/loki/pod.yaml"
    pod.parent.mkdir(parents=True)
    pod.write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: debug\n  namespace: loki\n"
                   "spec:\n  priorityClassName: system-cluster-critical\n  containers:\n    - name: c\n      image: busybox:latest\n")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    result = forge(repo_inputs, "validate", "-o", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["kind"] == "forge.validate" and doc["version"] == 1 and doc["ok"] is False
    latest = next(f for f in doc["failures"] if f["path"] == "spec.containers[0].image")
    rendered = (repo_inputs / latest["file"]).read_text().splitlines()
    assert latest["file"] == "build/rendered/h200/loki.yaml"
    assert rendered[latest["line"] - 1].strip().removeprefix("- ") == "image: busybox:latest"
    assert latest["source"] == "clusters/h200/overrides/loki/pod.yaml" and latest["source_line"] == 10

    text = forge(repo_inputs, "validate")
    assert (f"  at build/rendered/h200/loki.yaml:{latest['line']} (from clusters/h200/overrides/loki/pod.yaml:10)"
            in text.output)
    github = forge(repo_inputs, "validate", "--format", "github")
    assert ("::error file=clusters/h200/overrides/loki/pod.yaml,line=10,title=forge validate%3A h200 / loki::"
            "Pod/loki/debug / spec.containers[0].image / image 'busybox:latest' uses the 'latest' tag") in github.output


def test_validate_one_cluster(repo_inputs: Path, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    whole = json.loads(forge(repo_inputs, "validate", "-o", "json").stdout)["objects"]
    one = forge(repo_inputs, "validate", "--cluster", "a100", "-o", "json")
    assert one.exit_code == 0, one.output
    a100 = json.loads(one.stdout)["objects"]
    assert 0 < a100 < whole
    assert all(u["item"].startswith("a100 / ") for u in json.loads(one.stdout)["unchecked"])
    bad = forge(repo_inputs, "validate", "--cluster", "x100")
    assert bad.exit_code == 2 and "error: --cluster x100: no such cluster (clusters: a100, h200, h200-burst)" in bad.output
    # The other cluster's stored result stays: the whole fleet again replays both.
    again = forge(repo_inputs, "validate", "-o", "json")
    assert json.loads(again.stdout)["objects"] == whole

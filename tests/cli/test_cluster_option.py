"""--cluster on generate, render, validate and diff (issue 24, wall 7): one option, the same
unknown-cluster line everywhere; generate writes only the named clusters' folders and deletes
no other cluster's files, render and validate work on those clusters alone, diff reports them
alone."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import forge

UNKNOWN = "error: --cluster x100: no such cluster (clusters: a100, h200, h200-burst)"


def add_node(root: Path, cluster: str, name: str, like: str, rack: str, profile: str) -> None:
    result = forge(root, "node", "add", cluster, name, "--profile", profile, "--rack", rack, "--like", like, "--no-generate")
    assert result.exit_code == 0, result.output


def add_nodes(root: Path) -> None:
    add_node(root, "h200", "h200-gpu-19", "h200-gpu-18", "h200-r05", "sr680a-h200")
    add_node(root, "a100", "a100-gpu-11", "a100-gpu-10", "a100-r04", "as-4124go-a100")


@pytest.mark.parametrize("command", [("generate",), ("render",), ("validate",), ("diff", "--base", "HEAD")])
def test_an_unknown_cluster_is_one_line_naming_the_clusters(repo, command):
    result = forge(repo, *command, "--cluster", "h200", "--cluster", "x100")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [UNKNOWN], result.output


def test_two_unknown_clusters_on_one_line(repo_inputs):
    result = forge(repo_inputs, "generate", "--cluster", "x100", "--cluster", "y", "--cluster", "x100")
    assert result.exit_code == 2
    assert result.stderr == "error: --cluster x100, y: no such clusters (clusters: a100, h200, h200-burst)\n"


def test_generate_one_cluster_touches_no_other_cluster(repo_inputs):
    assert forge(repo_inputs, "generate").exit_code == 0
    add_nodes(repo_inputs)
    # A cluster whose inventory is gone: a whole generate deletes its folders, --cluster does not.
    # (h200 bursts into it: the link goes with it.)
    (repo_inputs / "clusters/h200-burst/inventory.yaml").unlink()
    h200 = repo_inputs / "clusters/h200/inventory.yaml"
    h200.write_text(h200.read_text().replace("    burst: {cluster: h200-burst}\n", "", 1))
    burst = sorted(p for p in (repo_inputs / "overlays/h200-burst").rglob("*") if p.is_file())
    a100_before = {p: p.read_bytes() for p in (repo_inputs / "overlays/a100").rglob("*") if p.is_file()}

    result = forge(repo_inputs, "generate", "--cluster", "h200")
    assert result.exit_code == 0, result.output
    assert "(--cluster h200: the others as they were)" in result.stdout
    assert (repo_inputs / "overlays/h200/node-feature-discovery/nodefeaturerule-forge-node-h200-gpu-19.yaml").is_file()
    assert not (repo_inputs / "overlays/a100/node-feature-discovery/nodefeaturerule-forge-node-a100-gpu-11.yaml").exists()
    assert {p: p.read_bytes() for p in (repo_inputs / "overlays/a100").rglob("*") if p.is_file()} == a100_before
    assert burst and all(p.is_file() for p in burst)
    assert (repo_inputs / "clusters/h200-burst/argocd/kustomization.yaml").is_file()

    check = forge(repo_inputs, "check", "-o", "json")
    stale = {e["path"].split("/")[1] for e in json.loads(check.stdout)["out_of_date"]}
    assert check.exit_code == 1 and stale == {"a100", "h200-burst"}
    assert forge(repo_inputs, "generate").exit_code == 0
    assert not (repo_inputs / "overlays/h200-burst").exists()
    assert forge(repo_inputs, "check").exit_code == 0


def test_render_and_validate_one_cluster(repo_inputs, kustomize, monkeypatch):
    monkeypatch.setenv("FORGE_UPSTREAM", "")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    a100 = repo_inputs / "build/rendered/a100/node-feature-discovery.yaml"
    before = a100.read_text()
    add_nodes(repo_inputs)
    # Only h200 is generated again: rendering h200 alone is not refused for a100's stale overlays.
    assert forge(repo_inputs, "generate", "--cluster", "h200").exit_code == 0
    assert "run `forge generate`" in forge(repo_inputs, "render").stderr
    result = forge(repo_inputs, "render", "--cluster", "h200")
    assert result.exit_code == 0, result.output
    assert [line.split(":")[0] for line in result.stdout.splitlines()[:-1]] == ["h200"]
    assert "h200-gpu-19" in (repo_inputs / "build/rendered/h200/node-feature-discovery.yaml").read_text()
    assert a100.read_text() == before and (repo_inputs / "build/rendered/h200-burst").is_dir()
    one = forge(repo_inputs, "validate", "--cluster", "h200", "-o", "json")
    assert one.exit_code == 0, one.output
    assert "run `forge generate`" in forge(repo_inputs, "validate", "--cluster", "a100").stderr
    # render --cluster kept the others' render state: a whole render renders only a100 again.
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    assert "a100-gpu-11" in a100.read_text()


def test_diff_one_cluster(repo, kustomize):
    add_nodes(repo)
    assert forge(repo, "generate").exit_code == 0
    whole = forge(repo, "diff", "--base", "HEAD")
    assert whole.exit_code == 1 and "\na100: " in whole.stdout and "\nh200: " in whole.stdout
    result = forge(repo, "diff", "--base", "HEAD", "--cluster", "a100")
    assert result.exit_code == 1, result.output
    assert "\na100: " in result.stdout and "h200" not in result.stdout
    assert "on 1 cluster\n" in result.stdout
    quiet = forge(repo, "diff", "--base", "HEAD", "--cluster", "h200-burst")
    assert quiet.exit_code == 0 and "h200-burst: no changes" in quiet.stdout and "a100" not in quiet.stdout


def test_generate_one_cluster_meets_the_fleet_rules_with_the_others_inventories_as_they_are(repo_inputs):
    """A node name moved from h200 (not generated again) to a100: the fleet-wide rules read h200's
    inventory as it is now, not the names its last generate recorded."""
    assert forge(repo_inputs, "generate").exit_code == 0
    h200 = repo_inputs / "clusters/h200/inventory.yaml"
    h200.write_text(h200.read_text().replace("name: h200-gpu-18\n", "name: h200-gpu-28\n"))
    add_node(repo_inputs, "a100", "h200-gpu-18", "a100-gpu-10", "a100-r04", "as-4124go-a100")
    result = forge(repo_inputs, "generate", "--cluster", "a100")
    assert result.exit_code == 0, result.output
    assert (repo_inputs / "overlays/a100/node-feature-discovery/nodefeaturerule-forge-node-h200-gpu-18.yaml").is_file()
    # ... and a name two clusters really share is refused as a whole generate refuses it.
    h200.write_text(h200.read_text().replace("name: h200-gpu-28\n", "name: h200-gpu-18\n"))
    clash = forge(repo_inputs, "generate", "--cluster", "a100")
    assert clash.exit_code == 2 and "h200-gpu-18" in clash.stderr and "internal" not in clash.stderr, clash.output


def test_bash_completes_cluster_names(repo_inputs):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators")),
           "COMP_WORDS": "forge render --cluster h2", "COMP_CWORD": "3", "_FORGE_COMPLETE": "bash_complete"}
    env.pop("FORGE_ROOT", None)
    proc = subprocess.run([sys.executable, "-m", "forge.commands.main"], capture_output=True, text=True, env=env, timeout=60,
                          cwd=repo_inputs / "clusters")
    assert proc.stdout.splitlines() == ["plain,h200", "plain,h200-burst"], proc.stderr

"""Per-cluster overrides (clusters/<c>/overrides/<component>/, forge.generate.overrides) and the hand changes
generate refuses instead of losing (forge.generate.handedits): issue 24's first wall. Real kustomize for
the render, the real upstream chart data for validate, a real git repo for `forge diff`."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from forge.diff import diff_against
from tests.generate.test_generate import snapshot
from tests.helpers import cli, forge, needs_upstream

VALUES = "loki:\n  limits_config:\n    retention_period: 336h\n"
MANIFEST = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loki-runbook\n  namespace: loki\n"
            "data:\n  url: https://runbooks.example/loki\n")
PATCH = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: loki\n  labels:\n    team: storage\n"


def put(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def with_overrides(root: Path) -> None:
    put(root, "clusters/h200/overrides/loki/values.yaml", VALUES)
    put(root, "clusters/h200/overrides/loki/runbook.yaml", MANIFEST)
    put(root, "clusters/h200/overrides/loki/patches/namespace.yaml", PATCH)


def test_overrides_are_merged_rendered_and_untouched(repo_inputs: Path, kustomize):
    with_overrides(repo_inputs)
    sources = snapshot(repo_inputs / "clusters/h200/overrides")
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 0, result.output
    values = (repo_inputs / "overlays/h200/loki/values.yaml").read_text()
    assert "# Values from clusters/h200/overrides/loki/values.yaml are merged last (forge.generate.overrides)." in values
    merged = yaml.safe_load(values)
    assert merged["loki"]["limits_config"]["retention_period"] == "336h"
    assert merged["loki"]["storage"], "the generated values are kept beside the override"
    kustomization = yaml.safe_load((repo_inputs / "overlays/h200/loki/kustomization.yaml").read_text())
    assert "overrides/runbook.yaml" in kustomization["resources"]
    assert kustomization["patches"] == [{"path": "overrides/patches/namespace.yaml"}]
    copy = (repo_inputs / "overlays/h200/loki/overrides/runbook.yaml").read_text()
    assert copy.startswith("# Copied by forge.overrides from clusters/h200/overrides/loki/runbook.yaml.")
    assert "a100" not in str(kustomization) and "overrides" not in (repo_inputs / "overlays/a100/loki/kustomization.yaml").read_text()

    assert forge(repo_inputs, "render").exit_code == 0
    rendered = list(yaml.safe_load_all((repo_inputs / "build/rendered/h200/loki.yaml").read_text()))
    namespace = next(o for o in rendered if o["kind"] == "Namespace")
    assert namespace["metadata"]["labels"]["team"] == "storage"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "the base's labels stay"
    configmap = next(o for o in rendered if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "loki-runbook")
    assert configmap["metadata"]["labels"]["forge.exa.ai/cluster"] == "h200"

    # Generate again, and check: the overrides are inputs, never written.
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "check").exit_code == 0
    assert snapshot(repo_inputs / "clusters/h200/overrides") == sources


def test_an_override_changes_the_cluster_s_generate_key(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, "clusters/h200/overrides/loki/values.yaml", VALUES)
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 0 and "1 built" in result.output
    assert "336h" in (repo_inputs / "overlays/h200/loki/values.yaml").read_text()


@needs_upstream
def test_override_values_are_validated_against_the_chart(repo_inputs: Path, kustomize, upstream: Path):
    put(repo_inputs, "clusters/h200/overrides/loki/values.yaml", "loki:\n  limts_config: {}\n")
    assert forge(repo_inputs, "generate").exit_code == 0
    assert forge(repo_inputs, "render").exit_code == 0
    result = forge(repo_inputs, "validate", "--upstream", str(upstream))
    assert result.exit_code == 1
    assert "overlays/h200/loki/values.yaml / loki.limts_config / unknown key 'limts_config' (did you mean 'limits_config'?" in result.output


def test_an_override_shows_in_forge_diff(repo, kustomize):
    with_overrides(repo)
    assert cli("generate", "--root", str(repo)).exit_code == 0
    report = diff_against(repo, "HEAD")
    changed = {(c.cluster, c.component, c.action, str(c.ident)) for c in report.changes}
    assert ("h200", "loki", "added", "ConfigMap loki/loki-runbook") in changed
    assert ("h200", "loki", "changed", "Namespace loki") in changed
    assert any(c.cluster == "h200" and c.component == "loki" and "Helm values" in str(c.ident) for c in report.changes)
    assert not report.for_cluster("a100")


@pytest.mark.parametrize(("rel", "text", "message"), [
    ("clusters/h200/overrides/lokki/values.yaml", VALUES,
     "clusters/h200/overrides/lokki: not a component folder: did you mean 'loki'? overrides go in clusters/h200/overrides/<component>/"),
    ("clusters/a100/overrides/network-operator/values.yaml", "x: 1\n",
     "clusters/a100/overrides/network-operator: network-operator is not enabled on cluster a100"),
    ("clusters/h200/overrides/loki/values.yaml", "- a\n- b\n",
     "clusters/h200/overrides/loki/values.yaml:1: <top>: Helm values are one YAML mapping"),
    ("clusters/h200/overrides/loki/values.yaml", "loki: [\n",
     "clusters/h200/overrides/loki/values.yaml:2: <yaml>:"),
    ("clusters/h200/overrides/loki/notes.txt", "hello\n",
     "clusters/h200/overrides/loki/notes.txt: not an override forge reads; allowed in clusters/h200/overrides/loki/: values.yaml"),
    ("clusters/h200/overrides/loki/runbook.yaml", "data: {}\n",
     "clusters/h200/overrides/loki/runbook.yaml:1: [0]: a manifest needs apiVersion, kind, metadata.name"),
    ("clusters/h200/overrides/loki/patches/ns.yaml", "kind: Namespace\n",
     "clusters/h200/overrides/loki/patches/ns.yaml:1: [0]: a patch needs apiVersion, metadata.name"),
    ("clusters/h200/overrides/scheduling/values.yaml", "x: 1\n",
     "clusters/h200/overrides/scheduling/values.yaml: scheduling installs no Helm chart"),
])
def test_bad_overrides_are_one_line_exit_2_and_nothing_written(repo_inputs: Path, rel: str, text: str, message: str):
    assert forge(repo_inputs, "generate").exit_code == 0
    put(repo_inputs, rel, text)
    before = snapshot(repo_inputs / "overlays")
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.output
    assert snapshot(repo_inputs / "overlays") == before


def test_hand_edits_and_dropped_files_are_refused_not_lost(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    values = repo_inputs / "overlays/h200/loki/values.yaml"
    values.write_text(values.read_text() + "extra: by-hand\n")
    dropped = put(repo_inputs, "overlays/h200/loki/configmap-mine.yaml", MANIFEST)
    bootstrap = repo_inputs / "clusters/h200/argocd/appproject-loki.yaml"
    bootstrap.write_text(bootstrap.read_text() + "# mine\n")
    # An inventory change too: the cluster must be regenerated, and that would lose them.
    inventory = repo_inputs / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("exa.ai/pool: training", "exa.ai/pool: research", 1))
    before = snapshot(repo_inputs)

    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2, result.output
    assert snapshot(repo_inputs) == before, "nothing was written"
    out = result.output
    assert ("error: overlays/h200/loki/values.yaml: edited by hand since generate wrote it (generate would overwrite it): "
            "Helm values go in clusters/h200/overrides/loki/values.yaml, merged last (docs/overrides.md)") in out
    assert ("error: overlays/h200/loki/configmap-mine.yaml: not written by forge (generate would delete it): an extra "
            "manifest goes in clusters/h200/overrides/loki/configmap-mine.yaml") in out
    assert ("error: clusters/h200/argocd/appproject-loki.yaml: edited by hand since generate wrote it (generate would overwrite "
            "it): the Argo CD bootstrap comes from clusters/h200/inventory.yaml and charts/versions.yaml") in out
    assert "3 files changed by hand in generated folders; nothing was written" in out

    check = forge(repo_inputs, "check")
    assert check.exit_code == 1
    assert "changed by hand: overlays/h200/loki/configmap-mine.yaml: not written by forge" in check.output

    # Moved where it belongs: generate goes through and the manifest comes back as an override.
    (repo_inputs / "clusters/h200/overrides/loki").mkdir(parents=True)
    dropped.rename(repo_inputs / "clusters/h200/overrides/loki/configmap-mine.yaml")
    result = forge(repo_inputs, "generate", "--discard-edits")
    assert result.exit_code == 0, result.output
    assert "extra: by-hand" not in values.read_text()
    assert (repo_inputs / "overlays/h200/loki/overrides/configmap-mine.yaml").is_file()
    assert forge(repo_inputs, "check").exit_code == 0


def test_a_tree_from_before_the_manifest_refuses_files_without_the_header(repo_inputs: Path):
    assert forge(repo_inputs, "generate").exit_code == 0
    (repo_inputs / "overlays/h200/generated.sha256").unlink()
    values = repo_inputs / "overlays/h200/loki/values.yaml"
    values.write_text(values.read_text() + "# a comment\n")  # with the header: cannot be told from generated
    put(repo_inputs, "overlays/h200/loki/mine.yaml", MANIFEST)
    inventory = repo_inputs / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("exa.ai/pool: training", "exa.ai/pool: research", 1))
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2
    assert "overlays/h200/loki/mine.yaml: not written by forge" in result.output
    assert "values.yaml" not in result.output

"""The incremental pipeline (forge.generate.incremental, forge.render.overlays, forge.validate.cached) never serves
stale output: each kind of input is changed in turn, and after the incremental generate, render
and validate the outputs are exactly those of a run from scratch (no cache), and only the
outputs that input affects have changed."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from forge.generate import cache
from forge.generate.incremental import cluster_keys
from forge.fleet import inventory_paths
from forge.render.batch import split

from tests.helpers import copy_repo_inputs, forge

OUTPUTS = ("overlays", "clusters", "build/rendered")


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for folder in OUTPUTS for p in (root / folder).rglob("*")
            if p.is_file() and p.name != "inventory.yaml"}


def pipeline(root: Path, *validate_args: str, generate: tuple[str, ...] = ("generate",)) -> str:
    for command in (generate, ("render",)):
        result = forge(root, *command)
        assert result.exit_code == 0, result.output
    result = forge(root, "validate", *validate_args)
    assert result.exit_code in (0, 1), result.output
    return result.output


def from_scratch(root: Path, tmp: Path, *validate_args: str) -> tuple[dict[str, bytes], str]:
    """The same inputs in a fresh folder, with no cache: what the incremental run must equal."""
    fresh = tmp / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".cache", "build", "overlays", "argocd"))
    output = pipeline(fresh, *validate_args)
    return snapshot(fresh), _report(output)


def _report(output: str) -> str:
    """The validate output without its timings."""
    return "\n".join(re.sub(r" in [0-9.]+s \([0-9,]+ objects/s\)", "", line) for line in output.splitlines()
                     if not line.startswith("validate:"))


def changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {k for k in set(before) | set(after) if before.get(k) != after.get(k)}


@pytest.fixture
def built(tmp_path: Path, kustomize) -> Path:
    root = copy_repo_inputs(tmp_path / "repo")
    pipeline(root)
    return root


def check_step(root: Path, tmp: Path, *validate_args: str, generate: tuple[str, ...] = ("generate",)) -> tuple[set[str], str]:
    before = snapshot(root)
    output = _report(pipeline(root, *validate_args, generate=generate))
    after = snapshot(root)
    expected, expected_output = from_scratch(root, tmp, *validate_args)
    assert after == expected, sorted(changed(after, expected))
    assert output == expected_output
    return changed(before, after), output


def test_each_input_kind_changes_exactly_its_outputs(built: Path, tmp_path: Path):
    root = built
    # Nothing changed: nothing is rewritten.
    assert check_step(root, tmp_path)[0] == set()

    # The inventory: one node's MIG layout on h200 changes h200's outputs only.
    inventory = root / "clusters/h200/inventory.yaml"
    inventory.write_text(inventory.read_text().replace("    mig_layout: all-1g\n", "", 1))
    touched, _ = check_step(root, tmp_path)
    assert touched and all("h200" in path for path in touched), sorted(touched)
    assert "build/rendered/h200/node-feature-discovery.yaml" in touched

    # base/: a label on one component's Namespace changes that component's render on every cluster.
    namespace = next((root / "base/loki").glob("namespace*.yaml"))
    namespace.write_text(namespace.read_text().replace("labels:\n", "labels:\n    forge.exa.ai/test: base-change\n", 1))
    touched, _ = check_step(root, tmp_path)
    assert touched == {"build/rendered/a100/loki.yaml", "build/rendered/h200/loki.yaml", "build/rendered/h200-burst/loki.yaml"}

    # The versions file: a chart bump changes that chart's Application on every cluster.
    versions = root / "charts/versions.yaml"
    versions.write_text(versions.read_text().replace("1.7.0", "1.7.1"))  # the chart and its image
    touched, _ = check_step(root, tmp_path)
    assert {"clusters/a100/argocd/apps/application-kuberay-operator.yaml", "build/rendered/h200/argocd.yaml"} <= touched
    # (overlays/<c>/generated.sha256 lists the bootstrap's files too: it changes with them)
    assert not any(path.startswith("overlays/") and not path.endswith("/generated.sha256") for path in touched)

    # A generated file edited by hand is refused (forge.generate.handedits); told to, generate puts it back,
    # as render does a rendered file.
    for path in ("overlays/a100/loki/values.yaml", "build/rendered/a100/loki.yaml"):
        (root / path).write_text("edited by hand\n")
    refused = forge(root, "generate")
    assert refused.exit_code == 2 and "overlays/a100/loki/values.yaml: edited by hand" in refused.output
    assert check_step(root, tmp_path, generate=("generate", "--discard-edits"))[0] == {
        "overlays/a100/loki/values.yaml", "build/rendered/a100/loki.yaml"}


def test_upstream_data_change_is_validated_again(built: Path, tmp_path: Path, upstream: Path):
    data = tmp_path / "upstream"
    shutil.copytree(upstream, data)
    _, output = check_step(built, tmp_path, "--upstream", str(data))
    assert "0 failures" in output
    # Without a chart's CRDs its custom resources have nothing to be checked against: a cache
    # keyed without the upstream data would still say 0 failures.
    crds = sorted(data.glob("kube-prometheus-stack-*/crds"))
    assert crds
    shutil.rmtree(crds[0])
    _, output = check_step(built, tmp_path, "--upstream", str(data))
    assert "0 failures" not in output and "no CRD for monitoring.coreos.com" in output


def test_code_and_tools_are_in_the_keys(built: Path, tmp_path: Path, monkeypatch):
    paths = inventory_paths(built)
    before = cluster_keys(built, paths)
    package = tmp_path / "package"
    shutil.copytree(cache.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "PACKAGE_DIR", package)
    assert cluster_keys(built, paths) == before  # the same code, elsewhere
    catalogue = package / "facts/catalogue/hardware.yaml"
    catalogue.write_text(catalogue.read_text() + "\n# an edit\n")
    assert cluster_keys(built, paths).keys() == before.keys()
    assert all(cluster_keys(built, paths)[name] != before[name] for name in before)

    # Another kustomize: everything is rendered again (the same output here).
    state = (built / "build/.rendered.state.json").read_text()
    wrapper = tmp_path / "kustomize"
    command = " ".join(__import__("forge.tools", fromlist=["x"]).kustomize_build_command(built))
    wrapper.write_text(f"#!/bin/sh\nshift\nexec {command} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("FORGE_KUSTOMIZE", str(wrapper))
    assert forge(built, "render").exit_code == 0
    assert (built / "build/.rendered.state.json").read_text() != state


def test_split_refuses_a_document_without_its_marker():
    text = "a: 1\nmetadata:\n  annotations:\n    forge.exa.ai/render-overlay: one\n---\nb: 2\n"
    assert split(text, ["one"]) is None
    assert split(text.replace("b: 2\n", "b: 2\nmetadata:\n  annotations:\n    forge.exa.ai/render-overlay: two\n"),
                 ["one", "two"]) == {"one": "a: 1\nmetadata:\n", "two": "b: 2\nmetadata:\n"}

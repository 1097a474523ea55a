"""A forge repo whose only component renders the `widget` test chart (tests/upstream/charts, a test
fixture standing in for an upstream chart), and a local mirror holding that chart packaged.

Real helm and kustomize run; nothing is mocked. The component registry is narrowed to the
test component so the real components' upstream charts (not available offline) are not needed.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from forge.components.base import WAVE_WORKLOADS, WORKLOAD_KINDS, Component, Expected, kinds
from forge.tools import helm_command
from tests.helpers import REPO, copy_repo_inputs, forge

CHARTS = Path(__file__).parent / "charts"

GOOD_VALUES: dict[str, Any] = {
    "replicas": 2,
    "image": {"repository": "registry.example.com/team/widget", "tag": "1.2.4"},
    "resources": {"limits": {"cpu": "1"}},
    "podLabels": {"team": "ml"},
    "config": {"anything": {"deep": 1}},
    "feature": {"enabled": True, "port": 9090},
    "widget": {"size": 3, "mode": "fast", "extra": {"tier": "gold"}},
    "sidekick": {"enabled": True, "port": 9100},
    "global": {"domain": "example.com"},
    "priorityClassName": "system-cluster-critical",
}


class Widget(Component):
    """A test component rendering the widget fixture chart, on cluster a100 only."""

    name = "widget"
    namespace = "widget"
    sync_wave = WAVE_WORKLOADS
    chart = "widget"
    release_name = "wdg"
    # Its chart ships a CRD that values cannot annotate: never pruned automatically, like the real
    # operators (forge.validate.cluster_policies).
    prune = False
    # What the widget chart renders (its templates, crds/ and the sidecar subchart), for its AppProject's
    # whitelists (forge.argocd_projects): Argo CD would refuse any other kind.
    cluster_kinds = kinds("apiextensions.k8s.io", "CustomResourceDefinition")
    namespaced_kinds = (*WORKLOAD_KINDS, ("policy", "PodDisruptionBudget"), ("example.com", "Widget"))
    VALUES: dict[str, Any] = GOOD_VALUES

    def enabled(self, cluster) -> bool:
        return cluster.name == "a100"

    def values(self, cluster) -> dict[str, Any]:
        return self.VALUES

    def expected_in_hydrated(self, cluster) -> list[Expected]:
        widget = self.VALUES["widget"]
        return [Expected("Widget", "main", "spec.size", widget["size"]),
                Expected("Widget", "main", "spec.mode", widget["mode"])]


def set_values(repo: Path, values: dict[str, Any]) -> None:
    Widget.VALUES = values
    result = forge(repo, "generate")
    assert result.exit_code == 0, result.output


@pytest.fixture
def widget_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FORGE_CHART_CACHE", raising=False)
    monkeypatch.setattr("forge.fleet.COMPONENTS", (Widget(),))
    monkeypatch.setattr(Widget, "VALUES", GOOD_VALUES)
    repo = copy_repo_inputs(tmp_path / "repo")
    for inventory in (repo / "clusters").glob("*/inventory.yaml"):
        # Only the widget component runs here: settings for the real ones would be stale config.
        inventory.write_text(inventory.read_text().partition("\ncomponents:\n")[0] + "\n")
    base = repo / "base" / "widget"
    base.mkdir()
    (base / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n")
    (base / "namespace.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: widget\n  labels:\n"
        # baseline: the fixture chart's pod sets no securityContext (restricted is tested to fail)
        "    pod-security.kubernetes.io/enforce: baseline\n")
    with open(repo / "charts/versions.yaml", "a") as f:
        # The test chart's pin. The repo URL is never contacted by these tests (port 9 discards).
        f.write("  widget:\n    repo: http://127.0.0.1:9/charts\n    chart: widget\n    version: 1.2.3\n")
    set_values(repo, GOOD_VALUES)
    return repo


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    """A local chart mirror with the widget chart packaged by the real `helm package`."""
    out = tmp_path / "mirror"
    out.mkdir()
    package(CHARTS / "widget", out)
    return out


def package(chart: Path, dest: Path) -> Path:
    proc = subprocess.run([*helm_command(REPO), "package", str(chart), "--destination", str(dest)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return next(dest.glob("*.tgz"))


def copy_chart(dest: Path, **chart_yaml_edits: str) -> Path:
    """The widget chart unpacked into dest/widget, with Chart.yaml fields replaced."""
    target = dest / "widget"
    shutil.copytree(CHARTS / "widget", target)
    text = (target / "Chart.yaml").read_text()
    for field, value in chart_yaml_edits.items():
        text = "\n".join(f"{field}: {value}" if line.startswith(f"{field}:") else line for line in text.splitlines()) + "\n"
    (target / "Chart.yaml").write_text(text)
    return target

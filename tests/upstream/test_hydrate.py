"""forge hydrate renders each component with the real helm from the chart cache, with the inputs
of its Argo CD Application, then the overlay with the real kustomize; all or nothing.
The widget chart is a test fixture (tests/upstream/charts/README.md), not an upstream chart."""
from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from forge.tools import helm_command
from forge.upstream.hydrate import crd_api_versions, load_hydrated
from tests.helpers import REPO, forge
from tests.upstream.conftest import GOOD_VALUES, set_values


def objects(path: Path) -> dict[str, dict]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in yaml.safe_load_all(path.read_text()) if o}


def test_missing_chart_names_chart_version_and_command_and_writes_nothing(widget_repo: Path):
    previous = widget_repo / "build/hydrated/a100/old.yaml"
    previous.parent.mkdir(parents=True)
    previous.write_text("# from an earlier run\n")
    result = forge(widget_repo, "hydrate")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: chart widget 1.2.3 ('widget' in charts/versions.yaml) is not in the chart cache "
        f"{widget_repo / '.cache/charts'}: run `forge charts pull widget` "
        f"(without network: `forge charts pull --from <mirror> widget`)",
        "error: nothing was hydrated",
    ]
    assert [p.name for p in (widget_repo / "build/hydrated/a100").iterdir()] == ["old.yaml"]


def test_hydrate_renders_what_argocd_renders(widget_repo: Path, mirror: Path):
    assert forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    result = forge(widget_repo, "hydrate")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "a100: 7 objects (widget 7)"
    out = widget_repo / "build/hydrated"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.yaml")) == ["a100/widget.yaml"]  # h200: not enabled

    text = (out / "a100/widget.yaml").read_text()
    header = text.splitlines()[:3]
    assert header[0] == "# Hydrated by `forge hydrate`: what Argo CD renders for Application a100-widget. Do not edit."
    assert header[1].startswith("# helm template wdg widget 1.2.3 (http://127.0.0.1:9/charts) --namespace widget "
                                "--kube-version 1.34 --include-crds -f overlays/a100/widget/values.yaml --api-versions (")
    assert header[2] == "# + kustomize build overlays/a100/widget"

    objs = objects(out / "a100/widget.yaml")
    assert sorted(objs) == ["ConfigMap/wdg-config", "CustomResourceDefinition/widgets.example.com", "Deployment/wdg-widget",
                            "Namespace/widget", "PodDisruptionBudget/wdg-widget", "Service/wdg-sidecar", "Widget/main"]
    # release name and namespace from the component, as in its Application
    app = yaml.safe_load((widget_repo / "clusters/a100/argocd/application-widget.yaml").read_text())
    assert app["spec"]["sources"][0]["helm"]["releaseName"] == "wdg" and app["spec"]["destination"]["namespace"] == "widget"
    assert objs["Deployment/wdg-widget"]["metadata"]["namespace"] == "widget"
    # the custom resource is guarded by `.Capabilities.APIVersions.Has "example.com/v1/Widget"`: the
    # chart's own CRD makes the cluster serve it, so the second pass renders it
    assert objs["Widget/main"]["spec"] == {"size": 3, "mode": "fast", "tier": "gold"}
    # built-in kinds are passed as group/version/Kind too, as Argo CD does (helm alone lists none)
    assert objs["PodDisruptionBudget/wdg-widget"]["spec"]["maxUnavailable"] == 1
    # our values reached the subchart under its alias, and the global
    assert objs["Service/wdg-sidecar"]["spec"]["ports"] == [{"port": 9100}]
    assert objs["Service/wdg-sidecar"]["metadata"]["annotations"] == {"example.com/domain": "example.com"}
    # the overlay's objects follow, with forge's labels (the chart's do not get them)
    assert objs["Namespace/widget"]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "forge"
    assert "labels" not in objs["ConfigMap/wdg-config"]["metadata"]

    # The chart part is exactly what helm template gives with those inputs.
    chart = widget_repo / ".cache/charts/widget-1.2.3/chart"
    api = sorted({"example.com/v1", "example.com/v1/Widget", "policy/v1/PodDisruptionBudget"})
    direct = subprocess.run([*helm_command(REPO), "template", "wdg", str(chart), "--namespace", "widget", "--kube-version", "1.34",
                             "--include-crds", "-f", str(widget_repo / "overlays/a100/widget/values.yaml"),
                             *[a for v in api for a in ("--api-versions", v)]], capture_output=True, text=True, check=True).stdout
    assert direct.rstrip("\n") + "\n---\n" in text


def test_a_render_error_leaves_the_previous_output_whole(widget_repo: Path, mirror: Path):
    assert forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    assert forge(widget_repo, "hydrate").exit_code == 0
    before = (widget_repo / "build/hydrated/a100/widget.yaml").read_text()
    set_values(widget_repo, {**GOOD_VALUES, "replicas": 11})
    result = forge(widget_repo, "hydrate")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: a100/widget: helm template widget 1.2.3 failed: Error: execution error at "
                                    "(widget/templates/deployment.yaml:3:4): replicas must be at most 10")
    assert result.stderr.rstrip().endswith("; nothing was hydrated")
    assert (widget_repo / "build/hydrated/a100/widget.yaml").read_text() == before
    assert sorted(p.name for p in (widget_repo / "build").iterdir()) == ["hydrated"]  # no staging left


def test_crd_api_versions_lists_served_versions_and_kinds():
    text = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  versions:
    - {name: v1, served: true, storage: true}
    - {name: v1beta1, served: false, storage: false}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: mentions-CustomResourceDefinition}
"""
    assert crd_api_versions(text) == {"example.com/v1", "example.com/v1/Thing"}


def test_load_hydrated_gives_the_line_each_object_starts_on(tmp_path: Path):
    path = tmp_path / "x.yaml"
    path.write_text("# header\n---\n# Source: a\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")
    assert [(o["metadata"]["name"], line) for o, line in load_hydrated(path)] == [("a", 4), ("b", 8)]

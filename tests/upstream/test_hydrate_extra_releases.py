"""A component with more than one release of its chart (Component.extra_releases: Alluxio's worker
pools) is hydrated as Argo CD renders its Application: one `helm template` per chart source, each
with its own release name and values file, the extra ones without the chart's CRDs."""
from __future__ import annotations

from pathlib import Path

import yaml

from forge.components.base import extra_values_file
from tests.helpers import forge
from tests.upstream.conftest import GOOD_VALUES, Widget

EXTRA = {**GOOD_VALUES, "replicas": 3, "config": {"pool": "second"}}


class PooledWidget(Widget):
    def extra_releases(self, cluster) -> dict:
        return {"wdg-pool": EXTRA}


def test_each_chart_source_is_rendered_with_its_release_and_values(widget_repo: Path, mirror: Path, monkeypatch):
    monkeypatch.setattr("forge.fleet.COMPONENTS", (PooledWidget(),))
    assert forge(widget_repo, "generate").exit_code == 0
    values = widget_repo / "overlays/a100/widget" / extra_values_file("wdg-pool")
    assert yaml.safe_load(values.read_text()) == EXTRA
    app = yaml.safe_load((widget_repo / "clusters/a100/argocd/apps/application-widget.yaml").read_text())
    charts = [s["helm"] for s in app["spec"]["sources"] if "chart" in s]
    assert charts == [{"releaseName": "wdg", "valueFiles": ["$values/overlays/a100/widget/values.yaml"]},
                      {"releaseName": "wdg-pool", "valueFiles": ["$values/overlays/a100/widget/values-wdg-pool.yaml"],
                       "skipCrds": True}]

    assert forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    result = forge(widget_repo, "hydrate")
    assert result.exit_code == 0, result.output
    text = (widget_repo / "build/hydrated/a100/widget.yaml").read_text()
    assert text.splitlines()[2] == ("# + helm template wdg-pool (same chart and options, without its CRDs) "
                                    "-f overlays/a100/widget/values-wdg-pool.yaml")
    objs = [o for o in yaml.safe_load_all(text) if o]
    names = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objs)
    assert names == ["ConfigMap/wdg-config", "ConfigMap/wdg-pool-config", "CustomResourceDefinition/widgets.example.com",
                     "Deployment/wdg-pool-widget", "Deployment/wdg-widget", "Namespace/widget",
                     # the namespace's own NetworkPolicies (deny, same namespace), from the overlay
                     "NetworkPolicy/allow-same-namespace", "NetworkPolicy/default-deny-ingress",
                     "PodDisruptionBudget/wdg-pool-widget", "PodDisruptionBudget/wdg-widget", "Service/wdg-pool-sidecar",
                     "Service/wdg-sidecar", "Widget/main", "Widget/main"]
    by_name = {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}
    assert yaml.safe_load(by_name["ConfigMap/wdg-pool-config"]["data"]["config.yaml"]) == {"pool": "second"}
    assert by_name["Deployment/wdg-pool-widget"]["spec"]["replicas"] == 3
    assert by_name["Deployment/wdg-widget"]["spec"]["replicas"] == 2


def test_validate_hydrated_checks_the_values_of_every_release(widget_repo: Path, mirror: Path, monkeypatch):
    class Careless(PooledWidget):
        def extra_releases(self, cluster) -> dict:
            return {"wdg-pool": {**EXTRA, "notesOnly": "read by no template"}}

    monkeypatch.setattr("forge.fleet.COMPONENTS", (Careless(),))
    assert forge(widget_repo, "generate").exit_code == 0
    assert forge(widget_repo, "charts", "pull", "--from", str(mirror), "widget").exit_code == 0
    assert forge(widget_repo, "hydrate").exit_code == 0
    result = forge(widget_repo, "validate", "--hydrated")
    assert result.exit_code == 1
    vf = "overlays/a100/widget/values-wdg-pool.yaml"
    line = next(i for i, text in enumerate((widget_repo / vf).read_text().splitlines(), 1) if text.startswith("notesOnly:"))
    assert result.stderr.splitlines() == [
        f"FAIL a100 / widget / {vf}:{line} / notesOnly / ignored: no template of widget 1.2.3 or its subcharts reads it"]

"""`forge charts bump` end to end (issue 24, wall 2). Charts cannot be downloaded here, so the new
chart is a fixture: kuberay-operator 1.7.1 made from the upstream data of 1.7.0 (its values with
the image tag moved and one key added, its CRDs but one) and packaged by the real `helm package`,
as `helm pull` would have left it. Render uses the real kustomize, validate the written data."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, forge


def helm() -> str:
    found = shutil.which("helm", path=str(REPO / "tools/bin")) or shutil.which("helm")
    if not found:
        pytest.skip("needs helm (make setup puts it in tools/bin)")
    return found


def fixture_chart(tmp: Path, upstream: Path) -> Path:
    old = upstream / "kuberay-operator-1.7.0"
    chart = tmp / "src/kuberay-operator"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: kuberay-operator\nversion: 1.7.1\nappVersion: v1.7.1\n")
    values = (old / "values.yaml").read_text().replace("tag: v1.7.0", "tag: v1.7.1", 1)
    (chart / "values.yaml").write_text(values + "\nfixtureFeature:\n  enabled: false\n")
    shutil.copytree(old / "crds", chart / "crds", ignore=shutil.ignore_patterns("raycronjobs*"))
    (chart / "templates/configmap.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    subprocess.run([helm(), "package", str(chart), "--destination", str(tmp)], check=True, capture_output=True)
    return tmp / "kuberay-operator-1.7.1.tgz"


def writable_upstream(tmp: Path, upstream: Path) -> Path:
    """The shared data is read-only: a folder of links to it, the bump writes beside them."""
    mine = tmp / "upstream"
    mine.mkdir()
    for folder in upstream.iterdir():
        (mine / folder.name).symlink_to(folder)
    return mine


def test_a_chart_bump_end_to_end(repo_inputs: Path, tmp_path: Path, upstream: Path, kustomize):
    package = fixture_chart(tmp_path, upstream)
    data = writable_upstream(tmp_path, upstream)
    assert forge(repo_inputs, "generate").exit_code == 0

    result = forge(repo_inputs, "charts", "bump", "kuberay-operator", "1.7.1", "--chart", str(package), "--upstream", str(data))
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"wrote {data}/kuberay-operator-1.7.1" in out
    assert "  charts/versions.yaml: charts.kuberay-operator.version 1.7.0 -> 1.7.1" in out
    assert "  default added: fixtureFeature.enabled = False" in out
    assert "  default changed: image.tag: 'v1.7.0' -> 'v1.7.1'" in out
    assert "  CRD removed: raycronjobs.ray.io" in out
    assert "`forge diff --base HEAD` shows what changed in forge's output" in out

    written = data / "kuberay-operator-1.7.1"
    assert sorted(p.relative_to(written).as_posix() for p in written.rglob("*") if p.is_file()) == [
        "crds/rayclusters.ray.io.yaml", "crds/rayjobs.ray.io.yaml", "crds/rayservices.ray.io.yaml", "values.yaml"]
    assert yaml.safe_load((written / "crds/rayjobs.ray.io.yaml").read_text())["metadata"]["name"] == "rayjobs.ray.io"
    versions = yaml.safe_load((repo_inputs / "charts/versions.yaml").read_text())
    assert versions["charts"]["kuberay-operator"]["version"] == "1.7.1"
    assert versions["images"]["kuberay-operator"]["tag"] == "v1.7.1"  # the image released with the chart
    app = yaml.safe_load((repo_inputs / "clusters/h200/argocd/apps/application-kuberay-operator.yaml").read_text())
    assert app["spec"]["sources"][0]["targetRevision"] == "1.7.1"

    assert forge(repo_inputs, "render").exit_code == 0
    validated = forge(repo_inputs, "validate", "--upstream", str(data))
    assert validated.exit_code == 0, validated.output
    assert "0 failures, 0 unchecked" in validated.output


def test_a_bump_with_the_wrong_chart_or_an_unknown_key_is_one_line(repo_inputs: Path, tmp_path: Path, upstream: Path):
    package = fixture_chart(tmp_path, upstream)
    data = writable_upstream(tmp_path, upstream)
    before = (repo_inputs / "charts/versions.yaml").read_text()
    result = forge(repo_inputs, "charts", "bump", "kuberay-operator", "1.7.2", "--chart", str(package), "--upstream", str(data))
    assert result.exit_code == 2 and result.output.strip().splitlines() == [
        f"error: --chart {package}: Chart.yaml says kuberay-operator 1.7.1, expected chart kuberay-operator version 1.7.2: "
        "pull that version (`helm pull REPO/kuberay-operator --version 1.7.2`)"]
    result = forge(repo_inputs, "charts", "bump", "kuberay", "1.7.1", "--chart", str(package), "--upstream", str(data))
    assert result.exit_code == 2 and "charts bump kuberay: no such chart in charts/versions.yaml" in result.output
    assert (repo_inputs / "charts/versions.yaml").read_text() == before
    assert not (data / "kuberay-operator-1.7.2").exists()

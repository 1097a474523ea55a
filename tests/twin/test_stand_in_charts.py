"""The stand-ins `forge twin argocd` serves for the upstream charts and Git sources (no box needed):
built from the upstream data for a100 and h200, served on 127.0.0.1, pulled and rendered by the
real helm with forge's own values files, so each values file passes the chart's real values
schema; a key the schema forbids fails naming the key. The Applications' repoURLs, rewritten for
the box, name only what is served."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from forge.errors import ForgeError
from forge.fleet import load_fleet
from forge.tools import helm_command
from forge.twin.argocd import served as git_served
from forge.twin.argocd import stand_ins
from forge.twin.processes import stop_all
from tests.helpers import REPO, kustomize_or_skip

FORGE_REPO = "https://github.com/exa-labs/forge.git"
CLUSTERS = ("a100", "h200")
KIND = re.compile(r"^kind: (\S+)$", re.M)  # top-level kinds (PyYAML is slow on megabytes of CRDs)


@pytest.fixture(scope="module", params=CLUSTERS)
def box_charts(request, tmp_path_factory, upstream):
    """(cluster, what is served, chart server's port, work folder) with the server running."""
    cluster = request.param
    plan = {p.name: p for p in load_fleet(REPO)}[cluster]
    work = tmp_path_factory.mktemp(f"stand-ins-{cluster}")
    served = stand_ins.sources(REPO, cluster, FORGE_REPO)
    site = stand_ins.build_charts(REPO, plan, upstream, served, work)
    proc, served.port = stand_ins.serve(site, work / "logs")
    try:
        yield cluster, served, work
    finally:
        stop_all([proc])


def _helm(work: Path, *args: str) -> subprocess.CompletedProcess:
    home = work / "test-helm"
    env = {**os.environ, "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
           "HELM_DATA_HOME": str(home / "data")}
    return subprocess.run([*helm_command(REPO), *args], capture_output=True, text=True, timeout=300, env=env)


def _pull(served: stand_ins.Served, source: stand_ins.ChartSource, work: Path) -> Path:
    """The stand-in as Argo CD's repo server fetches it after the box's rewrite (helm pull)."""
    dest = work / "pulled" / source.folder().replace("/", "_")
    dest.mkdir(parents=True, exist_ok=True)
    url = source.local_url(served.port)
    if source.oci:
        done = _helm(work, "pull", f"oci://{url}/{source.chart}", "--version", source.version, "--plain-http",
                     "--destination", str(dest))
    else:
        done = _helm(work, "pull", source.chart, "--repo", url, "--version", source.version, "--destination", str(dest))
    assert done.returncode == 0, f"helm pull {source.chart} {source.version} from {url}: {done.stderr}"
    return dest / f"{source.chart}-{source.version}.tgz"


def _template(work: Path, package: Path, release: stand_ins.Release, value_files: list[Path]) -> subprocess.CompletedProcess:
    args = ["template", release.name, str(package), "--namespace", release.namespace, "--include-crds"]
    for path in value_files:
        args += ["--values", str(path)]
    return _helm(work, *args)


def test_every_chart_source_is_served_and_renders_forge_values(box_charts):
    """Every chart source of the cluster's Applications is pulled from 127.0.0.1 and rendered with
    the values files its Application names (the real schema checks them); the stand-in renders
    CRDs only, never a workload of the chart."""
    cluster, served, work = box_charts
    assert served.charts, f"{cluster}: no chart sources found"
    kinds_by_release = {}
    for source in served.charts:
        package = _pull(served, source, work)
        for release in source.releases:
            assert release.value_files, f"{release.application}: names no values file"
            done = _template(work, package, release, [REPO / f for f in release.value_files])
            assert done.returncode == 0, f"{release.application} ({source.chart} {source.version}): {done.stderr}"
            kinds = set(KIND.findall(done.stdout))
            assert kinds <= {"CustomResourceDefinition"}, f"{release.application}: renders {kinds}"
            kinds_by_release[release.name] = kinds
    # The CRDs go where forge's components install them: the monitoring CRDs with prometheus-crds only.
    assert kinds_by_release["prometheus-crds"] == {"CustomResourceDefinition"}
    assert kinds_by_release["prometheus"] == set()
    assert kinds_by_release["kueue"] == {"CustomResourceDefinition"}


@pytest.mark.parametrize("box_charts", ["h200"], indirect=True)  # jupyterhub is deployed on h200 only
def test_a_values_key_the_schema_forbids_fails_naming_the_key(box_charts, tmp_path):
    """jupyterhub's schema has additionalProperties: false (at the top and under hub): a values
    file with a key it does not know fails `helm template` against the stand-in, naming the key
    (forge's own file passes)."""
    cluster, served, work = box_charts
    source = next(s for s in served.charts if s.chart == "jupyterhub")
    release = source.releases[0]
    package = _pull(served, source, work)
    values = yaml.safe_load((REPO / release.value_files[0]).read_text(encoding="utf-8"))
    values["hub"]["forgeNoSuchKey"] = True
    bad = tmp_path / "values.yaml"
    bad.write_text(yaml.safe_dump(values), encoding="utf-8")
    assert _template(work, package, release, [REPO / release.value_files[0]]).returncode == 0
    done = _template(work, package, release, [bad])
    assert done.returncode != 0
    assert "forgeNoSuchKey" in done.stderr and "not allowed" in done.stderr, done.stderr


def test_the_box_rewrites_name_only_what_is_served(box_charts, tmp_path):
    """After the box-only rewrites, no file of clusters/<c>/argocd names an upstream chart
    repository or Git source, every chart source names the local server, and the OCI repositories'
    Secrets ask for plain HTTP."""
    cluster, served, work = box_charts
    rewrites = {FORGE_REPO: "git://127.0.0.1:1/forge", **served.rewrites(1)}
    lines = git_served.served_tree(REPO, tmp_path, cluster, rewrites)
    assert lines
    tree = tmp_path / "forge" / "clusters" / cluster / "argocd"
    upstream_urls = {s.repo_url for s in served.charts} | {g.repo_url for g in served.git} | {FORGE_REPO}
    for path in tree.rglob("*.yaml"):
        named = set(_strings(yaml.safe_load(path.read_text(encoding="utf-8"))))
        assert not named & upstream_urls, f"{path.name} still names {named & upstream_urls}"
    for app in (tree / "apps").glob("application-*.yaml"):
        spec = yaml.safe_load(app.read_text(encoding="utf-8"))["spec"]
        for src in spec.get("sources") or [spec["source"]]:
            assert "127.0.0.1:" in src["repoURL"], f"{app.name}: {src['repoURL']} is not served by the box"
    secrets = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in (tree / "config").glob("secret-repo-*.yaml")]
    for secret in secrets:
        data = secret["stringData"]
        assert data["url"].startswith(("http://127.0.0.1:", "git://127.0.0.1:", "127.0.0.1:")), data["url"]
        assert (data.get("insecureOCIForceHttp") == "true") == (data.get("enableOCI") == "true"), secret["metadata"]["name"]


def _strings(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def test_the_trainer_git_source_is_served_with_its_crds(box_charts, tmp_path, upstream):
    """kubeflow/trainer at v1.9.4 is served by the box's git daemon: its `path` builds with
    kustomize to the training-operator's CRDs from the upstream data."""
    cluster, served, work = box_charts
    kustomize = kustomize_or_skip()
    [source] = served.git
    assert (source.repo_url, source.path) == ("https://github.com/kubeflow/trainer.git", "manifests/overlays/standalone")
    git_dir = tmp_path / "git"
    stand_ins.build_git(upstream, source, git_dir)
    daemon, port = git_served.git_daemon(git_dir, tmp_path / "logs")
    try:
        url = served.rewrites(port)[source.repo_url]
        clone = tmp_path / "clone"
        done = subprocess.run(["git", "clone", "-q", "--branch", source.revision, url, str(clone)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    finally:
        stop_all([daemon])
    built = subprocess.run([*kustomize, str(clone / source.path)], capture_output=True, text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(built.stdout) if d}
    expected = {p.stem for p in (upstream / f"{source.component}-{source.revision}" / "crds").glob("*.yaml")}
    assert names == expected and "pytorchjobs.kubeflow.org" in names


def test_a_chart_without_upstream_data_is_named(tmp_path):
    """Upstream data without a chart's folder: one error naming the folder, the Application and
    the chart, before anything is served."""
    plan = {p.name: p for p in load_fleet(REPO)}["a100"]
    served = stand_ins.sources(REPO, "a100", FORGE_REPO)
    (tmp_path / "upstream").mkdir()
    with pytest.raises(ForgeError) as caught:
        stand_ins.build_charts(REPO, plan, tmp_path / "upstream", served, tmp_path / "work")
    assert str(caught.value) == (f"{tmp_path / 'upstream' / 'alluxio-0.6.54'}: no such folder: the upstream data has "
                                 "nothing for a100-alluxio's chart alluxio 0.6.54 (set FORGE_UPSTREAM to the upstream chart data)")


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_a_chart_installs_crds_only_where_its_project_allows_them(cluster, upstream):
    """The real Argo CD refused Loki's stand-in ("CustomResourceDefinition is not permitted in project
    forge-a100-loki"): its upstream data holds its disabled subcharts' CRDs (grafana-agent-operator,
    rollout-operator). A component whose AppProject allows no CRD gets none from its chart."""
    from forge.twin.sources import chart_crds

    plan = {p.name: p for p in load_fleet(REPO)}[cluster]
    with_crds = {c.name for c in plan.components if chart_crds(REPO, c, upstream, plan)}
    assert "loki" not in with_crds and {"external-secrets", "kueue", "prometheus-crds"} <= with_crds
    crd = ("apiextensions.k8s.io", "CustomResourceDefinition")
    refused = [c.name for c in plan.components if c.name in with_crds and crd not in c.cluster_kinds]
    assert not refused

"""Stand-ins for the charts and the upstream Git source the cluster's Applications name, served on
127.0.0.1 for the real Argo CD in the box (forge twin argocd), where the real ones cannot be
downloaded.

These are stand-ins, not the charts. Each is built from the chart's upstream data folder
(FORGE_UPSTREAM/<chart>-<version>/) and holds:
- Chart.yaml: the chart's real name and the version the Application pins (targetRevision);
- values.yaml: the chart's default values, and values.schema.json when the chart ships one (also a
  subchart's, as charts/<name>/), so helm validates forge's values files against the real schema;
- the chart's CRDs, rendered for the releases whose component installs them in forge's clusters
  (Component.crd_groups, the choice the box already makes in forge.twin.sources.chart_crds): the
  real charts choose with their own switches (kube-prometheus-stack's `crds.enabled`, the GPU
  Operator's `nfd.enabled`), which a chart without its templates cannot evaluate;
- nothing else: no Deployment, DaemonSet, RBAC, webhook or Service of the chart. What forge itself
  writes (the overlays, the Application's Git source) is served as it is.

The training-operator's Git source (kubeflow/trainer at its tag) is likewise a stand-in: a Git
repository whose `path` is a kustomization of the training-operator's CRDs from the upstream data,
without its Deployment, RBAC or webhook (the box runs the operator itself, forge.twin.controllers).

Helm repositories are served over HTTP (`helm package`, `helm repo index`, with the real helm);
Argo CD's Helm-over-OCI sources (a repoURL without a scheme) from an OCI registry of the same server
(forge.twin.argocd.chart_server). Every repoURL gets a box-only rewrite to the local one."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from forge.argocd.bootstrap import app_name
from forge.errors import ForgeError
from forge.files.paths import ARGOCD_DIR, CLUSTERS_DIR
from forge.fleet import ClusterPlan
from forge.tools import helm_command
from forge.twin.argocd.served import _answers, _git
from forge.twin.processes import Process, free_ports, start, wait_until
from forge.twin.sources import chart_crds

LOCAL = "127.0.0.1"
CHART_CONFIG_TYPE = "application/vnd.cncf.helm.config.v1+json"
CHART_LAYER_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
STAND_IN = ("forge stand-in for {chart} {version}, built from its upstream data: its default values, "
            "values schema and CRDs; none of the chart's workloads")
_CRDS_TEMPLATE = """\
{{- /* forge stand-in: the CRDs this release installs in forge's clusters (stand-in/crds/<release>/) */ -}}
{{- range $path, $_ := $.Files.Glob (printf "stand-in/crds/%s/*.yaml" $.Release.Name) }}
---
{{ $.Files.Get $path }}
{{- end }}
"""


@dataclass(frozen=True)
class Release:
    """One Application source of a chart: the release Argo CD renders, with forge's values files."""
    application: str
    name: str
    namespace: str
    value_files: tuple[str, ...]  # repo-relative (the Application's `$values/` stripped)


@dataclass(frozen=True)
class ChartSource:
    """A Helm chart one or more of the cluster's Application sources name."""
    repo_url: str
    chart: str
    version: str
    releases: tuple[Release, ...] = ()

    @property
    def oci(self) -> bool:
        """Argo CD's Helm-over-OCI form: a registry without a scheme."""
        return "://" not in self.repo_url

    def local_url(self, port: int) -> str:
        if self.oci:  # the registry host as the first path segment, dots made dashes: <host>/<path>
            host, _, rest = self.repo_url.partition("/")
            return f"{LOCAL}:{port}/{host.replace('.', '-')}/{rest}".rstrip("/")
        return f"http://{LOCAL}:{port}/{self.repo_url.split('://', 1)[1]}"

    def folder(self) -> str:
        """The repository's folder: under the server's root (HTTP repositories), or where it is built."""
        return self.repo_url.split("://", 1)[-1].strip("/")

    def oci_name(self) -> str:
        """The chart's repository name in the local registry (OCI sources)."""
        return f"{self.local_url(0).split('/', 1)[1]}/{self.chart}"


@dataclass(frozen=True)
class GitSource:
    """An upstream Git repository an Application source names (kustomize at a tag)."""
    repo_url: str
    revision: str
    path: str
    application: str
    component: str  # the forge component that deploys it: its upstream data is <component>-<revision>

    @property
    def name(self) -> str:
        return self.repo_url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")


@dataclass
class Served:
    """What the box serves in place of the upstream sources, and the rewrites that point there."""
    charts: list[ChartSource] = field(default_factory=list)
    git: list[GitSource] = field(default_factory=list)
    port: int = 0

    def rewrites(self, git_port: int) -> dict[str, str]:
        out = {c.repo_url: c.local_url(self.port) for c in self.charts}
        out.update({g.repo_url: f"git://{LOCAL}:{git_port}/{g.name}" for g in self.git})
        if any(c.oci for c in self.charts):
            # The local registry speaks plain HTTP: Argo CD's repository field for it (v3.6.2, util/db),
            # passed to helm as --plain-http. Only the OCI repositories' Secrets hold `enableOCI`.
            out["  enableOCI: 'true'\n"] = "  enableOCI: 'true'\n  insecureOCIForceHttp: 'true'\n"
        return out


def _applications(root: Path, cluster: str) -> list[dict]:
    folder = root / CLUSTERS_DIR / cluster / ARGOCD_DIR / "apps"
    return [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("application-*.yaml"))]


def sources(root: Path, cluster: str, own_repo: str) -> Served:
    """The chart sources (one per repository, chart and version) and the upstream Git sources of the
    cluster's Applications, as the generated Applications name them."""
    charts: dict[tuple[str, str, str], list[Release]] = {}
    git = []
    for app in _applications(root, cluster):
        name = app["metadata"]["name"]
        spec = app["spec"]
        for src in spec.get("sources") or [spec["source"]]:
            if src.get("chart"):
                helm = src.get("helm") or {}
                release = Release(name, helm.get("releaseName") or name, spec["destination"].get("namespace", ""),
                                  tuple(f.removeprefix("$values/") for f in helm.get("valueFiles") or ()))
                charts.setdefault((src["repoURL"], src["chart"], str(src["targetRevision"])), []).append(release)
            elif src["repoURL"] != own_repo and src.get("path") is not None:
                git.append(GitSource(src["repoURL"], str(src["targetRevision"]), src["path"], name,
                                     name.removeprefix(f"{cluster}-")))
    return Served([ChartSource(*key, tuple(rel)) for key, rel in sorted(charts.items())], git)


def _data(upstream: Path, chart: str, version: str, application: str) -> Path:
    folder = upstream / f"{chart}-{version}"
    if not folder.is_dir():
        raise ForgeError(f"{folder}: no such folder: the upstream data has nothing for {application}'s chart "
                         f"{chart} {version} (set FORGE_UPSTREAM to the upstream chart data)")
    return folder


def _crds_by_release(root: Path, plan: ClusterPlan, upstream: Path, source: ChartSource, data: Path) -> dict[str, list[Path]]:
    """For each release of the chart, the upstream CRD files its component installs."""
    by_app = {app_name(plan.cluster, c.name): c for c in plan.components}
    out: dict[str, list[Path]] = {}
    for release in source.releases:
        component = by_app.get(release.application)
        if component is None:
            raise ForgeError(f"{CLUSTERS_DIR}/{plan.name}/{ARGOCD_DIR}/apps: Application {release.application} is no "
                             f"component of {plan.name}: run `make generate`")
        files = {Path(i.file) for i in chart_crds(root, component, upstream, plan)}
        out[release.name] = sorted(f for f in files if f.parent == data / "crds")
    return out


def _helm(root: Path, work: Path, *args: str) -> str:
    helm_home = work / "helm-home"
    env = {**os.environ, "HELM_CACHE_HOME": str(helm_home / "cache"), "HELM_CONFIG_HOME": str(helm_home / "config"),
           "HELM_DATA_HOME": str(helm_home / "data")}
    done = subprocess.run([*helm_command(root), *args], capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        raise ForgeError(f"twin argocd: helm {' '.join(args[:2])} failed: {done.stderr.strip()[-400:]}")
    return done.stdout


def write_chart(source: ChartSource, data: Path, crds: dict[str, list[Path]], dest: Path) -> Path:
    """The stand-in chart's folder, unpackaged, at dest/<chart>."""
    folder = dest / source.chart
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "templates").mkdir(parents=True)
    what = STAND_IN.format(chart=source.chart, version=source.version)
    meta = {"apiVersion": "v2", "name": source.chart, "version": source.version, "description": what,
            "type": "application", "annotations": {"forge.exa.ai/stand-in": "true"}}
    (folder / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    values = data / "values.yaml"
    (folder / "values.yaml").write_bytes(values.read_bytes() if values.is_file() else b"{}\n")
    if (data / "values.schema.json").is_file():
        shutil.copyfile(data / "values.schema.json", folder / "values.schema.json")
    for schema in sorted((data / "subcharts").glob("*/values.schema.json")):  # only subcharts with a schema add a check
        sub = folder / "charts" / schema.parent.name
        (sub / "templates").mkdir(parents=True)
        # the parent's pinned version: the subchart's own is not in the upstream data, and helm needs one
        sub_meta = {"apiVersion": "v2", "name": schema.parent.name, "version": source.version,
                    "description": f"forge stand-in: the values and schema of {source.chart}'s subchart {schema.parent.name}"}
        (sub / "Chart.yaml").write_text(yaml.safe_dump(sub_meta, sort_keys=False), encoding="utf-8")
        shutil.copyfile(schema.parent / "values.yaml", sub / "values.yaml")
        shutil.copyfile(schema, sub / "values.schema.json")
    for release, files in crds.items():
        for path in files:
            (folder / "stand-in" / "crds" / release).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, folder / "stand-in" / "crds" / release / path.name)
    (folder / "templates" / "crds.yaml").write_text(_CRDS_TEMPLATE, encoding="utf-8")
    (folder / "templates" / "NOTES.txt").write_text(what + ".\n", encoding="utf-8")
    return folder


def _blob(oci: Path, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    path = oci / "blobs" / "sha256" / digest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def push_oci(source: ChartSource, chart: Path, package: Path, oci: Path) -> None:
    """The packaged chart as helm pushes it to a registry: a config blob (Chart.yaml as JSON), one
    layer (the package) and a manifest, tagged with the version."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text(encoding="utf-8"))
    config = {"mediaType": CHART_CONFIG_TYPE, **_blob(oci, json.dumps(meta).encode())}
    layer = {"mediaType": CHART_LAYER_TYPE, **_blob(oci, package.read_bytes())}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": config,
                "layers": [layer], "annotations": {"org.opencontainers.image.title": source.chart,
                                                   "org.opencontainers.image.version": source.version}}
    digest = _blob(oci, json.dumps(manifest).encode())["digest"]
    tag = oci / source.oci_name() / "tags" / source.version.replace("+", "_")
    tag.parent.mkdir(parents=True, exist_ok=True)
    tag.write_text(f"{digest}\n", encoding="ascii")


def build_charts(root: Path, plan: ClusterPlan, upstream: Path, served: Served, work: Path) -> Path:
    """Package and index every stand-in chart into work/charts (the server's root); returns it."""
    site, build = work / "charts", work / "chart-build"
    for folder in (site, build):
        shutil.rmtree(folder, ignore_errors=True)
    for source in served.charts:
        data = _data(upstream, source.chart, source.version, source.releases[0].application)
        where = build / source.folder()
        folder = write_chart(source, data, _crds_by_release(root, plan, upstream, source, data), where)
        repo = where if source.oci else site / source.folder()
        repo.mkdir(parents=True, exist_ok=True)
        _helm(root, work, "package", str(folder), "--destination", str(repo))
        if source.oci:
            push_oci(source, folder, repo / f"{source.chart}-{source.version}.tgz", site / "oci")
    for repo in sorted({source.folder() for source in served.charts if not source.oci}):
        _helm(root, work, "repo", "index", str(site / repo))
    return site


def build_git(upstream: Path, source: GitSource, dest: Path) -> Path:
    """dest/<name>: a Git repository whose `path`, at the source's tag, is a kustomization of the
    upstream data's CRDs (FORGE_UPSTREAM/<component>-<tag>/crds, as forge.twin.sources reads it), committed on `master` and tagged."""
    data = upstream / f"{source.component}-{source.revision}"
    if not (data / "crds").is_dir():
        raise ForgeError(f"{data / 'crds'}: no such folder: the upstream data has nothing for {source.application}'s "
                         f"source {source.repo_url} {source.revision} (set FORGE_UPSTREAM to the upstream chart data)")
    work = dest / source.name
    shutil.rmtree(work, ignore_errors=True)
    base = work / "manifests" / "stand-in" / "crds"
    base.mkdir(parents=True)
    names = []
    for path in sorted((data / "crds").glob("*.y*ml")):
        shutil.copyfile(path, base / path.name)
        names.append(path.name)
    (base / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": names}), encoding="utf-8")
    overlay = work / source.path
    overlay.mkdir(parents=True, exist_ok=True)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(base, overlay)]}), encoding="utf-8")
    (work / "README.md").write_text(
        f"forge stand-in for {source.repo_url} at {source.revision}: `{source.path}` holds the CRDs of the upstream "
        f"data ({data.name}), none of the workloads (no Deployment, RBAC or webhook). Built by forge twin argocd.\n",
        encoding="utf-8")
    _git(work, "init", "-q", "-b", "master")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", f"forge stand-in for {source.repo_url} {source.revision}")
    _git(work, "tag", source.revision)
    return work


def serve(site: Path, logs: Path) -> tuple[Process, int]:
    """The chart server (forge.twin.argocd.chart_server) on a free port of 127.0.0.1."""
    port = free_ports(1)[0]
    script = Path(__file__).with_name("chart_server.py")
    proc = start("chart-server", [sys.executable, str(script), str(site), str(port)], logs)
    wait_until(lambda: _answers(port), proc, "serving charts", 30)
    return proc, port

"""`forge hydrate`: render every component of every cluster as Argo CD does, from the chart cache,
into build/hydrated/<cluster>/<component>.yaml.

The inputs are read off the component's Argo CD Application (forge.argocd.bootstrap builds it; the same
function writes clusters/<cluster>/argocd/), so they cannot drift apart:

    helm template <helm.releaseName> <chart from the cache> --namespace <destination.namespace>
        --kube-version <cluster.kubernetes_version> -f <each helm.valueFiles, $values = this repo>
        --api-versions <every group/version and group/version/Kind the cluster serves>
        --include-crds
    + kustomize build <a remote kustomize source from the cache, with its patches and labels>
                                                  (forge.upstream.remote; training-operator)
    + kustomize build <the overlay path source>   (the overlay's extra manifests and Namespace)

`--api-versions`: Argo CD passes what the live cluster's discovery lists, as group/version and
group/version/Kind. Offline we list the cluster's steady state: the built-in kinds of its
Kubernetes minor (from kubernetes-validate's schemas; alpha versions left out, they are off by
default), Argo CD's own CRDs when Argo CD runs in the cluster, the CRDs operators install at run
time (`Component.runtime_crd_data`), and every CRD the cluster's components ship. Those CRDs come out of the rendering itself: everything is rendered once, the
CRDs are collected, and whatever was rendered without one of them is rendered again (charts ask
`.Capabilities.APIVersions.Has "monitoring.coreos.com/v1"` before creating a ServiceMonitor).
On a first sync Argo CD may still miss a CRD that another Application installs later; the
hydrated output is what the cluster converges to.

All or nothing: the charts must all be in the cache (else one error naming each chart, its
version and the command that fetches it), every render must succeed, and only then is
build/hydrated/ replaced, whole.

`--component NAME` (repeatable) hydrates only those components, so one chart can be checked
without every other chart in the cache: only their charts must be cached, and only their files
under build/hydrated/<cluster>/ are replaced (the others stay as a previous run left them). The
CRDs of the other components then come only from their hydrated files, where a previous full run
left some: a chart that asks `.Capabilities` for a CRD none of them has renders as it would on a
first sync, before that CRD exists. A full run (no --component) is what CI checks.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.argocd import bootstrap as argocd
from forge.facts.versions import VERSIONS_FILE, ChartPin, chart_pins
from forge.components import Component
from forge.errors import ForgeError
from forge.files.folders import recover, swap
from forge.fleet import components_of, load_fleet
from forge.model.cluster import ClusterModel
from forge.tools import helm_command, kustomize_build_command
from forge.upstream import remote
from forge.upstream.cache import ManyErrors, cache_root, cached_chart, fetch_hint
from forge.validate.objects import load_yaml_stream

HYDRATED_DIR = Path("build/hydrated")
IN_CLUSTER = "https://kubernetes.default.svc"
# Argo CD's own CRDs (argoproj.io/v1alpha1), present wherever Argo CD runs.
ARGOCD_KINDS = ("AppProject", "Application", "ApplicationSet")
_ALPHA = re.compile(r"v\d+alpha\d+$")
_MAX_PASSES = 4


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a dict key while rendering
class Job:
    """One component of one cluster, with what Argo CD would render it from."""

    cluster: ClusterModel
    component: Component
    app_name: str
    pin: ChartPin | None
    chart_dir: Path | None  # the cached chart
    release: str
    namespace: str
    value_files: tuple[str, ...]  # repo-relative
    overlay: str  # repo-relative kustomization folder
    remote_source: dict[str, Any] | None = None  # an upstream kustomize source of the Application
    remote_tree: Path | None = None  # its cached repository tree
    # More chart sources of the same chart (Component.extra_releases): (release, value files)
    extra_releases: tuple[tuple[str, tuple[str, ...]], ...] = ()


def check_component_names(clusters: list[ClusterModel], only: frozenset[str] | None) -> None:
    """Refuse a --component that no cluster enables (a typo would otherwise check nothing)."""
    if not only:
        return
    known = {c.name for cluster in clusters for c in components_of(cluster)}
    unknown = sorted(only - known)
    if unknown:
        raise ForgeError(f"--component {', '.join(unknown)}: no cluster enables it (enabled: {', '.join(sorted(known))})")


def jobs_for(root: Path, clusters: list[ClusterModel], pins: dict[str, ChartPin],
             only: frozenset[str] | None = None) -> list[Job]:
    """Every (cluster, component), from its Argo CD Application (only the components named in
    `only`, when given). Fails, naming every missing chart, before anything is rendered."""
    check_component_names(clusters, only)
    jobs: list[Job] = []
    missing: dict[object, tuple[str, str]] = {}  # pin key or RemoteKey -> (how to fetch, what)
    for cluster in clusters:
        for component in components_of(cluster):
            if only and component.name not in only:
                continue
            pin = pins.get(component.chart) if component.chart else None
            if component.chart and pin is None:
                raise ForgeError(f"{VERSIONS_FILE}: no pin for chart '{component.chart}' (component {component.name})")
            app = argocd.component_application(cluster, component, pin)
            sources = app["spec"]["sources"]
            chart_src, *more_charts = [s for s in sources if "chart" in s] or [None]
            remote_srcs, path_src = split_sources(sources)
            chart_dir = cached_chart(root, pin) if pin else None
            if pin and chart_dir is None:
                missing[pin.key] = fetch_hint(pin), f"chart {pin.chart} {pin.version} ('{pin.key}' in {VERSIONS_FILE})"
            remote_src, remote_tree = (remote_srcs[0] if remote_srcs else None), None
            base = component.remote_base(cluster)
            if base is not None:
                key = remote.RemoteKey.of(component.name, base)
                remote_tree = remote.cached_tree(cache_root(root), key)
                if remote_tree is None:
                    missing[key] = remote.fetch_hint(key), f"kustomize base {key.repo_url} {key.revision} ({key.path})"
            value_files: tuple[str, ...] = ()
            if chart_src:
                value_files = tuple(_repo_path(v) for v in chart_src["helm"].get("valueFiles", []))
            jobs.append(Job(cluster, component, app["metadata"]["name"], pin, chart_dir,
                            (chart_src or {}).get("helm", {}).get("releaseName", component.release),
                            app["spec"]["destination"]["namespace"], value_files, path_src["path"],
                            remote_src, remote_tree,
                            tuple((s["helm"]["releaseName"], tuple(_repo_path(v) for v in s["helm"]["valueFiles"]))
                                  for s in more_charts)))
    if missing:
        lines = [f"{what} is not in the chart cache {cache_root(root)}: run {hint}" for hint, what in missing.values()]
        raise ManyErrors(lines + ["nothing was hydrated"])
    for job in jobs:
        for rel in (*job.value_files, *(f for _, files in job.extra_releases for f in files), f"{job.overlay}/kustomization.yaml"):
            if not (root / rel).is_file():
                raise ForgeError(f"{rel} is missing (Application {job.app_name} uses it): run `forge generate`; nothing was hydrated")
    return jobs


def split_sources(sources: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """An Application's path sources: remote bases (upstream kustomize at a tag) first, and our
    overlay, which argocd.component_application always puts last."""
    *remote, overlay = [s for s in sources if "path" in s]
    return remote, overlay


def _repo_path(value_file: str) -> str:
    # `$values/<path>`: the `ref: values` source, which is this repository.
    return value_file.split("/", 1)[1] if value_file.startswith("$values/") else value_file


def builtin_api_versions(kubernetes_version: str) -> set[str]:
    from forge.validate.engine import kube_schemas  # loads schema indexes: only when hydrating

    try:
        kinds = kube_schemas(kubernetes_version).kinds()
    except ValueError as exc:
        raise ForgeError(str(exc)) from None
    out: set[str] = set()
    for api_version, kind in kinds:
        if not _ALPHA.search(api_version):
            out |= {api_version, f"{api_version}/{kind}"}
    return out


def crd_api_versions(text: str) -> set[str]:
    """group/version and group/version/Kind for each served version of the CRDs in a YAML stream."""
    out: set[str] = set()
    for doc in re.split(r"^---\s*$", text, flags=re.M):
        if "CustomResourceDefinition" not in doc:
            continue
        # The validators' loader: real CRDs have a bare `=` in enums (prometheus-operator's
        # matchType), which PyYAML's plain SafeLoader cannot read.
        try:
            objs = load_yaml_stream(doc)
        except ValueError:  # not a mapping: not an object
            continue
        obj = objs[0] if objs else None
        if not isinstance(obj, dict) or obj.get("kind") != "CustomResourceDefinition":
            continue
        spec = obj.get("spec") or {}
        group, kind = spec.get("group"), (spec.get("names") or {}).get("kind")
        for version in spec.get("versions") or ([{"name": spec["version"]}] if spec.get("version") else []):
            if version.get("served", True):
                out |= {f"{group}/{version['name']}", f"{group}/{version['name']}/{kind}"}
    return out


def base_api_versions(cluster: ClusterModel) -> set[str]:
    found = builtin_api_versions(cluster.kubernetes_version)
    if cluster.settings.argocd.destination.server == IN_CLUSTER:
        found |= {"argoproj.io/v1alpha1"} | {f"argoproj.io/v1alpha1/{k}" for k in ARGOCD_KINDS}
    return found


def helm_args(root: Path, job: Job, api_versions: set[str], release: str | None = None,
              value_files: tuple[str, ...] | None = None) -> list[str]:
    """`helm template` of the job's chart: its main release, or one of its extra releases."""
    assert job.chart_dir is not None
    args = ["template", release or job.release, str(job.chart_dir), "--namespace", job.namespace,
            "--kube-version", job.cluster.kubernetes_version]
    if release is None:  # extra releases skip the chart's CRDs (skipCrds in their Application source)
        args.append("--include-crds")
    for rel in job.value_files if value_files is None else value_files:
        args += ["-f", str(root / rel)]
    for api in sorted(api_versions):
        args += ["--api-versions", api]
    return args


def _run(cmd: list[str], what: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-5:]) or f"exit {proc.returncode}"
        raise ForgeError(f"{what} failed: {tail}; nothing was hydrated")
    return proc.stdout


def _header(job: Job, api_count: int) -> str:
    lines = [f"# Hydrated by `forge hydrate`: what Argo CD renders for Application {job.app_name}. Do not edit."]
    if job.pin:
        files = " ".join(f"-f {f}" for f in job.value_files)
        lines.append(f"# helm template {job.release} {job.pin.chart} {job.pin.version} ({job.pin.repo}) --namespace "
                     f"{job.namespace} --kube-version {job.cluster.kubernetes_version} --include-crds {files} "
                     f"--api-versions ({api_count} group/versions and kinds)")
        for release, value_files in job.extra_releases:
            lines.append(f"# + helm template {release} (same chart and options, without its CRDs) {' '.join(f'-f {f}' for f in value_files)}")
    if job.remote_source is not None:
        src = job.remote_source
        lines.append(f"# + kustomize build {src['path']} of {src['repoURL']} at {src['targetRevision']} "
                     f"with the Application's kustomize options")
    lines.append(f"# + kustomize build {job.overlay}")
    return "\n".join(lines) + "\n"


def hydrate_all(root: Path, out: Path | None = None, jobs: int | None = None,
                only: frozenset[str] | None = None) -> dict[str, dict[str, int]]:
    """Hydrate everything (or the components in `only`); returns objects per cluster and component."""
    out = out or root / HYDRATED_DIR
    clusters = load_fleet(root).clusters
    todo = jobs_for(root, clusters, chart_pins(root), only)
    kustomize = kustomize_build_command(root)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        overlay_text = dict(zip(todo, pool.map(lambda job: _build_overlay(root, job, kustomize), todo)))
        served = _served_api_versions(clusters, todo, overlay_text, out, only)
        chart_text, used = _render_charts(root, [j for j in todo if j.pin], served, pool)
    texts: dict[Job, str] = {}
    counts: dict[str, dict[str, int]] = {}
    for job in todo:
        parts = [_header(job, len(used.get(job, ())))]
        if job in chart_text:
            parts.append(chart_text[job].rstrip("\n") + "\n---\n")
        parts.append(overlay_text[job])
        texts[job] = "".join(parts)
        counts.setdefault(job.cluster.name, {})[job.component.name] = _count(texts[job])
    _write_hydrated(out, texts, whole=not only)
    return counts


def _build_overlay(root: Path, job: Job, kustomize: list[str]) -> str:
    """The kustomize part of a component: its overlay, after the remote base it has (if any)."""
    text = _run([*kustomize, str(root / job.overlay)], f"kustomize build {job.overlay}")
    if job.remote_source is not None and job.remote_tree is not None:
        where = f"{job.cluster.name}/{job.component.name}"
        text = remote.build_remote(job.remote_tree, job.remote_source, kustomize, where).rstrip("\n") + "\n---\n" + text
    return text


def _served_api_versions(clusters: list[ClusterModel], todo: list[Job], overlay_text: dict[Job, str],
                         out: Path, only: frozenset[str] | None) -> dict[str, set[str]]:
    """Per cluster, what it serves before any chart is rendered: built-in kinds, Argo CD's, the
    CRDs of the overlays and of operators' run-time installs, and (with --component) the CRDs of
    the other components as a previous run hydrated them."""
    served = {c.name: base_api_versions(c) for c in clusters}
    if only:
        for cluster in clusters:
            for path in sorted((out / cluster.name).glob("*.yaml")):
                if path.stem not in only:
                    served[cluster.name] |= crd_api_versions(path.read_text(encoding="utf-8"))
    for job in todo:
        served[job.cluster.name] |= crd_api_versions(overlay_text[job])
        # CRDs the component's operator applies at run time: the cluster serves them too.
        for runtime in job.component.runtime_crd_data():
            served[job.cluster.name] |= runtime.api_versions()
    return served


def _render_charts(root: Path, charted: list[Job], served: dict[str, set[str]],
                   pool: ThreadPoolExecutor) -> tuple[dict[Job, str], dict[Job, set[str]]]:
    """helm template every chart, again while the CRDs the charts ship change what the cluster
    serves; returns each chart's text and the --api-versions it was rendered with."""
    helm = helm_command(root)
    used: dict[Job, set[str]] = {}
    chart_text: dict[Job, str] = {}
    want = {j: set(served[j.cluster.name]) for j in charted}

    def render(job: Job) -> str:
        what = f"{job.cluster.name}/{job.component.name}: helm template {job.pin.chart} {job.pin.version}"  # type: ignore[union-attr]
        texts = [_run([*helm, *helm_args(root, job, want[job])], what)]
        texts += [_run([*helm, *helm_args(root, job, want[job], release, files)], f"{what} (release {release})")
                  for release, files in job.extra_releases]
        return "---\n".join(t if t.endswith("\n") else t + "\n" for t in texts)

    for _ in range(_MAX_PASSES):
        stale = [j for j in charted if used.get(j) != want[j]]
        if not stale:
            return chart_text, used
        for job, text in zip(stale, pool.map(render, stale)):
            chart_text[job], used[job] = text, want[job]
        crds: dict[str, set[str]] = {}
        for job in charted:
            crds.setdefault(job.cluster.name, set()).update(crd_api_versions(chart_text[job]))
        want = {j: served[j.cluster.name] | crds.get(j.cluster.name, set()) for j in charted}
    raise ForgeError("internal: --api-versions did not settle; nothing was hydrated")


def _write_hydrated(out: Path, texts: dict[Job, str], whole: bool) -> None:
    """Stage every file, then swap in (forge.files.folders): the whole folder, or with --component
    only those files (the others stay as a previous run left them)."""
    staging = out.with_name(out.name + ".new")
    work = out.with_name(f".{out.name}.swap")
    recover(work, lambda target: target == out.name or target.startswith(out.name + "/"))
    shutil.rmtree(staging, ignore_errors=True)
    for job, text in texts.items():
        path = staging / job.cluster.name / f"{job.component.name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    try:
        if whole:
            swap(work, [(staging, out)])
        else:
            swap(work, [(staging / j.cluster.name / f"{j.component.name}.yaml",
                         out / j.cluster.name / f"{j.component.name}.yaml") for j in texts])
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _count(text: str) -> int:
    return sum(1 for doc in re.split(r"^---\s*$", text, flags=re.M)
               if any(line.strip() and not line.lstrip().startswith("#") for line in doc.splitlines()))


def hydrated_file(root: Path, cluster: str, component: str) -> Path:
    return root / HYDRATED_DIR / cluster / f"{component}.yaml"


def load_hydrated(path: Path) -> list[tuple[dict[str, Any], int]]:
    """Objects of a hydrated file with the line each starts on."""
    text = path.read_text(encoding="utf-8")
    out: list[tuple[dict[str, Any], int]] = []
    line = 1
    for chunk in re.split(r"(?m)^---[^\n]*\n", text):
        lines = chunk.split("\n")
        first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), 0)
        for obj in load_yaml_stream(chunk):
            out.append((obj, line + first))
        line += chunk.count("\n") + 1
    return out

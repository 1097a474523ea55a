"""`forge twin argocd CLUSTER`: the real Argo CD converges the cluster's box from Git."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import yaml

from forge.argocd.bootstrap import BY_HAND
from forge.files.paths import ARGOCD_DIR, CLUSTERS_DIR
from forge.fleet import ClusterPlan
from forge.twin.argocd import bootstrap, components, served, stand_ins, status_stand_ins
from forge.twin.binaries import ensure_program
from forge.twin.pins import argocd_crds_dir
from forge.twin.processes import Process, stop_all


def root_application(root: Path, cluster: str) -> Path:
    return root / CLUSTERS_DIR / cluster / ARGOCD_DIR / BY_HAND[-1]


def run(root: Path, plan: ClusterPlan, kubeconfig: Path, upstream: Path, work: Path, timeout: float,
        say: Callable[[str], None]) -> bootstrap.Progress:
    cluster = plan.name
    started = time.monotonic()
    binary = ensure_program(root, "argocd-box", say)["argocd"]
    kustomize = ensure_program(root, "kustomize-box", say)["kustomize"]
    say(f"twin argocd: Argo CD and kustomize ready ({time.monotonic() - started:.1f}s)")
    procs: list[Process] = []
    try:
        redis, redis_port = served.redis(root, work / "logs")
        git, git_port = served.git_daemon(work / "git", work / "logs")
        procs += [redis, git]
        repo_url = yaml.safe_load(root_application(root, cluster).read_text(encoding="utf-8"))["spec"]["source"]["repoURL"]
        upstream_sources = stand_ins.sources(root, cluster, repo_url)
        site = stand_ins.build_charts(root, plan, upstream, upstream_sources, work)
        for source in upstream_sources.git:
            stand_ins.build_git(upstream, source, work / "git")
        charts, upstream_sources.port = stand_ins.serve(site, work / "logs")
        procs.append(charts)
        say(f"twin argocd: stand-in charts ({len(upstream_sources.charts)}) and Git sources "
            f"({len(upstream_sources.git)}) from the upstream data, served on 127.0.0.1:{upstream_sources.port} "
            "(CRDs, values and schemas only: none of the charts' workloads; docs/twin.md)")
        rewrites = {repo_url: f"git://127.0.0.1:{git_port}/forge", **upstream_sources.rewrites(git_port)}
        for line in served.served_tree(root, work / "git", cluster, rewrites):
            say(f"twin argocd: box-only rewrite: {line}")
        bootstrap.install(kubeconfig, argocd_crds_dir(root, upstream))
        say(f"twin argocd: box-only: https://kubernetes.default.svc is the box's API server "
            f"(ARGOCD_FAKE_IN_CLUSTER=true, KUBECONFIG={kubeconfig})")
        started_procs, api = components.start_components(components.link_names(binary, work / "bin", kustomize), kubeconfig,
                                                         redis_port, work / "logs")
        procs += started_procs
        say(f"twin argocd: Redis :{redis_port}, Git :{git_port}, Argo CD API :{api} (127.0.0.1)")
        # What docs/bootstrap.md (step 3) has a person apply, in its order: the root's AppProject, then the root.
        folder = work / "git" / "forge" / root_application(root, cluster).parent.relative_to(root)
        progress = bootstrap.Progress(time.monotonic())
        for name in BY_HAND:
            bootstrap.kubectl(kubeconfig, "apply", "--server-side", "-f", str(folder / name))
            say(f"twin argocd: applied {name} (by hand, docs/bootstrap.md)")
        say(f"twin argocd: root Application applied; waiting for every Application to be Synced and Healthy")
        writer = status_stand_ins.StatusWriter(status_stand_ins.kube_from(kubeconfig), say)
        try:
            bootstrap.converge(kubeconfig, progress, timeout, say, each_poll=writer)
        finally:
            writer.kube.close()
        say(f"twin argocd: converged {time.monotonic() - progress.started:.0f}s after the root Application; order: "
            + ", ".join(n for _, n in progress.order))
        return progress
    finally:
        stop_all(procs)

"""`kustomize build` every overlay and every cluster's Argo CD bootstrap, in parallel, into
build/rendered/<cluster>/<component>.yaml (the bootstrap as argocd.yaml). Incremental: a
content-hash key per overlay (forge.generate.cache); see render_all."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from forge.generate.cache import CACHE_DIR, Digests, GlobalInputs, digest, signature, tree_digest
from forge.fleet.selection import check_clusters
from forge.errors import ForgeError
from forge.files.folders import recover, swap
from forge.files.paths import ARGOCD_DIR, CLUSTERS_DIR, OVERLAYS_DIR, RENDERED_DIR
from forge.render.batch import build_together
from forge.tools import kustomize_build_command

Progress = Callable[[int, int], None]

BOOTSTRAP = "argocd"  # the rendered file name of a cluster's bootstrap


@dataclass(frozen=True)
class Target:
    cluster: str
    component: str
    source: Path  # kustomization folder, repo-relative


def targets(root: Path) -> list[Target]:
    found = [Target(d.parent.name, d.name, d.relative_to(root))
             for d in sorted((root / OVERLAYS_DIR).glob("*/*")) if (d / "kustomization.yaml").is_file()]
    found += [Target(d.parent.name, BOOTSTRAP, d.relative_to(root))
              for d in sorted((root / CLUSTERS_DIR).glob(f"*/{ARGOCD_DIR}")) if (d / "kustomization.yaml").is_file()]
    if not found:
        raise ForgeError(f"nothing to render under {OVERLAYS_DIR}/: run `make generate` first")
    return found


def build(root: Path, target: Target, command: list[str]) -> str:
    proc = subprocess.run([*command, str(root / target.source)], capture_output=True, text=True, encoding="utf-8")
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise ForgeError(f"{target.source}: kustomize build failed: {detail}")
    return proc.stdout


def count_objects(text: str) -> int:
    return sum(1 for doc in text.split("\n---\n") if doc.strip())


def _keys(root: Path, todo: list[Target], inputs: GlobalInputs, digests: Digests) -> dict[Target, str]:
    """Each target's render key: the render inputs (kustomize, base/, forge) and its own files."""
    # The folder's kind and depth count (its relative references resolve from there), not the
    # cluster's name: identical overlays share one rendering (forge diff's two sides do).
    return {t: digest(inputs.render, t.source.parts[0], str(len(t.source.parts)), tree_digest(root / t.source, digests=digests))
            for t in todo}


def _build_cluster(root: Path, targets_: list[Target], command: list[str]) -> dict[Target, str]:
    """One cluster's pending targets: together in one kustomize run, else one by one."""
    together = build_together(root, {t.component: t.source for t in targets_}, command) if len(targets_) > 1 else None
    if together is not None:
        return {t: together[t.component] for t in targets_}
    return {t: build(root, t, command) for t in targets_}


def _fresh(out: Path, cluster: str, wanted: dict[Target, str], state: dict) -> bool:
    entry = state.get(cluster)
    if not entry or entry.get("keys") != {t.component: k for t, k in wanted.items()}:
        return False
    on_disk = {p.name for p in (out / cluster).glob("*")} if (out / cluster).is_dir() else set()
    files = entry.get("files", {})
    return on_disk == set(files) and all(signature(out / cluster / name) == sig for name, sig in files.items())


def render_all(root: Path, out: Path | None = None, jobs: int | None = None, progress: Progress | None = None,
               store: Path | None = None, keep: bool = True, only: tuple[str, ...] = ()) -> dict[str, int]:
    """Render what changed; returns objects per cluster. Clusters whose render keys and files are
    as the last render left them are not touched; the others are rendered (from the content store
    .cache/forge/render/ when their key was rendered before, else by kustomize, a cluster per job)
    and swapped in together, with folders of clusters that are gone, in one journaled swap.
    `keep` False: read the store, never add to it (forge diff, when the user has no cache).
    `only`: these clusters (--cluster); the others' folders and state stay as they are."""
    out = out or root / RENDERED_DIR
    store = store or root / CACHE_DIR / "render"
    command = kustomize_build_command(root)
    todo = targets(root)
    check_clusters(only, {t.cluster for t in todo})
    todo = [t for t in todo if not only or t.cluster in only]
    digests = Digests(root, "render-inputs")
    keys = _keys(root, todo, GlobalInputs(root), digests)
    by_cluster: dict[str, dict[Target, str]] = {}
    for target in todo:
        by_cluster.setdefault(target.cluster, {})[target] = keys[target]
    state_file = out.with_name(f".{out.name}.state.json")
    state = _load(state_file)
    stale = [c for c, wanted in by_cluster.items() if not _fresh(out, c, wanted, state)]
    texts = _render_stale(root, {c: by_cluster[c] for c in stale}, command, store if keep else None, store, jobs,
                          _offset(progress, len(by_cluster) - len(stale), len(by_cluster)))
    others = {p.name for p in out.glob("*")} - set(only) if only and out.is_dir() else set()
    _swap_clusters(out, texts, set(by_cluster) | others)
    for cluster in stale:
        state[cluster] = {"keys": {t.component: k for t, k in by_cluster[cluster].items()},
                          "counts": {t.component: count_objects(texts[cluster][t]) for t in by_cluster[cluster]},
                          "files": {f"{t.component}.yaml": signature(out / cluster / f"{t.component}.yaml") for t in by_cluster[cluster]}}
    state = {c: state[c] for c in state if c in by_cluster or (only and c not in only)}
    _save(state_file, state)
    digests.save()
    return {c: sum(state[c]["counts"].values()) for c in sorted(by_cluster)}


def _offset(progress: Progress | None, fresh: int, total: int) -> Progress | None:
    if progress:
        progress(fresh, total)
        return lambda done, _: progress(fresh + done, total)
    return None


def _render_stale(root: Path, wanted: dict[str, dict[Target, str]], command: list[str], keep: Path | None, store: Path,
                  jobs: int | None, progress: Progress | None) -> dict[str, dict[Target, str]]:
    texts: dict[str, dict[Target, str]] = {c: {} for c in wanted}
    pending: dict[str, list[Target]] = {}
    for cluster, keyed in wanted.items():
        for target, key in keyed.items():
            cached = store / key[:2] / f"{key}.yaml"
            if cached.is_file():
                texts[cluster][target] = cached.read_text(encoding="utf-8")
            else:
                pending.setdefault(cluster, []).append(target)
    done = len(wanted) - len(pending)
    if progress:
        progress(done, len(wanted))
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        futures = [pool.submit(_build_cluster, root, group, command) for group in pending.values()]
        for future in futures:
            for target, text in future.result().items():
                texts[target.cluster][target] = text
                if keep:
                    _store(keep, wanted[target.cluster][target], text)
            done += 1
            if progress:
                progress(done, len(wanted))
    return texts


def _store(store: Path, key: str, text: str) -> None:
    path = store / key[:2] / f"{key}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # a reader sees the whole text or none


def _swap_clusters(out: Path, texts: dict[str, dict[Target, str]], clusters: set[str]) -> None:
    """Rendered clusters in, clusters no longer rendered out: one journaled swap (forge.files.folders)."""
    gone = [p for p in sorted(out.glob("*")) if p.name not in clusters] if out.is_dir() else []
    if not texts and not gone:
        return
    staging = out.with_name(f".{out.name}.staging")
    work = out.with_name(f".{out.name}.swap")
    recover(work, lambda target: target.partition("/")[0] == out.name and target.count("/") == 1)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for cluster, by_target in texts.items():
            (staging / cluster).mkdir(parents=True)
            for target, text in by_target.items():
                (staging / cluster / f"{target.component}.yaml").write_text(text, encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        swap(work, [(staging / c, out / c) for c in sorted(texts)] + [(None, p) for p in gone])
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)

"""`kustomize build` every overlay and every cluster's Argo CD bootstrap, in parallel, into
build/rendered/<cluster>/<component>.yaml (the bootstrap as argocd.yaml)."""
from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError
from forge.folders import swap_in
from forge.paths import ARGOCD_DIR, CLUSTERS_DIR, OVERLAYS_DIR, RENDERED_DIR
from forge.tools import kustomize_build_command

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
    proc = subprocess.run([*command, str(root / target.source)], capture_output=True, text=True)
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        raise ForgeError(f"{target.source}: kustomize build failed: {detail}")
    return proc.stdout


def count_objects(text: str) -> int:
    return sum(1 for doc in text.split("\n---\n") if doc.strip())


def render_all(root: Path, out: Path | None = None, jobs: int | None = None) -> dict[str, int]:
    """Render everything; returns objects per cluster. The output folder is replaced whole."""
    out = out or root / RENDERED_DIR
    command = kustomize_build_command(root)
    todo = targets(root)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        texts = list(pool.map(lambda t: build(root, t, command), todo))
    staging = out.with_name(out.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    counts: dict[str, int] = {}
    for target, text in zip(todo, texts):
        path = staging / target.cluster / f"{target.component}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        counts[target.cluster] = counts.get(target.cluster, 0) + count_objects(text)
    swap_in(staging, out)
    return counts

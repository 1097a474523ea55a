"""`forge bench`: how long generate, render and validate take on the shipped inventory and on a
synthetic fleet, and forge's render+validate cost against bare `kustomize build` of the same
overlays run one after another (`ratio: X.XX`; the target is at most 1.0).

Everything runs in a temporary copy: the repo is never touched.
"""
from __future__ import annotations

import copy
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import click
import yaml

from forge.fleet import inventory_paths
from forge.generate import build_tree
from forge.paths import BASE_DIR, CLUSTERS_DIR, RENDERED_DIR
from forge.render import render_all, targets
from forge.tools import kustomize_build_command
from forge.validate.run import validate_repo
from forge.writer import write_tree


def _timed(func: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def copy_inputs(root: Path, dest: Path) -> None:
    for path in inventory_paths(root):
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    shutil.copytree(root / BASE_DIR, dest / BASE_DIR)
    shutil.copytree(root / "charts", dest / "charts")


def synthesize_fleet(root: Path, dest: Path, nodes: int, clusters: int) -> None:
    """`clusters` copies of the shipped H200 inventory with `nodes` GPU nodes spread over them."""
    template = yaml.safe_load((root / CLUSTERS_DIR / "h200" / "inventory.yaml").read_text(encoding="utf-8"))
    control_plane = [n for n in template["nodes"] if "gpu" not in n["roles"]]
    gpu_node = next(n for n in template["nodes"] if "gpu" in n["roles"] and not n.get("mig_layout"))
    for c in range(clusters):
        name = f"synth{c:02d}"
        inventory = copy.deepcopy(template)
        inventory["cluster"].update(name=name, expected={})
        inventory["cluster"]["argocd"]["project"] = f"forge-{name}"
        # A measured volume, as a real 100-node cluster would set; the estimate would ask for more
        # Loki replicas than three control-plane nodes hold.
        inventory.setdefault("components", {}).setdefault("loki", {})["daily_log_gb"] = 100
        for i, rail in enumerate(inventory["cluster"].get("network", {}).get("compute", {}).get("rails", [])):
            rail["cidr"] = f"10.{100 + i}.0.0/16"  # room for every synthetic node on each rail
        for queue in ((inventory["components"].get("kueue") or {}).get("projects") or {}).values():
            queue.pop("flavor_shares", None)  # no synthetic node is cut by MIG: there is no MIG pool to share
        inventory["nodes"] = [{**n, "name": n["name"].replace("h200", name)} for n in control_plane] + [
            {**gpu_node, "name": f"{name}-gpu-{i + 1:03d}", "rack": f"{name}-r{i // 4 + 1:02d}"}
            for i in range(nodes // clusters)
        ]
        path = dest / CLUSTERS_DIR / name / "inventory.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")
    shutil.copytree(root / BASE_DIR, dest / BASE_DIR)
    shutil.copytree(root / "charts", dest / "charts")


def bare_kustomize(root: Path) -> float:
    """Wall time of plain `kustomize build` of every overlay and bootstrap, one after another."""
    command = kustomize_build_command(root)
    started = time.perf_counter()
    for target in targets(root):
        subprocess.run([*command, str(root / target.source)], check=True, capture_output=True)
    return time.perf_counter() - started


def run_case(label: str, root: Path, upstream: Path | None) -> tuple[float, float]:
    t_gen, _ = _timed(lambda: write_tree(root, build_tree(root)))
    t_render, counts = _timed(lambda: render_all(root))
    t_validate, report = _timed(lambda: validate_repo(root, upstream, root / RENDERED_DIR))
    t_bare = bare_kustomize(root)
    objects = sum(counts.values())
    click.echo(f"[{label}] clusters={len(counts)} objects={objects} generate={t_gen:.2f}s render={t_render:.2f}s "
               f"validate={t_validate:.2f}s ({report.objects / t_validate:,.0f} objects/s, "
               f"{len(report.failures)} failures) bare-kustomize-sequential={t_bare:.2f}s")
    return t_render + t_validate, t_bare


def bench(root: Path, nodes: int, clusters: int, upstream: Path | None) -> float:
    with tempfile.TemporaryDirectory(prefix="forge-bench-") as tmp:
        shipped, synthetic = Path(tmp, "shipped"), Path(tmp, "synthetic")
        copy_inputs(root, shipped)
        synthesize_fleet(root, synthetic, nodes, clusters)
        forge_s, bare_s = run_case("shipped", shipped, upstream)
        click.echo(f"[shipped] ratio: {forge_s / bare_s:.2f}")
        forge_s, bare_s = run_case(f"synthetic {nodes} nodes / {clusters} clusters", synthetic, upstream)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    click.echo(f"peak memory: {peak_mib:.0f} MiB")
    ratio = forge_s / bare_s
    click.echo(f"ratio: {ratio:.2f}")
    return ratio

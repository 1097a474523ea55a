"""`forge bench`: how long generate, render and validate take on the shipped inventory and on a
synthetic fleet (cold, warm, after a one-node change, and `forge diff` of that change), against
bare `kustomize build` of the same overlays run one after another. The last line, `ratio: X.XX`,
is the shipped fleet's render+validate over bare kustomize (the target is at most 1.0). Every
figure is measured in the same run; the stages run in-process (no interpreter start-up).

Everything runs in a temporary copy: the repo is never touched.
"""
from __future__ import annotations

import copy
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable

import click
import yaml

from forge.diff import diff_against
from forge.errors import ForgeError
from forge.fleet import inventory_paths
from forge.fleet.unique import SHARED_BUCKETS
from forge.generate.incremental import generate
from forge.inventory.rings import RINGS_FILE
from forge.files.paths import BASE_DIR, CLUSTERS_DIR
from forge.render.overlays import render_all, targets
from forge.tools import kustomize_build_command
from forge.generate.cache import State
from forge.validate.cached import forget_crd_indexes, validate_incremental


def _timed(func: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def copy_inputs(root: Path, dest: Path) -> None:
    for path in inventory_paths(root):
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    if (root / RINGS_FILE).is_file():
        shutil.copy(root / RINGS_FILE, dest / RINGS_FILE)
    shutil.copytree(root / BASE_DIR, dest / BASE_DIR)
    shutil.copytree(root / "charts", dest / "charts")


def _own_names(inventory: dict, name: str) -> None:
    """The buckets it writes and its hosts renamed for the synthetic cluster: clusters share none
    (forge.fleet.unique)."""
    buckets = inventory["cluster"]["s3"]["buckets"]
    buckets.update({role: b.replace("h200", name) for role, b in buckets.items() if role not in SHARED_BUCKETS})

    def walk(data):
        for key, value in (data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()):
            if isinstance(value, str) and isinstance(key, str) and (key == "host" or key.endswith("_url")):
                data[key] = value.replace("h200", name)
            else:
                walk(value)

    walk(inventory.get("components", {}))


def synthesize_fleet(root: Path, dest: Path, nodes: int, clusters: int) -> None:
    """`clusters` copies of the shipped H200 inventory, each with `nodes` GPU nodes in racks of ten."""
    template = yaml.safe_load((root / CLUSTERS_DIR / "h200" / "inventory.yaml").read_text(encoding="utf-8"))
    control_plane = [n for n in template["nodes"] if "gpu" not in n["roles"]]
    gpu_node = next(n for n in template["nodes"] if "gpu" in n["roles"] and not n.get("mig_layout"))
    for c in range(clusters):
        name = f"synth{c:02d}"
        inventory = copy.deepcopy(template)
        inventory["cluster"].update(name=name, expected={})
        inventory["cluster"]["argocd"]["project"] = f"forge-{name}"
        # Each its own API server, as from a central Argo CD; the first cluster is the canary.
        inventory["cluster"]["argocd"]["destination"] = {"server": f"https://api.{name}.exa.internal:6443"}
        if "rollout" in inventory["cluster"]:
            inventory["cluster"]["rollout"]["ring"] = "canary" if c == 0 else "fleet"
        # A measured volume, as a real 100-node cluster would set; the estimate would ask for more
        # Loki replicas than three control-plane nodes hold.
        inventory.setdefault("components", {}).setdefault("loki", {})["daily_log_gb"] = 100
        rails = inventory["cluster"].get("network", {}).get("compute", {}).get("rails", [])
        for i, rail in enumerate(rails):
            block = c * len(rails) + i  # a /16 of 10/8 each: room for every synthetic node, none shared
            if block > 255:
                raise ForgeError(f"--clusters {clusters}: at most {256 // len(rails)} synthetic clusters get rails of their own")
            rail["cidr"] = f"10.{block}.0.0/16"
        _own_names(inventory, name)
        (inventory["components"].get("kueue") or {}).pop("burst", None)  # no cloud cluster to burst to here
        for queue in ((inventory["components"].get("kueue") or {}).get("projects") or {}).values():
            queue.pop("flavor_shares", None)  # no synthetic node is cut by MIG: there is no MIG pool to share
        inventory["nodes"] = [{**n, "name": n["name"].replace("h200", name)} for n in control_plane] + [
            {**gpu_node, "name": f"{name}-gpu-{i + 1:03d}", "rack": f"{name}-r{i // 10 + 1:02d}"}
            for i in range(nodes)
        ]
        path = dest / CLUSTERS_DIR / name / "inventory.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")
    shutil.copytree(root / BASE_DIR, dest / BASE_DIR)
    shutil.copytree(root / "charts", dest / "charts")
    if (root / RINGS_FILE).is_file():
        shutil.copy(root / RINGS_FILE, dest / RINGS_FILE)


def change_one_node(root: Path, cluster: str) -> str:
    """Give the first GPU node of `cluster` another MIG layout (a one-node pull request)."""
    path = root / CLUSTERS_DIR / cluster / "inventory.yaml"
    inventory = yaml.safe_load(path.read_text(encoding="utf-8"))
    layout = sorted(inventory["cluster"].get("mig_layouts") or {})[0]
    node = next(n for n in inventory["nodes"] if "gpu" in n["roles"])
    node["mig_layout"] = layout
    path.write_text(yaml.safe_dump(inventory, sort_keys=False), encoding="utf-8")
    return f"{node['name']} mig_layout -> {layout}"


def bare_kustomize(root: Path) -> float:
    """Wall time of plain `kustomize build` of every overlay and bootstrap, one after another."""
    command = kustomize_build_command(root)
    started = time.perf_counter()
    for target in targets(root):
        subprocess.run([*command, str(root / target.source)], check=True, capture_output=True)
    return time.perf_counter() - started


@dataclass
class Stages:
    generate: float
    render: float
    validate: float
    objects: int
    failures: int

    @property
    def total(self) -> float:
        return self.generate + self.render + self.validate

    def line(self) -> str:
        return (f"generate={self.generate:.2f}s render={self.render:.2f}s validate={self.validate:.2f}s "
                f"total={self.total:.2f}s")


def run_stages(root: Path, upstream: Path | None, jobs: int | None) -> Stages:
    """generate, render and validate as the CLI runs them (incremental, `jobs` workers)."""
    t_gen, _ = _timed(lambda: generate(root, jobs))
    t_render, counts = _timed(lambda: render_all(root, jobs=jobs))
    t_validate, (report, _) = _timed(lambda: validate_incremental(root, upstream, jobs=jobs))
    return Stages(t_gen, t_render, t_validate, sum(counts.values()), len(report.failures))


COLD_VALIDATIONS = 3


def cold_validation(root: Path, upstream: Path | None, jobs: int | None) -> float:
    """Seconds of one more cold validation of what is rendered: validate's stored results and
    digests, and this process's CRD index, are dropped first, so it pays all the first one did."""
    for name in ("validate", "validate-inputs"):
        State(root, name).path.unlink(missing_ok=True)
    forget_crd_indexes()
    seconds, _ = _timed(lambda: validate_incremental(root, upstream, jobs=jobs))
    return seconds


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@dataclass(frozen=True)
class Row:
    """One benchmark of the table: forge's seconds against bare kustomize's on the same fleet."""

    benchmark: str
    seconds: float
    baseline: float  # bare `kustomize build` of the same overlays, one after another

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline if self.baseline else 0.0


@dataclass
class Result:
    """What `forge bench` measured, as rows (`forge bench --svg` draws them: forge.bench.chart)."""

    rows: list[Row]
    ratio: float = 0.0  # the headline: the shipped fleet's render+validate over bare kustomize
    title: str = "forge bench"


def bench_shipped(root: Path, tmp: Path, upstream: Path | None, jobs: int | None, result: Result) -> float:
    shipped = tmp / "shipped"
    copy_inputs(root, shipped)
    cold = run_stages(shipped, upstream, jobs)
    bare = bare_kustomize(shipped)
    ratio = (cold.render + cold.validate) / bare
    click.echo(f"[shipped] objects={cold.objects} {cold.line()} ({cold.objects / cold.validate:,.0f} objects/s, "
               f"{cold.failures} failures) bare-kustomize-sequential={bare:.2f}s ratio(render+validate)={ratio:.2f}")
    result.rows.append(Row("shipped: render+validate", cold.render + cold.validate, bare))
    return ratio


Extra = Callable[[Path, str], None]  # more lines over the synthetic fleet (the CLI passes forge.rollout's)


def bench_synthetic(root: Path, tmp: Path, nodes: int, clusters: int, upstream: Path | None, jobs: int | None,
                    extra: Extra | None = None, result: Result | None = None) -> None:
    synth = tmp / "synthetic"
    synthesize_fleet(root, synth, nodes, clusters)
    label = f"[synthetic {clusters} clusters x {nodes} GPU nodes]"
    cold = run_stages(synth, upstream, jobs)
    bare = bare_kustomize(synth)
    click.echo(f"{label} objects={cold.objects} cold: {cold.line()} ({cold.failures} failures)")
    # This machine's speed swings by a third from minute to minute: the throughput is the median of
    # three cold validations of the same output, each printed.
    runs = [cold.validate] + [cold_validation(synth, upstream, jobs) for _ in range(COLD_VALIDATIONS - 1)]
    click.echo(f"{label} validation: {cold.objects / statistics.median(runs):,.0f} objects/s (cold, parsing included; "
               f"median of {len(runs)} cold runs: {', '.join(f'{cold.objects / t:,.0f}' for t in runs)})")
    click.echo(f"{label} bare-kustomize-sequential={bare:.2f}s cold-ratio (generate+render+validate)/bare={cold.total / bare:.2f}")
    warm = run_stages(synth, upstream, jobs)
    click.echo(f"{label} warm, nothing changed: {warm.line()}")
    (synth / ".gitignore").write_text("build/\n.cache/\n.forge-staging*/\n", encoding="utf-8")
    _git(synth, "init", "-q")
    _git(synth, "add", "-A")
    _git(synth, "-c", "user.name=bench", "-c", "user.email=bench@forge", "commit", "-q", "-m", "fleet")
    what = change_one_node(synth, "synth00")
    one = run_stages(synth, upstream, jobs)
    click.echo(f"{label} one-node change ({what}): {one.line()}")
    t_diff, report = _timed(lambda: diff_against(synth, "HEAD"))
    click.echo(f"{label} forge diff --base HEAD: {t_diff:.2f}s ({len(report.changes)} changes)")
    if result is not None:
        short = f"synthetic {clusters}x{nodes}"
        result.rows += [Row(f"{short}: cold generate+render+validate", cold.total, bare),
                        Row(f"{short}: warm, nothing changed", warm.total, bare),
                        Row(f"{short}: one-node change", one.total, bare),
                        Row(f"{short}: forge diff of it", t_diff, bare)]
    if extra is not None:
        extra(synth, label)


def bench(root: Path, nodes: int, clusters: int, upstream: Path | None, jobs: int | None = None,
          extra: Extra | None = None, result: Result | None = None) -> float:
    """Run every benchmark, printing the table; `result` (when given) receives its rows."""
    result = result if result is not None else Result([])
    with tempfile.TemporaryDirectory(prefix="forge-bench-") as tmp:
        ratio = bench_shipped(root, Path(tmp), upstream, jobs, result)
        bench_synthetic(root, Path(tmp), nodes, clusters, upstream, jobs, extra, result)
    result.ratio = ratio
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    click.echo(f"peak memory: {own:.0f} MiB (forge), {workers:.0f} MiB (largest worker or kustomize)")
    click.echo(f"ratio: {ratio:.2f}")
    return ratio

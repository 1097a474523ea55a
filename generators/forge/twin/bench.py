"""`forge bench`'s box lines: for each cluster with scenarios, in a temporary copy of the repo, a
box started warm (its programs already in the cache), every Application applied as Argo CD would,
every scenario run (each cleaned up after), the box stopped. Printed per cluster: the wall time
of each part and of the whole, the apply rate, and both against their targets as ratios (apply
at least APPLY_TARGET objects/s; the whole within WALL_TARGET seconds). Figures, never asserts.

A cold cache is not built here (it takes the better part of half an hour): the lines say so and
`make twin` builds it once.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import click

from forge.bench.pipeline import copy_inputs
from forge.fleet import load_fleet
from forge.generate.incremental import generate
from forge.files.paths import CLUSTERS_DIR
from forge.render.overlays import render_all
from forge.twin.binaries import Builder
from forge.twin.box import box_syncer, running_box, state_folder
from forge.twin.kube import connect
from forge.twin.pins import TOOLS_FILE, argocd_crds_dir, box_pins
from forge.twin.pki import Pki
from forge.twin.run import box_runner
from forge.twin.scenario import SCENARIOS_FILE, load_scenarios
from forge.twin.sources import applications
from forge.twin.tasks import resolve
from forge.workflows.targets import WORKFLOWS_DIR

APPLY_TARGET = 150.0  # objects/s: a real API server takes 250-320 over keep-alive
WALL_TARGET = 60.0  # seconds per fleet, warm: start, apply, every scenario, stop


def _quiet(line: str) -> None:
    """The box's own progress lines are not the bench's."""


def programs_cached(root: Path) -> bool:
    builder = Builder(root, box_pins(root), _quiet)
    return all((builder.folder(p) / ".complete").is_file() for p in builder.pins.programs)


def _copy(root: Path, dest: Path) -> None:
    """What a box needs of the repo: the inputs generate reads, the box's pins and builder
    modules (they name the cached programs), the scenarios and the workflows their jobs name."""
    copy_inputs(root, dest)
    shutil.copytree(root / "ci", dest / "ci")
    if (root / WORKFLOWS_DIR).is_dir():
        shutil.copytree(root / WORKFLOWS_DIR, dest / WORKFLOWS_DIR, ignore=shutil.ignore_patterns("__pycache__"))
    for scenarios in sorted((root / CLUSTERS_DIR).glob(f"*/{SCENARIOS_FILE}")):
        shutil.copy(scenarios, dest / scenarios.relative_to(root))


def bench_fleet(root: Path, cluster: str, upstream: Path) -> float:
    """One cluster's box, warm, as `forge twin run CLUSTER` runs it: prints its line, returns its
    wall time."""
    plan = next(p for p in load_fleet(root) if p.name == cluster)
    scenarios = resolve(root, load_scenarios(root, cluster))
    apps = applications(root, plan, upstream, argocd_crds_dir(root, upstream))
    started = time.monotonic()
    with running_box(root, plan, upstream, _quiet) as state:
        up = time.monotonic() - started
        pki = Pki(state_folder(root, cluster) / "pki")
        kube = connect(state.server, pki.token(), pki.ca)
        report = box_syncer(kube, state, plan, _quiet).sync(apps)
        runner = box_runner(root, kube, plan, _quiet)
        ran = time.monotonic()
        failed = [s.name for s in scenarios if not runner.run(s).passed]
        passed = len(scenarios) - len(failed)
        ran = time.monotonic() - ran
        kube.close()
        stopping = time.monotonic()
    down = time.monotonic() - stopping
    total = time.monotonic() - started
    click.echo(f"[box {cluster}] up={up:.1f}s apply={report.seconds:.1f}s ({report.applied} objects, "
               f"{report.rate:.0f} objects/s, {len(report.refused)} refused, {report.already} CRDs held from the start; ratio to {APPLY_TARGET:.0f}/s: "
               f"{report.rate / APPLY_TARGET:.2f}) scenarios={ran:.1f}s ({passed} of {len(scenarios)} passed"
               f"{'; failed: ' + ', '.join(failed) if failed else ''}, cleanups included) down={down:.1f}s total={total:.1f}s (ratio to {WALL_TARGET:.0f} s: {total / WALL_TARGET:.2f})")
    return total


def bench_twin(root: Path, upstream: Path | None) -> None:
    """Every cluster with scenarios, one box at a time."""
    if upstream is None:
        click.echo("[box] skipped: the box applies the charts' CRDs from the upstream data (set FORGE_UPSTREAM)")
        return
    if not (root / TOOLS_FILE).is_file() or not programs_cached(root):
        click.echo("[box] skipped: the box's programs are not built (`make twin` builds them once, cold)")
        return
    with tempfile.TemporaryDirectory(prefix="forge-bench-twin-") as tmp:
        copy = Path(tmp) / "repo"
        _copy(root, copy)
        generate(copy, None)
        render_all(copy)
        clusters = sorted(p.parent.name for p in (copy / CLUSTERS_DIR).glob(f"*/{SCENARIOS_FILE}"))
        walls = [bench_fleet(copy, c, upstream) for c in clusters]
    slowest = max(walls, default=0.0)
    click.echo(f"[box] slowest fleet, warm: {slowest:.1f}s (ratio to {WALL_TARGET:.0f} s: {slowest / WALL_TARGET:.2f})")

"""`forge promote RING` and `forge rings` (docs/rollout.md)."""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import click

from forge.commands.common import EXIT_FOUND, root_option, user_errors
from forge.errors import ForgeError


def _now(value: str | None) -> dt.datetime:
    if value is None:
        return dt.datetime.now(dt.timezone.utc)
    try:
        stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ForgeError(f"--now: '{value}' is not a time: give ISO 8601 such as 2026-12-02T04:00:00Z") from None
    if stamp.tzinfo is None:
        raise ForgeError(f"--now: '{value}' has no time zone: add Z or +00:00")
    return stamp


def load(root: Path):
    from forge.fleet import load_fleet
    from forge.rollout.rings import check_clusters, load_rings

    fleet, rings = load_fleet(root), load_rings(root)
    check_clusters(fleet, rings)
    return fleet, rings


@click.command()
@root_option
@click.argument("ring")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="The git repository whose ring branches move (default: --root).")
@click.option("--remote", default=None, metavar="NAME",
              help="Read the ring branches from this remote and push the move there (with a lease).")
@click.option("--to", "to", default=None, metavar="REV",
              help="Roll back: move the ring's ref to this earlier commit it ran, without gates.")
@click.option("--dry-run", is_flag=True, help="Decide and print, move nothing.")
@click.option("--accept", "accept", default=None, metavar="REASON",
              help="Promote although GPU nodes of the ring before are not ready (the GPU Operator's per-node "
                   "operands only); the nodes and REASON are kept as a git note (refs/notes/forge/accepted).")
@click.option("--now", "now", default=None, hidden=True, help="The time gates are judged at (ISO 8601; tests).")
@user_errors
def promote(root: Path, ring: str, repo: Path | None, remote: str | None, to: str | None, dry_run: bool,
            accept: str | None, now: str | None) -> None:
    """Move RING's ref (forge/ring/RING) to the commit the ring before it runs, only when that
    ring passes its gates; prints why not (exit 1). The first ring is promoted from the source
    branch (clusters/rings.yaml)."""
    from forge.rollout.promote import promote as run
    from forge.rollout.refs import Repo

    fleet, rings = load(root)
    decision = run(fleet, rings, ring, Repo(repo or root, remote), _now(now), to, dry_run, accept)
    for line in decision.lines():
        click.echo(line, err=not decision.allowed)
    if not decision.allowed:
        sys.exit(EXIT_FOUND)


@click.command()
@root_option
@user_errors
def rings(root: Path) -> None:
    """The rings in rollout order: soak time, gate alerts, clusters."""
    from forge.rollout.rings import members

    fleet, found = load(root)
    click.echo(f"source: {found.source}")
    for ring in found.order:
        names = ", ".join(c.name for c in members(fleet, ring.name)) or "(no clusters)"
        alerts = ", ".join(ring.gates.alerts) or "none"
        click.echo(f"{ring.name}: soak {ring.soak_minutes} min, alerts {alerts}; clusters {names}")


@click.command()
@root_option
@click.option("--all", "everyone", is_flag=True, help="Every cluster, not only those with cluster.rollout.central.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write them into (default: build/central/).")
@user_errors
def appsets(root: Path, everyone: bool, out: Path | None) -> None:
    """The central Argo CD's objects: one ApplicationSet per component over the cluster
    generator, each cluster's Secret as an ExternalSecret, the controller's sharding values."""
    from forge.files import emit
    from forge.rollout.appset import central_clusters, central_objects

    fleet, _ = load(root)
    clusters = central_clusters(fleet, everyone)
    if not clusters:
        raise ForgeError("no cluster sets cluster.rollout.central: true (--all: every cluster)")
    folder = out or root / "build" / "central"
    files = central_objects(fleet, clusters)
    texts = {name: emit.yaml_file(__name__, "the inventories", [obj]) for name, obj in files.items()}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            (folder / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ForgeError(f"--out: cannot write {folder} ({exc.strerror}): name a folder you may write") from None
    click.echo(f"wrote {len(files)} files for {len(clusters)} clusters into {folder}")

"""`forge node add|remove|set`: routine inventory edits that keep the file's comments and layout.

Each command computes the new text (edits.py), validates it with the inventory loader, writes it
atomically, then regenerates the overlays. If regeneration fails, the inventory is put back.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from forge.commands.common import root_option, user_errors
from forge.errors import ForgeError
from forge.nodes import edits
from forge.files.paths import CLUSTERS_DIR, INVENTORY_FILE


def inventory_file(root: Path, cluster: str) -> tuple[Path, str]:
    path = root / CLUSTERS_DIR / cluster / INVENTORY_FILE
    if not path.is_file():
        known = sorted(p.parent.name for p in (root / CLUSTERS_DIR).glob(f"*/{INVENTORY_FILE}"))
        raise ForgeError(f"no cluster '{cluster}': {CLUSTERS_DIR}/{cluster}/{INVENTORY_FILE} does not exist (clusters: {', '.join(known) or 'none'})")
    return path, path.relative_to(root).as_posix()


def _neighbours(root: Path):
    """The fleet's other inventories, under `root` whatever the working folder (a burst link reads them)."""
    from forge.fleet.links import on_disk

    return on_disk(root / CLUSTERS_DIR)


def write_atomically(path: Path, text: str) -> None:
    """Write next to the file, then rename over it: a reader sees the old file or the new one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".forge-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply(root: Path, path: Path, edit: edits.Edit, generate: bool) -> list[str]:
    """Write the edit, regenerate; on a failed regeneration put the old file back."""
    from forge.files.lock import repo_lock

    with repo_lock(root, "node"):
        return _apply(root, path, edit, generate)


def _apply(root: Path, path: Path, edit: edits.Edit, generate: bool) -> list[str]:
    from forge.generate.tree import build_tree
    from forge.generate.writer import write_tree

    write_atomically(path, edit.new_text)
    if not generate:
        return ["overlays not regenerated (--no-generate): run `make generate` before committing"]
    try:
        from forge.generate.handedits import refuse

        tree = build_tree(root)
        refuse(root, sorted({rel.split("/")[1] for rel in tree.files}))  # never lose a hand edit
        write_tree(root, tree)
    except BaseException:
        write_atomically(path, edit.old_text)
        click.echo(f"regeneration failed: {edit.file} was put back as it was", err=True)
        raise
    return [f"regenerated {len(tree.files)} files"]


def _read(root: Path, cluster: str) -> tuple[Path, str, str]:
    path, display = inventory_file(root, cluster)
    return path, display, path.read_text(encoding="utf-8")


def _report(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)


generate_option = click.option("--generate/--no-generate", default=True, show_default=True,
                               help="Regenerate overlays after writing the inventory.")


@click.group("node")
def node() -> None:
    """Add, remove or change nodes in clusters/<cluster>/inventory.yaml, keeping its comments.

    Each edit is validated with the inventory's own rules before anything is written.
    """


@node.command("add")
@root_option
@click.argument("cluster")
@click.argument("name")
@click.option("--profile", required=True, help="Hardware profile (profiles: in the inventory).")
@click.option("--rack", required=True)
@click.option("--roles", help="Comma-separated, e.g. gpu or control-plane,system (default: gpu for a GPU profile).")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Repeatable.")
@click.option("--taint", "taints", multiple=True, metavar="KEY[=VALUE]:EFFECT", help="Repeatable.")
@click.option("--mig-layout", help="A layout of cluster.mig_layouts (default: the profile's).")
@click.option("--like", metavar="NODE", help="Copy roles, labels, taints and MIG layout from this node "
              "(without it, a GPU node takes the taints every node of its profile has, or nvidia.com/gpu:NoSchedule).")
@click.option("--new-rack", is_flag=True, help="The rack is new to the cluster (else a rack no node is in is refused as a typo).")
@generate_option
@user_errors
def add(root: Path, cluster: str, name: str, profile: str, rack: str, roles: str | None, labels: tuple[str, ...],
        taints: tuple[str, ...], mig_layout: str | None, like: str | None, new_rack: bool, generate: bool) -> None:
    """Add node NAME to CLUSTER, after the last node of the same profile."""
    path, display, text = _read(root, cluster)
    edit = edits.add_node(
        text, display, name, profile, rack, roles=edits.parse_roles(roles) if roles else None,
        labels=dict(map(edits.parse_label, labels)), taints=[edits.parse_taint(t) for t in taints],
        mig_layout=mig_layout, like=like, new_rack=new_rack, neighbours=_neighbours(root),
    )
    _report(edit.messages + apply(root, path, edit, generate))


@node.command("remove")
@root_option
@click.argument("cluster")
@click.argument("name")
@generate_option
@user_errors
def remove(root: Path, cluster: str, name: str, generate: bool) -> None:
    """Remove node NAME from CLUSTER, reporting what it carried."""
    path, display, text = _read(root, cluster)
    edit = edits.remove_node(text, display, name, neighbours=_neighbours(root))
    _report(edit.messages + apply(root, path, edit, generate))


@node.command("set")
@root_option
@click.argument("cluster")
@click.argument("name")
@click.option("--profile")
@click.option("--rack")
@click.option("--roles", help="Comma-separated; replaces the node's roles.")
@click.option("--mig-layout", help=f"A layout of cluster.mig_layouts, or '{edits.NONE}' for the profile's.")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Add or change a label. Repeatable.")
@click.option("--unlabel", multiple=True, metavar="KEY", help="Remove a label. Repeatable.")
@click.option("--taint", "taints", multiple=True, metavar="KEY[=VALUE]:EFFECT", help="Add a taint. Repeatable.")
@click.option("--untaint", multiple=True, metavar="KEY[:EFFECT]", help="Remove a taint. Repeatable.")
@generate_option
@user_errors
def set_(root: Path, cluster: str, name: str, profile: str | None, rack: str | None, roles: str | None,
         mig_layout: str | None, labels: tuple[str, ...], unlabel: tuple[str, ...], taints: tuple[str, ...],
         untaint: tuple[str, ...], generate: bool) -> None:
    """Change node NAME of CLUSTER (a MIG layout, its rack, labels, taints...)."""
    path, display, text = _read(root, cluster)
    edit = edits.set_node(
        text, display, name, profile=profile, rack=rack, roles=edits.parse_roles(roles) if roles else None,
        mig_layout=mig_layout, labels=dict(map(edits.parse_label, labels)), unlabel=list(unlabel),
        taints=[edits.parse_taint(t) for t in taints], untaint=list(untaint), neighbours=_neighbours(root),
    )
    _report(edit.messages + apply(root, path, edit, generate))

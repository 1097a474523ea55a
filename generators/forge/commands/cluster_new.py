"""`forge cluster new NAME --from CLUSTER`: a new cluster's inventory copied from another's, with
every name two clusters must not share renamed (forge.fleet.unique): the cluster name, node and
rack names, the buckets it writes, its hosts, its Argo CD project, and its rail CIDRs moved to
the next free block. The file is copied as text, so its comments and layout stay; each rename is
listed for review. The fleet is loaded with the copy in place before anything stays written."""
from __future__ import annotations

import ipaddress
import re
from pathlib import Path

from forge.errors import ForgeError, InventoryError
from forge.fleet import inventory_paths, load_fleet, load_plan
from forge.fleet.unique import _cidrs, unique_names
from forge.inventory.loader import LoadedInventory
from forge.files.paths import CLUSTERS_DIR, INVENTORY_FILE

NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")


def _renamed(value: str, old: str, new: str) -> str:
    swapped = re.sub(rf"(?<![a-z0-9]){re.escape(old)}(?![a-z0-9])", new, value)
    return swapped if swapped != value else f"{new}-{value}"


def _free_cidrs(nets: list, taken: list) -> list:
    """`nets` moved together by whole multiples of their span until they overlap nothing taken."""
    if not nets:
        return []
    low = min(int(n.network_address) for n in nets)
    span = max(int(n.broadcast_address) for n in nets) - low + 1
    for k in range(1, 4096):
        moved = [ipaddress.ip_network(f"{ipaddress.ip_address(int(n.network_address) + k * span)}/{n.prefixlen}") for n in nets]
        if all(a.is_private == b.is_private for a, b in zip(moved, nets)) and \
                not any(m.overlaps(t) for m in moved for t in taken if m.version == t.version):
            return moved
    raise ForgeError("no free block for the rails' CIDRs next to the source cluster's: set them by hand")


def copy_text(source: LoadedInventory, text: str, new: str, taken: list) -> tuple[str, list[str]]:
    old = source.inventory.cluster.name
    edits: list[tuple[tuple, str, str]] = [(("cluster", "name"), old, new)]
    for i, node in enumerate(source.inventory.nodes):
        edits.append((("nodes", i, "name"), node.name, _renamed(node.name, old, new)))
        edits.append((("nodes", i, "rack"), node.rack, _renamed(node.rack, old, new)))
    edits += [(path, value, _renamed(value, old, new)) for _, value, path in unique_names(source)]
    nets = _cidrs(source)
    edits += [(path, str(net), str(moved)) for (net, path), moved in zip(nets, _free_cidrs([n for n, _ in nets], taken))]
    lines = text.splitlines(keepends=True)
    said = []
    for path, before, after in edits:
        i = source.line_of(path) - 1
        at = lines[i].lower().find(before.lower())
        if at < 0:
            raise ForgeError(f"{source.file}:{i + 1}: {'.'.join(map(str, path))}: '{before}' not found on its line: copy by hand")
        lines[i] = lines[i][:at] + after + lines[i][at + len(before):]
        if path[0] != "nodes":
            said.append(f"{'.'.join(map(str, path))}: {before} -> {after}")
    said.append(f"nodes: {len(source.inventory.nodes)} names and racks renamed ({source.inventory.nodes[0].name} -> "
                f"{_renamed(source.inventory.nodes[0].name, old, new)}, ...)" if source.inventory.nodes else "nodes: none")
    header = f"# Copied from {source.file} by `forge cluster new {new} --from {old}`: review every value below.\n"
    return header + "".join(lines), said


def new_cluster(root: Path, name: str, source: str) -> tuple[Path, list[str]]:
    if not NAME.match(name):
        raise ForgeError(f"cluster name '{name}': lower-case letters, digits and '-', at most 32 characters")
    src = root / CLUSTERS_DIR / source / INVENTORY_FILE
    if not src.is_file():
        known = ", ".join(p.parent.name for p in inventory_paths(root)) or "none"
        raise ForgeError(f"--from {source}: no {CLUSTERS_DIR}/{source}/{INVENTORY_FILE} (clusters: {known})")
    dest = root / CLUSTERS_DIR / name / INVENTORY_FILE
    if dest.parent.exists():
        raise ForgeError(f"{CLUSTERS_DIR}/{name}/: already exists; pick another name or remove it")
    fleet = load_fleet(root)  # the fleet as it is must be sound first
    loaded = load_plan(src, src.relative_to(root).as_posix(), folder=source).loaded
    taken = [net for plan in fleet for net, _ in _cidrs(plan.loaded)]
    text, said = copy_text(loaded, src.read_text(encoding="utf-8"), name, taken)
    dest.parent.mkdir(parents=True)
    try:
        dest.write_text(text, encoding="utf-8")
        load_fleet(root)
    except (InventoryError, OSError):
        dest.unlink(missing_ok=True)
        dest.parent.rmdir()
        raise
    return dest, said

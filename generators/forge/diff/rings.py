"""Which ring each change reaches first (docs/rollout.md): the changed clusters grouped by the
ring their inventory names, in clusters/rings.yaml's order. A cluster without a ring follows
git.revision: a change reaches it as soon as it is merged."""
from __future__ import annotations

from pathlib import Path

import yaml

from forge.inventory.rings import RINGS_FILE, load_rings_file
from forge.files.paths import CLUSTERS_DIR, INVENTORY_FILE

NO_RING = "(no ring: on merge)"


def ring_of(root: Path, cluster: str) -> str | None:
    """The ring the working tree's inventory of `cluster` names (None: none, or no inventory)."""
    try:
        data = yaml.safe_load((root / CLUSTERS_DIR / cluster / INVENTORY_FILE).read_text(encoding="utf-8"))
        ring = data["cluster"]["rollout"]["ring"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None
    return ring if isinstance(ring, str) else None


def reach(root: Path, clusters: list[str]) -> list[tuple[str, list[str]]]:
    """(ring, its changed clusters) in the order the change reaches them: clusters without a
    ring first (they get it on merge), then the rings of clusters/rings.yaml in order."""
    order = [r.name for r in load_rings_file(root).rings] if (root / RINGS_FILE).is_file() else []
    by_ring: dict[str, list[str]] = {}
    for cluster in sorted(clusters):
        by_ring.setdefault(ring_of(root, cluster) or NO_RING, []).append(cluster)
    rank = {NO_RING: -1, **{name: i for i, name in enumerate(order)}}
    return sorted(by_ring.items(), key=lambda item: (rank.get(item[0], len(order)), item[0]))


def reach_line(steps: list[tuple[str, list[str]]]) -> str | None:
    if not steps:
        return None
    parts = [f"{ring} ({', '.join(clusters)})" for ring, clusters in steps]
    return "reaches first: " + parts[0] + "".join(f", then {p}" for p in parts[1:])

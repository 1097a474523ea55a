"""clusters/rings.yaml: the rings in rollout order, each with its soak time and gates, checked
against the clusters that name them (`file:line: field: message`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forge.argocd.bootstrap import ring_ref
from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import Fleet
from forge.inventory.rings import RINGS_FILE, Gates, Ring, RingsFile, load_rings_file
from forge.model.cluster import ClusterModel

__all__ = ["RINGS_FILE", "Gates", "Ring", "RingsFile", "Rings", "load_rings", "check_clusters", "members", "ring_of"]


@dataclass(frozen=True)
class Rings:
    source: str
    order: tuple[Ring, ...]

    def names(self) -> list[str]:
        return [r.name for r in self.order]

    def get(self, name: str) -> Ring:
        for ring in self.order:
            if ring.name == name:
                return ring
        raise ForgeError(f"{RINGS_FILE}: no ring '{name}': name one of {', '.join(self.names())}")

    def previous(self, name: str) -> Ring | None:
        """The ring before `name` (None: the first ring, promoted from `source`)."""
        index = self.names().index(self.get(name).name)
        return self.order[index - 1] if index else None

    def ref(self, name: str) -> str:
        return ring_ref(self.get(name).name)


def load_rings(root: Path) -> Rings:
    data = load_rings_file(root)
    return Rings(data.source, tuple(data.rings))


def check_clusters(fleet: Fleet, rings: Rings) -> None:
    """Every cluster that names a ring names one of the file's, at the inventory's line."""
    problems: list[Problem] = []
    for plan in fleet:
        rollout = plan.loaded.inventory.cluster.rollout
        if rollout and rollout.ring not in rings.names():
            problems.append(plan.loaded.problem(("cluster", "rollout", "ring"),
                                                f"ring '{rollout.ring}' is not in {RINGS_FILE}: name one of {', '.join(rings.names())}"))
    if problems:
        raise InventoryError(problems)


def members(fleet: Fleet, ring: str) -> list[ClusterModel]:
    return [c for c in fleet.clusters if c.settings.rollout and c.settings.rollout.ring == ring]


def ring_of(cluster: ClusterModel) -> str | None:
    return cluster.settings.rollout.ring if cluster.settings.rollout else None

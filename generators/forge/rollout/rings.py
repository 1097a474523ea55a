"""clusters/rings.yaml: the rings in rollout order, each with its soak time and gates, checked
against the clusters that name them (`file:line: field: message`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Iterable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from forge import datafile
from forge.argocd import ring_ref
from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import Fleet
from forge.inventory.schema import Name
from forge.model import ClusterModel
from forge.paths import CLUSTERS_DIR

RINGS_FILE = Path(CLUSTERS_DIR, "rings.yaml")
def _alert_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z_:][A-Za-z0-9_:]*", value):
        raise ValueError(f"'{value}' is not an alert name: letters, digits, '_' and ':', not starting with a digit "
                         "(the alertname of a Prometheus rule, such as GpuXidCriticalError)")
    return value


AlertName = Annotated[str, AfterValidator(_alert_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Gates(_Strict):
    """What must hold in a ring, for its soak time, before the next ring gets what it runs. Every
    Application Synced and Healthy and no GPU node held in (or failed after) a driver upgrade
    always; these alerts too."""

    alerts: list[AlertName] = []


class Ring(_Strict):
    name: Name
    soak_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)]
    gates: Gates = Gates()


class RingsFile(_Strict):
    # What the first ring is promoted from: the branch changes are merged to.
    source: Annotated[str, Field(min_length=1)] = "main"
    rings: Annotated[list[Ring], Field(min_length=1)]

    def rules(self) -> Iterable[tuple[tuple, str]]:
        seen: dict[str, int] = {}
        for i, ring in enumerate(self.rings):
            if ring.name in seen:
                yield ("rings", i, "name"), f"ring '{ring.name}' is listed twice (first as rings[{seen[ring.name]}]): each ring once, in rollout order"
            seen.setdefault(ring.name, i)


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
    data = datafile.load(root / RINGS_FILE, RingsFile, RINGS_FILE.as_posix(), rules=RingsFile.rules)
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

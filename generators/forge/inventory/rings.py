"""clusters/rings.yaml, the fleet's rollout rings in order (docs/rollout.md): its shape and its
reading, with `file:line` errors. forge.rollout acts on it; forge diff reads the order."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Iterable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from forge.files import datafile
from forge.inventory.schema import Name
from forge.files.paths import CLUSTERS_DIR

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


def load_rings_file(root: Path) -> RingsFile:
    return datafile.load(root / RINGS_FILE, RingsFile, RINGS_FILE.as_posix(), rules=RingsFile.rules, root=root)

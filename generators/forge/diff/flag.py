"""A risk flag, what forge diff puts before the field-level detail (forge.diff.risks)."""
from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("high", "medium", "low")
# Kinds listed before every other flag of their level (forge.diff.driver_risks: two drivers at once).
FIRST_KINDS = ("drivers",)


@dataclass(frozen=True)
class Flag:
    level: str  # high | medium | low
    cluster: str  # "*" for a repo-wide fact (charts/versions.yaml)
    component: str
    kind: str  # drivers | prune | crd | restart | mig | quota | queue | chart | git | capacity | twin (docs/cli.md: forge diff -o json)
    message: str

    @property
    def sort_key(self) -> tuple:
        first = FIRST_KINDS.index(self.kind) if self.kind in FIRST_KINDS else len(FIRST_KINDS)
        return (LEVELS.index(self.level), first, self.cluster, self.component, self.kind, self.message)


def names(items: list[str], limit: int = 6) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")

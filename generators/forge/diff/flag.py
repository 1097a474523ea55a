"""A risk flag, what forge diff puts before the field-level detail (forge.diff.risks)."""
from __future__ import annotations

from dataclasses import dataclass

LEVELS = ("high", "medium", "low")


@dataclass(frozen=True)
class Flag:
    level: str  # high | medium | low
    cluster: str  # "*" for a repo-wide fact (charts/versions.yaml)
    component: str
    kind: str  # prune | crd | restart | mig | quota | queue | chart | git | capacity
    message: str

    @property
    def sort_key(self) -> tuple:
        return (LEVELS.index(self.level), self.cluster, self.component, self.kind, self.message)


def names(items: list[str], limit: int = 6) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")

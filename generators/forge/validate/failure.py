"""The one shape every validation problem takes, so `forge validate` prints one line each."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Failure:
    cluster: str
    component: str
    object: str  # "Kind/namespace/name", "Kind/name" for cluster-scoped, or a file for values
    path: str  # field path inside the object, dotted ("spec.template.spec.containers[0].image")
    reason: str

    def line(self) -> str:
        return f"{self.cluster} / {self.component} / {self.object} / {self.path or '-'} / {self.reason}"

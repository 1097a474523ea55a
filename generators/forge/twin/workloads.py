"""What a scenario's words mean on the plan and in Kueue's answers: `whole-pool` in nodes, a
Workload's conditions, and the shortfall per flavor Kueue's message states."""
from __future__ import annotations

import re
from typing import Any

from forge.diff.amounts import quantity
from forge.fleet import ClusterPlan
from forge.model.capacity import MEMORY, capacity, node_resources


def whole_pool(plan: ClusterPlan, resources: dict[str, str]) -> int:
    """Nodes of the largest pool whose allocatable holds one replica of `resources`."""
    def fits(node) -> bool:
        have = node_resources(plan.cluster, node)
        return all(float(quantity(q) or 0) <= (have.get(r, 0) * (2**30 if r == MEMORY else 1)) for r, q in resources.items())
    return max((sum(1 for n in pool.nodes if fits(n)) for pool in capacity(plan.cluster).pools), default=0)


def condition(wl: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def is_true(wl: dict[str, Any], kind: str) -> bool:
    c = condition(wl, kind)
    return bool(c and c.get("status") == "True")


_INSUFFICIENT = re.compile(r"insufficient quota for (\S+) in flavor ([^,\s]+), .*?current podset request \((\d+)(\w*)\) "
                           r"> maximum capacity \((\d+)(\w*)\)")


def shortfall(message: str) -> str:
    """Kueue says `insufficient quota for R in flavor F, ... request (128) > maximum capacity (126)`
    per flavor it tried:
    what each flavor lacks, in Kueue's units (the request against what the queue can reach)."""
    found = []
    for part in message.split("insufficient quota for ")[1:]:
        hit = _INSUFFICIENT.match("insufficient quota for " + part)
        if hit and hit[4] == hit[6]:
            found.append(f"{hit[2]} {hit[1]} {int(hit[3]) - int(hit[5])}{hit[4]}")
    return f"; short: {', '.join(found)}" if found else ""

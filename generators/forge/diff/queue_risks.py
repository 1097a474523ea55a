"""Risk flag `queue`: a project's guaranteed share of the cluster moved.

A Kueue ClusterQueue's nominalQuota is what its project is guaranteed and may take back by
pre-emption; raising one project's quota lowers what the others can borrow, lowering it can
requeue running jobs. Either way a reviewer must see it, raised or lowered, and with the flavor
(GPU pool) and resource it concerns. A queue added or removed changes the shares too.
"""
from __future__ import annotations

from typing import Iterable

from forge.diff.flag import Flag
from forge.diff.objects import MISSING, Named, ObjectChange

QUEUE_GROUP = "kueue.x-k8s.io"


def _flavor_resource(path) -> str:
    names = [p.name for p in path if isinstance(p, Named)]
    return "/".join(names) or "?"


def queue_flags(changes: list[ObjectChange]) -> Iterable[Flag]:
    for c in changes:
        if c.ident.group != QUEUE_GROUP or c.ident.kind != "ClusterQueue":
            continue
        if c.action != "changed":
            yield Flag("medium", c.cluster, c.component, "queue",
                       f"ClusterQueue {c.ident.name} {c.action}: the cohort's quotas are shared out anew")
            continue
        moved = []
        for f in c.fields:
            if not f.path or f.path[-1] != "nominalQuota":
                continue
            old = "none" if f.old is MISSING else f.old
            new = "none" if f.new is MISSING else f.new
            moved.append(f"{_flavor_resource(f.path)} {old} -> {new}")
        if moved:
            yield Flag("medium", c.cluster, c.component, "queue",
                       f"nominal quota of project queue {c.ident.name} changed: {', '.join(moved)}; "
                       "other projects borrow less (or more), and lowering it can requeue running jobs")

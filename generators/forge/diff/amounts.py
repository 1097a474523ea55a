"""Risk flags about amounts: a quota lowered (in any object or values file) and the capacity an
inventory change adds or removes."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any, Iterable

from forge.diff.flag import Flag, names
from forge.diff.objects import MISSING, FieldChange, ObjectChange, keys_of
from forge.diff.revisions import Side
from forge.model.cluster import ClusterModel

_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
_SUFFIX = {None: 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3, "M": 10**6,
           "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
           "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes resource quantity ("500m", "64Gi", 16) as a number, or None."""
    if isinstance(value, bool) or value is MISSING or value is None:
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = _QUANTITY.match(str(value).strip())
    if not match:
        return None
    try:
        return Decimal(match.group(1)) * Decimal(_SUFFIX[match.group(2)])
    except InvalidOperation:
        return None


def _is_quota(c: ObjectChange, f: FieldChange) -> bool:
    keys = keys_of(f.path)
    if c.ident.group == "" and c.ident.kind == "ResourceQuota" and keys[:2] == ("spec", "hard"):
        return True
    # Quotas inside values and other objects: Kueue's nominalQuota, a chart's projectQuotaGpu, an
    # embedded ResourceQuota template's hard.<resource>.
    return any("quota" in k.lower() for k in keys) or (len(keys) >= 2 and keys[-2] == "hard")


def quota_flags(changes: list[ObjectChange]) -> Iterable[Flag]:
    for c in changes:
        if c.action != "changed":
            continue
        lowered = []
        for f in c.fields:
            old, new = quantity(f.old), quantity(f.new)
            if old is not None and new is not None and new < old and _is_quota(c, f):
                lowered.append(f"{f.where} {f.old} -> {f.new}")
        if lowered:
            yield Flag("medium", c.cluster, c.component, "quota",
                       f"quota lowered in {c.ident}: {names(lowered, 4)}; running pods above it keep running, "
                       "new pods are refused until usage falls below it")


def capacity_flags(base: Side, head: Side) -> Iterable[Flag]:
    """GPU nodes, GPUs and NVMe capacity per cluster, when the inventories differ."""
    for name in sorted(set(base.clusters) & set(head.clusters)):
        before, after = _capacity(base.clusters[name]), _capacity(head.clusters[name])
        if before == after:
            continue
        parts = [f"{label} {b:g} -> {a:g}" for label, b, a in zip(("GPU nodes", "GPUs", "NVMe TB"), before, after) if a != b]
        lower = any(a < b for a, b in zip(after, before))
        yield Flag("medium" if lower else "low", name, "inventory", "capacity",
                   ", ".join(parts) + (": work sized for the old capacity may not fit" if lower else ""))


def _capacity(cluster: ClusterModel) -> tuple[float, float, float]:
    nvme_tb = sum(d.size_gb for n in cluster.nodes for d in n.nvme) / 1000
    return (len(cluster.gpu_nodes), cluster.gpu_count, round(nvme_tb, 1))

"""The GPU and the DOCA driver bumped in one pull request: a HIGH risk, listed before all others.

The two upgrade controllers meet on one node: the GPU Operator advances a node that is already
cordoned even without a free slot (NVIDIA/k8s-operator-libs), and the Maintenance Operator
schedules a NodeMaintenance on an already unavailable node without using its budget. So whichever
controller cordons first pulls the other's upgrade onto the same node and both driver containers
reload kernel modules at once; with GPUDirect RDMA through nvidia-peermem (driver.rdma.enabled)
the module depends on ib_core and the reload can wedge. One driver per pull request, one rollout
after the other, avoids it.

Keys on data only, as forge.diff.risks: the GPU driver's version is the gpu-operator chart's
`driver.version` value or an NVIDIADriver's `spec.version`; the DOCA driver's is a
NicClusterPolicy's `spec.ofedDriver.version` or the network-operator chart's `ofedDriver.version`.
"""
from __future__ import annotations

from typing import Any, Iterable

from forge.diff.flag import Flag
from forge.diff.objects import VALUES_KIND, ObjectChange, keys_of

KIND = "drivers"  # Flag.kind: sorted first among flags of its level (forge.diff.flag.FIRST_KINDS)

# (chart, or (group, kind)) -> the key path of the driver version, for each driver.
GPU_DRIVER = {"gpu-operator": ("driver", "version"), ("nvidia.com", "NVIDIADriver"): ("spec", "version")}
DOCA_DRIVER = {"network-operator": ("ofedDriver", "version"),
               ("mellanox.com", "NicClusterPolicy"): ("spec", "ofedDriver", "version")}


def _bumps(changes: list[ObjectChange], charts: dict[tuple[str, str], str],
           paths: dict[Any, tuple[str, ...]]) -> dict[str, list[str]]:
    """cluster -> 'where: old -> new' for each version change of this driver."""
    out: dict[str, list[str]] = {}
    for c in changes:
        if c.action != "changed":
            continue
        key = charts.get((c.cluster, c.component)) if c.ident.kind == VALUES_KIND else (c.ident.group, c.ident.kind)
        path = paths.get(key)
        for f in c.fields if path else ():
            if keys_of(f.path) == path:
                where = f"{c.component} {f.where}" if c.ident.kind == VALUES_KIND else f"{c.ident} {f.where}"
                out.setdefault(c.cluster, []).append(f"{where} {f.old} -> {f.new}")
    return out


def driver_pair_flags(changes: list[ObjectChange], charts: dict[tuple[str, str], str]) -> Iterable[Flag]:
    gpu, doca = _bumps(changes, charts, GPU_DRIVER), _bumps(changes, charts, DOCA_DRIVER)
    for cluster in sorted(set(gpu) & set(doca)):
        yield Flag("high", cluster, "gpu-operator+network-operator", KIND,
                   f"the GPU driver ({'; '.join(gpu[cluster])}) and the DOCA driver ({'; '.join(doca[cluster])}) change "
                   "in one pull request: whichever controller cordons a node first pulls the other's upgrade onto it "
                   "(the GPU Operator advances a cordoned node without a free slot, the Maintenance Operator takes an "
                   "unavailable node without using its budget), so both drivers reload kernel modules at once on the "
                   "same node (where nvidia-peermem still ties the GPU driver to ib_core, driver.rdma.enabled, the "
                   "reload can wedge). Bump one driver per pull request and let its rollout finish before the other")

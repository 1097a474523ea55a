"""What two clusters must never share (issue 24, wall 8): a bucket they write, a host name, an
Argo CD project, an overlapping rail CIDR. A copied inventory that keeps one would have two
clusters overwrite each other's logs and Flyte data, answer on one ingress, fight over one
project, or hand out the same pod addresses. Each problem names both places.

The datasets bucket (`cluster.s3.buckets.datasets`) is the team's shared read-only data and may be
shared; every other bucket is written by the cluster that names it. Hosts are the cluster's own
services (ingress hosts, database hosts, its Grafana, Argo CD and Prometheus): the services the
team shares by nature (the identity provider, the runbooks, the alert receivers) are not.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Iterator
from urllib.parse import urlparse

from forge.errors import Problem
from forge.inventory.loader import LoadedInventory

SHARED_BUCKETS = {"datasets"}
# Keys of hosts every cluster of the team shares: the identity provider's issuer, the runbooks'
# base, and anything under an alert-routing block (the team's pager and chat).
SHARED_HOST_KEYS = {"issuer", "issuer_url", "runbook_base_url"}
SHARED_HOST_BLOCKS = {"alerting"}
Path_ = tuple


def _walk(data: Any, at: Path_) -> Iterator[tuple[Path_, Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _walk(value, (*at, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _walk(value, (*at, i))
    else:
        yield at, data


def unique_names(inv: LoadedInventory) -> list[tuple[str, str, Path_]]:
    """(what, value, path) of every name this cluster must hold alone."""
    cluster = inv.inventory.cluster
    out = [("Argo CD project", cluster.argocd.project, ("cluster", "argocd", "project"))]
    out += [("bucket", name, ("cluster", "s3", "buckets", role)) for role, name in cluster.s3.buckets.items()
            if role not in SHARED_BUCKETS]
    for path, value in _walk(inv.inventory.components, ("components",)):
        key = path[-1] if isinstance(path[-1], str) else ""
        if key in SHARED_HOST_KEYS or SHARED_HOST_BLOCKS & set(path):
            continue
        if key == "host" and isinstance(value, str):
            out.append(("host", value.lower(), path))
        elif key.endswith("_url") and isinstance(value, str) and urlparse(value).hostname:
            out.append(("host", urlparse(value).hostname.lower(), path))
    return out


def _cidrs(inv: LoadedInventory) -> list[tuple[Any, Path_]]:
    compute = inv.inventory.cluster.network.compute if inv.inventory.cluster.network else None
    return [(ipaddress.ip_network(r.cidr), ("cluster", "network", "compute", "rails", i, "cidr"))
            for i, r in enumerate(compute.rails if compute else [])]


def _where(inv: LoadedInventory, path: Path_) -> str:
    return f"{inv.file}:{inv.line_of(path)}"


def shared_across_clusters(loaded: list[LoadedInventory]) -> list[Problem]:
    problems: list[Problem] = []
    first: dict[tuple[str, str], tuple[LoadedInventory, Path_]] = {}
    for inv in loaded:
        for what, value, path in unique_names(inv):
            other = first.setdefault((what, value), (inv, path))
            if other[0] is not inv:
                problems.append(inv.problem(path, f"{what} '{value}' is also cluster '{other[0].inventory.cluster.name}''s "
                                                  f"({_where(*other)}): two clusters must not share a {what}; give this one its own"))
    seen: list[tuple[LoadedInventory, Any, Path_]] = []
    for inv in loaded:
        mine = _cidrs(inv)
        for net, path in mine:
            for other, theirs, where in seen:
                if net.version == theirs.version and net.overlaps(theirs):
                    problems.append(inv.problem(path, f"{net} overlaps {theirs} of cluster '{other.inventory.cluster.name}' "
                                                      f"({_where(other, where)}): two clusters' rails must not share pod addresses"))
                    break
        seen += [(inv, net, path) for net, path in mine]
    return problems


def tokens(inv: LoadedInventory) -> list[str]:
    """What the incremental generate keeps per cluster to see, without loading every inventory,
    whether a fleet-wide rule might fire: node names, unique names, CIDRs."""
    return ([n.name for n in inv.inventory.nodes] + [f"\0{what}\0{value}" for what, value, _ in unique_names(inv)]
            + [f"\0cidr\0{net}" for net, _ in _cidrs(inv)])


def clash(by_cluster: dict[str, list[str]]) -> bool:
    """Whether two clusters' tokens share a name or an overlapping CIDR."""
    seen: set[str] = set()
    nets: list[Any] = []
    for items in by_cluster.values():
        mine = [ipaddress.ip_network(t.rsplit("\0", 1)[1]) for t in items if t.startswith("\0cidr\0")]
        plain = {t for t in items if not t.startswith("\0cidr\0")}
        if seen & plain or any(a.version == b.version and a.overlaps(b) for a in mine for b in nets):
            return True
        seen |= plain
        nets += mine
    return False

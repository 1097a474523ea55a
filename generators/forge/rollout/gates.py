"""A ring's gates, read from what the controllers report (docs/rollout.md, "Gates"): for the
ring's soak time, every Application of every cluster in it Synced to the ring's commit and
Healthy, no GPU node held in a driver upgrade or failed after one, no alert of the ring's set
firing. `reasons` says, one line each, what does not hold; none: the ring passes."""
from __future__ import annotations

import datetime as dt
from typing import Any

from forge.argocd.bootstrap import app_name
from forge.argocd.config import PER_NODE_MARK
from forge.fleet import components_of
from forge.model.cluster import ClusterModel
from forge.rollout import api
from forge.rollout.rings import Ring

# GPU Operator's own gauges (its operator metrics): nodes whose driver upgrade has not finished,
# and nodes whose upgrade or post-upgrade validation failed.
UPGRADE_GAUGES = {
    "gpu_operator_nodes_upgrades_pending": "waiting for a driver upgrade",
    "gpu_operator_nodes_upgrades_in_progress": "held in a driver upgrade (cordoned, drained or validating)",
    "gpu_operator_nodes_upgrades_failed": "failed a driver upgrade or its post-upgrade tests",
}


def _window(ring: Ring) -> str:
    return f"[{ring.soak_minutes}m]" if ring.soak_minutes else ""


def _over_soak(expr: str, ring: Ring) -> str:
    """The largest value of `expr` over the soak time (now, without one)."""
    return f"max_over_time({expr}{_window(ring)})" if ring.soak_minutes else expr


def alert_query(ring: Ring) -> str | None:
    if not ring.gates.alerts:
        return None
    names = "|".join(sorted(ring.gates.alerts))
    return _over_soak(f'ALERTS{{alertstate="firing",alertname=~"{names}"}}', ring)


def upgrade_query(gauge: str, ring: Ring) -> str:
    return f"max({_over_soak(gauge, ring)}) > 0"


class PerNode(str):
    """A reason that is about some GPU nodes only (the GPU Operator's health check said so): it
    holds the promotion unless accepted on the record (`forge promote --accept REASON`)."""


def _since(stamp: str | None) -> dt.datetime | None:
    try:
        since = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")) if isinstance(stamp, str) and stamp else None
        return since if since is None or since.tzinfo is not None else None
    except ValueError:
        return None


def application_reasons(cluster: ClusterModel, apps: list[dict[str, Any]], ring: Ring, commit: str,
                        now: dt.datetime) -> list[str]:
    expected = {app_name(cluster, "root")} | {app_name(cluster, c.name) for c in components_of(cluster)}
    seen = {a.get("metadata", {}).get("name") for a in apps}
    out = [f"{cluster.name}: Application {name} is not reported by Argo CD" for name in sorted(expected - seen)]
    for app in sorted(apps, key=lambda a: a.get("metadata", {}).get("name", "")):
        name = app.get("metadata", {}).get("name", "?")
        if name not in expected:
            continue
        out += _app_reasons(cluster.name, name, app.get("status") or {}, ring, commit, now)
    return out


def _app_reasons(cluster: str, name: str, status: dict[str, Any], ring: Ring, commit: str, now: dt.datetime) -> list[str]:
    sync, health = status.get("sync") or {}, status.get("health") or {}
    out = []
    if sync.get("status") != "Synced":
        out.append(f"{cluster}: Application {name} is {sync.get('status') or 'Unknown'}, not Synced")
    # The exact commit: a `revisions` string that merely contains it (`x<commit>y`) is not it.
    revisions = sync.get("revisions") if isinstance(sync.get("revisions"), list) else [sync.get("revision")]
    if not any(isinstance(r, str) and r == commit for r in revisions):
        out.append(f"{cluster}: Application {name} runs {', '.join(map(str, revisions))}, not the ring's commit {commit[:12]}")
    if health.get("status") != "Healthy":
        out.append(f"{cluster}: Application {name} is {health.get('status') or 'Unknown'}, not Healthy" + _unhealthy(status))
        return out
    out += _per_node(cluster, name, status)
    since = deployed_at(status, commit)
    if since is None:
        out.append(f"{cluster}: Application {name} has no sync history of the ring's commit {commit[:12]} "
                   "(status.history): the soak starts when it reports it")
        return out
    if ring.soak_minutes and now - since < dt.timedelta(minutes=ring.soak_minutes):
        out.append(f"{cluster}: Application {name} has run the ring's commit only {int((now - since).total_seconds() // 60)} "
                   f"minutes, less than the {ring.soak_minutes}-minute soak of ring {ring.name}")
    return out


def deployed_at(status: dict[str, Any], commit: str) -> dt.datetime | None:
    """When the Application first reported `commit`: the deployedAt of the first entry of its
    status.history with exactly that revision (Argo CD's RevisionHistory: revision, or revisions
    for several sources). Not status.health.lastTransitionTime: health does not change when a
    change leaves the cluster as it was (an h200-only driver bump on the canary), so an old
    Healthy would count as a soak that never ran (argo-cd #29410 is the same bug in RollingSync)."""
    history = status.get("history") if isinstance(status.get("history"), list) else []
    for entry in history:
        if not isinstance(entry, dict):
            continue
        revisions = entry.get("revisions") if isinstance(entry.get("revisions"), list) else [entry.get("revision")]
        if any(isinstance(r, str) and r == commit for r in revisions):
            return _since(entry.get("deployedAt"))
    return None


def _resources(status: dict[str, Any]) -> list[Any]:
    """status.resources as a list, whatever an answer holds there (it is read, never trusted)."""
    resources = status.get("resources")
    return resources if isinstance(resources, list) else []


def _per_node(cluster: str, name: str, status: dict[str, Any]) -> list[str]:
    """A resource Healthy only because its trouble is per node (forge.argocd.config PER_NODE_MARK)."""
    resources = _resources(status)
    return [PerNode(f"{cluster}: Application {name}: {r.get('kind')} {r.get('name')} is {str(r['health']['message'])[:300]}"
                    " (accept it on the record: forge promote --accept REASON)")
            for r in resources if isinstance(r, dict) and isinstance(r.get("health"), dict)
            and str(r["health"].get("message") or "").startswith(PER_NODE_MARK)]


def _unhealthy(status: dict[str, Any]) -> str:
    resources = _resources(status)
    bad = [r for r in resources if isinstance(r, dict) and isinstance(r.get("health"), dict)
           and r["health"].get("status") not in (None, "Healthy")]
    return "".join(f"; {r.get('kind')} {r.get('name')}: {r['health'].get('status')}"
                   + (f" ({r['health']['message']})" if r["health"].get("message") else "") for r in bad)


def prometheus_reasons(cluster: ClusterModel, ring: Ring) -> list[str]:
    url = cluster.settings.rollout.prometheus_url
    out = []
    if expr := alert_query(ring):
        for sample in api.query(url, expr):
            labels = sample.get("metric", {})
            where = ", ".join(f"{k}={v}" for k, v in sorted(labels.items(), key=str) if k not in ("__name__", "alertname", "alertstate"))
            out.append(f"{cluster.name}: alert {labels.get('alertname', '?')} fired within the soak time" + (f" ({where})" if where else ""))
    for gauge, what in UPGRADE_GAUGES.items():
        for sample in api.query(url, upgrade_query(gauge, ring)):
            count = sample.get("value", [None, "?"])[1]
            out.append(f"{cluster.name}: {count} GPU node(s) {what} within the soak time ({gauge})")
    return out


def ring_reasons(clusters: list[ClusterModel], ring: Ring, commit: str, now: dt.datetime) -> list[str]:
    """Why ring `ring` (these clusters, which run `commit`) does not pass; [] when it does."""
    if not clusters:
        return [f"ring {ring.name} has no clusters: nothing has run this change yet"]
    out = []
    for cluster in clusters:
        try:
            apps = api.applications(cluster.settings.rollout.argocd_url, cluster.name)
            out += application_reasons(cluster, apps, ring, commit, now)
            out += prometheus_reasons(cluster, ring)
        except api.Unreachable as exc:
            out.append(f"{cluster.name}: cannot read a gate: {exc}")
    return out

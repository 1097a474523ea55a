"""`forge bench`'s rollout lines, over its synthetic fleet: rendering the central Argo CD's
ApplicationSets for every cluster, and one promotion decision judging every cluster's gates,
read over HTTP from a server on 127.0.0.1 that answers as a healthy Argo CD and a quiet
Prometheus would (every generated Application Synced and Healthy at the ring's commit)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import http.server
import json
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import click

from forge.files import emit
from forge.argocd.bootstrap import app_name
from forge.fleet import components_of, load_fleet
from forge.model.cluster import ClusterModel
from forge.rollout import gates
from forge.rollout.api import CLUSTER_LABEL
from forge.rollout.appset import central_objects
from forge.rollout.rings import Ring

COMMIT = "0123456789abcdef0123456789abcdef01234567"
NOW = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
EMPTY = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}}).encode()


def _answers(clusters: list[ClusterModel]) -> dict[str, bytes]:
    healthy = {"sync": {"status": "Synced", "revision": COMMIT, "revisions": [COMMIT]},
               "health": {"status": "Healthy", "lastTransitionTime": "2026-01-01T00:00:00Z"},
               "history": [{"id": 1, "revisions": [COMMIT], "deployedAt": "2026-01-01T00:00:00Z"}]}
    out = {}
    for c in clusters:
        names = [app_name(c, "root")] + [app_name(c, comp.name) for comp in components_of(c)]
        out[c.name] = json.dumps({"items": [{"metadata": {"name": n, "labels": {CLUSTER_LABEL: c.name}}, "status": healthy}
                                         for n in names]}).encode()
    return out


def _server(answers: dict[str, bytes]) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            cluster, _, rest = url.path.strip("/").partition("/")
            body = answers.get(cluster, b"{}") if rest.startswith("argocd/") else EMPTY
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def _pointed(cluster: ClusterModel, url: str) -> ClusterModel:
    """The cluster with its gate APIs at the local server."""
    rollout = cluster.settings.rollout.model_copy(update={"argocd_url": f"{url}/{cluster.name}/argocd",
                                                          "prometheus_url": f"{url}/{cluster.name}/prometheus"})
    return dataclasses.replace(cluster, settings=cluster.settings.model_copy(update={"rollout": rollout}))


def bench_rollout(root: Path, label: str) -> None:
    fleet = load_fleet(root)
    clusters = [c for c in fleet.clusters if c.settings.rollout]
    started = time.perf_counter()
    files = central_objects(fleet, clusters)
    text = "".join(emit.yaml_file(__name__, "bench", [obj]) for obj in files.values())
    t_appsets = time.perf_counter() - started
    appsets = sum(1 for n in files if n.startswith("applicationset-"))
    click.echo(f"{label} ApplicationSets: {t_appsets:.2f}s ({appsets} ApplicationSets, {len(clusters)} cluster Secrets, {len(text):,} bytes)")
    server = _server(_answers(clusters))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        ring = Ring(name="bench", soak_minutes=60, gates={"alerts": ["GpuXidCriticalError", "NicPortDown"]})
        judged = [_pointed(c, url) for c in clusters]
        started = time.perf_counter()
        reasons = gates.ring_reasons(judged, ring, COMMIT, NOW)
        t_decide = time.perf_counter() - started
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    verdict = "passes" if not reasons else f"refused ({len(reasons)} reasons: {reasons[0]})"
    click.echo(f"{label} promotion decision over {len(judged)} clusters: {t_decide:.2f}s "
               f"({len(judged) * (1 + len(gates.UPGRADE_GAUGES) + 1)} API calls; {verdict})")

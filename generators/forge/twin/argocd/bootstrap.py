"""The bootstrap as docs/bootstrap.md has a person do it: Argo CD itself (its CRDs and the objects
its install creates empty: argocd-cm, argocd-secret, argocd-rbac-cm), the bootstrap Secret (box
values, no real credential), the root's AppProject and the root Application (forge.argocd.bootstrap.BY_HAND);
then Argo CD does the rest, and the box waits until every Application is Synced and Healthy or
names the one that is not, in Argo CD's words."""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from forge.errors import ForgeError

INSTALL = """apiVersion: v1
kind: Namespace
metadata: {name: argocd}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-rbac-cm, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: Secret
metadata: {name: argocd-secret, namespace: argocd, labels: {app.kubernetes.io/part-of: argocd}}
stringData: {server.secretkey: box-only-not-a-secret}
---
apiVersion: v1
kind: Namespace
metadata: {name: external-secrets}
---
apiVersion: v1
kind: Secret
metadata: {name: external-secrets-aws, namespace: external-secrets}
stringData: {access-key-id: box-only, secret-access-key: box-only}
"""


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ForgeError(f"twin argocd: kubectl {' '.join(args[:2])}: {done.stderr.strip()[-400:]}")
    return done.stdout


def install(kubeconfig: Path, crds: Path) -> None:
    """Argo CD's CRDs and what its install creates; no cluster Secret: the in-cluster destination
    comes from the box's kubeconfig (forge.twin.argocd.components.in_cluster_env)."""
    kubectl(kubeconfig, "apply", "--server-side", "-f", str(crds))
    kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=INSTALL)


@dataclass
class Progress:
    started: float
    order: list[tuple[float, str]] = field(default_factory=list)  # (seconds from root, Application) as each converged
    seen: set[str] = field(default_factory=set)


def _states(kubeconfig: Path) -> dict[str, dict]:
    items = json.loads(kubectl(kubeconfig, "-n", "argocd", "get", "applications", "-o", "json"))["items"]
    return {a["metadata"]["name"]: a.get("status") or {} for a in items}


def _converged(status: dict) -> bool:
    return status.get("sync", {}).get("status") == "Synced" and status.get("health", {}).get("status") == "Healthy"


def reason(name: str, status: dict) -> str:
    """Argo CD's own words for why an Application is not there: its conditions, the last
    operation's message, the health message, the first unhealthy resource's message (one that
    exists before one that is Missing: the root's later waves are Missing while an earlier one
    holds them). Resources' health is in the status with the controller's --persist-resource-health."""
    words = [f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or []]
    op = status.get("operationState") or {}
    if op.get("message"):
        words.append(f"operation {op.get('phase')}: {op['message']}")
    health = status.get("health") or {}
    unhealthy = [r for r in status.get("resources") or [] if (r.get("health") or {}).get("status") not in (None, "Healthy")]
    res = next((r for r in unhealthy if r["health"]["status"] != "Missing"), unhealthy[0] if unhealthy else None)
    if res is not None:
        message = res["health"].get("message")
        words.append(f"{res.get('kind')}/{res.get('name')} {res['health']['status']}" + (f": {message}" if message else ""))
    sync = (status.get("sync") or {}).get("status")
    return f"{name}: sync {sync}, health {health.get('status')}" + ("; " + "; ".join(words) if words else "")


def converge(kubeconfig: Path, progress: Progress, timeout: float, say,
             each_poll: Callable[[], None] | None = None) -> dict[str, dict]:
    """Poll until every Application (the root and its children) is Synced and Healthy; fail with
    every Application that is not, each with Argo CD's reason. `each_poll` runs before each look
    (the box's status stand-ins, forge.twin.argocd.status_stand_ins)."""
    deadline = time.monotonic() + timeout
    while True:
        if each_poll is not None:
            each_poll()
        states = _states(kubeconfig)
        for name, status in sorted(states.items()):
            if name not in progress.seen and _converged(status):
                progress.seen.add(name)
                progress.order.append((time.monotonic() - progress.started, name))
                say(f"twin argocd: {name} Synced and Healthy at {progress.order[-1][0]:.0f}s")
        if len(states) > 1 and all(_converged(s) for s in states.values()):
            return states
        if time.monotonic() > deadline:
            stuck = [reason(n, s) for n, s in sorted(states.items()) if not _converged(s)]
            raise ForgeError("twin argocd: not converged after "
                             f"{timeout:.0f}s:\n  " + "\n  ".join(stuck))
        time.sleep(3)

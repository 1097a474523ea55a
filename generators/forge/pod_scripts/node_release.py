"""A tested node's release: wait until every test Job of the node has succeeded, then remove the
untested taint from the node; exit 1, taint kept, as soon as one failed (NodeTestFailed alerts).

Standard library only: forge.components.node_tests.release ships this file as it is in a ConfigMap
and runs it in a Job (the Python image pinned in charts/versions.yaml) whose service account may
read exactly the node's test Jobs and get and patch exactly that node. It reads the API server as
that service account (in-cluster token and CA), or `--api URL` without credentials (tests, a
`kubectl proxy` on 127.0.0.1).

    python3 release.py NODE TAINT_KEY NAMESPACE JOB [JOB ...] [--api URL] [--timeout SECONDS]
"""
from __future__ import annotations

import argparse
import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Callable

IN_CLUSTER = "https://kubernetes.default.svc"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
POLL_SECONDS = 30

Call = Callable[[str, str, "Any"], "dict[str, Any] | None"]  # method, path, JSON patch or None


def job_state(job: dict[str, Any] | None) -> str:
    """passed, failed or running (a Job not there yet is running: it may still be applied)."""
    conditions = {c.get("type"): c.get("status") for c in ((job or {}).get("status") or {}).get("conditions") or []}
    if conditions.get("Failed") == "True":
        return "failed"
    if conditions.get("Complete") == "True":
        return "passed"
    return "running"


def untaint_patch(node: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    """A JSON patch removing every taint with `key`, guarded by the node's resourceVersion (a
    concurrent change fails it instead of being overwritten); None when the node has none."""
    taints = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in taints if t.get("key") != key]
    if len(kept) == len(taints):
        return None
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
            {"op": "replace", "path": "/spec/taints", "value": kept}]


def release(node: str, key: str, namespace: str, jobs: list[str], call: Call, timeout: float,
            sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> int:
    end = clock() + timeout
    while True:
        states = {name: job_state(call("GET", f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}", None)) for name in jobs}
        failed = sorted(n for n, s in states.items() if s == "failed")
        if failed:
            print(f"{node} stays out of service: {', '.join(failed)} failed (read its logs, fix the node, apply its tests again)")
            return 1
        if all(s == "passed" for s in states.values()):
            break
        if clock() >= end:
            waiting = sorted(n for n, s in states.items() if s != "passed")
            print(f"{node} stays out of service: {', '.join(waiting)} did not finish within {timeout:g}s")
            return 1
        sleep(POLL_SECONDS)
    patch = untaint_patch(call("GET", f"/api/v1/nodes/{node}", None) or {}, key)
    if patch is not None:
        call("PATCH", f"/api/v1/nodes/{node}", patch)
    print(f"{node} passed {', '.join(jobs)}: taint {key} removed, it serves again")
    return 0


def api_caller(base: str, token: str | None, context: ssl.SSLContext | None) -> Call:
    def call(method: str, path: str, body: Any) -> dict[str, Any] | None:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(base.rstrip("/") + path, data=data, method=method,
                                         headers={"Accept": "application/json"})
        if data is not None:
            request.add_header("Content-Type", "application/json-patch+json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=20, context=context) as response:
                return json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404 and method == "GET":
                return None
            raise SystemExit(f"cannot {method} {path}: HTTP {err.code} {err.reason} (the release Job's RBAC must allow it)")
        except OSError as err:
            raise SystemExit(f"cannot reach the API server at {base}: {err}")
    return call


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="remove a node's untested taint once its tests passed")
    parser.add_argument("node")
    parser.add_argument("key", help="the taint's key")
    parser.add_argument("namespace", help="the test Jobs' namespace")
    parser.add_argument("jobs", nargs="+", help="the node's test Jobs")
    parser.add_argument("--api", help="API server URL without credentials (default: in-cluster)")
    parser.add_argument("--timeout", type=float, default=6 * 3600, help="seconds to wait for the tests")
    args = parser.parse_args(argv)
    if args.api:
        call = api_caller(args.api, None, None)
    else:
        with open(f"{SA_DIR}/token", encoding="utf-8") as f:
            token = f.read().strip()
        call = api_caller(IN_CLUSTER, token, ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt"))
    return release(args.node, args.key, args.namespace, args.jobs, call, args.timeout)


if __name__ == "__main__":
    sys.exit(main())

"""The two read-only HTTP APIs `forge promote` asks (docs/rollout.md lists the calls):

- Argo CD: `GET <argocd_url>/api/v1/applications?selector=forge.exa.ai/cluster=<cluster>`, with
  the bearer token of $ARGOCD_AUTH_TOKEN when set (the argocd CLI's variable);
- Prometheus: `GET <prometheus_url>/api/v1/query?query=<expr>` (instant queries), with the
  bearer token of $FORGE_PROMETHEUS_TOKEN when set.

Any failure to get an answer is a `Unreachable` with one line saying which call failed: a gate
that cannot be read does not pass."""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from forge.model.cluster import LABEL_DOMAIN

TIMEOUT_SECONDS = 15  # for the whole answer, not per read: a slow trickle is cut too
# An ApplicationList of a cluster's ~30 Applications with their resources is a few hundred KiB.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
CLUSTER_LABEL = f"{LABEL_DOMAIN}/cluster"


class Unreachable(Exception):
    """An API gave no usable answer."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is refused, not followed: the bearer token must never reach another address."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: PLR0913 (urllib's signature)
        raise Unreachable(f"GET {req.full_url}: HTTP {code} redirects to {newurl[:200]}; forge follows no "
                          "redirect (the token would go with it): set the inventory's URL to the API itself")


_OPENER = urllib.request.build_opener(_NoRedirects)


def _read(answer: Any, url: str) -> bytes:
    deadline, chunks, size = time.monotonic() + TIMEOUT_SECONDS, [], 0
    while chunk := answer.read(min(1 << 16, MAX_ANSWER_BYTES + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise Unreachable(f"GET {url}: the answer is larger than {MAX_ANSWER_BYTES // 2**20} MiB")
        if time.monotonic() > deadline:
            raise Unreachable(f"GET {url}: no whole answer within {TIMEOUT_SECONDS} s")
    return b"".join(chunks)


def _get(url: str, token_env: str) -> Any:
    headers = {"Accept": "application/json"}
    if token := os.environ.get(token_env):
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with _OPENER.open(request, timeout=TIMEOUT_SECONDS) as answer:
            body = _read(answer, url)
    except urllib.error.HTTPError as exc:
        raise Unreachable(f"GET {url}: HTTP {exc.code} {str(exc.reason)[:200]}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        raise Unreachable(f"GET {url}: {str(getattr(exc, 'reason', exc))[:200]}") from None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise Unreachable(f"GET {url}: the answer is not JSON") from None


def _application(item: Any, url: str, cluster: str) -> dict[str, Any]:
    """One Application of the answer, of the shape the gates read, labelled for `cluster`."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise Unreachable(f"GET {url}: an item of the answer is not an Application (no metadata.name)")
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    if labels.get(CLUSTER_LABEL) != cluster:
        raise Unreachable(f"GET {url}: Application {meta['name'][:100]} is labelled {CLUSTER_LABEL}="
                          f"{str(labels.get(CLUSTER_LABEL))[:100]}, not {cluster}: the answer is for another cluster")
    status = item.get("status")
    if status is not None and not isinstance(status, dict) or any(
            not isinstance((status or {}).get(k) or {}, dict) for k in ("sync", "health")):
        raise Unreachable(f"GET {url}: Application {meta['name'][:100]} has a status forge cannot read")
    return item


def applications(argocd_url: str, cluster: str) -> list[dict[str, Any]]:
    """The Applications of one cluster, as Argo CD's API server reports them."""
    query = urllib.parse.urlencode({"selector": f"{CLUSTER_LABEL}={cluster}"})
    data = _get(f"{argocd_url.rstrip('/')}/api/v1/applications?{query}", "ARGOCD_AUTH_TOKEN")
    url = f"{argocd_url.rstrip('/')}/api/v1/applications"
    if not isinstance(data, dict) or not isinstance(data.get("items") or [], list):
        raise Unreachable(f"{argocd_url}: Argo CD answered without an Application list")
    return [_application(item, url, cluster) for item in data.get("items") or []]  # an empty list comes back as null


def query(prometheus_url: str, expr: str) -> list[dict[str, Any]]:
    """The vector an instant query returns: [{"metric": {...}, "value": [time, "v"]}, ...]."""
    url = f"{prometheus_url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    data = _get(url, "FORGE_PROMETHEUS_TOKEN")
    if not isinstance(data, dict) or data.get("status") != "success":
        error = data.get("error") if isinstance(data, dict) else None
        raise Unreachable(f"GET {url}: Prometheus answered {error or 'without status success'}")
    result = data.get("data")
    if not isinstance(result, dict) or result.get("resultType") != "vector":
        kind = result.get("resultType") if isinstance(result, dict) else None
        raise Unreachable(f"GET {url}: expected a vector, got {str(kind)[:40]}")
    samples = result.get("result") or []
    if not isinstance(samples, list) or not all(
            isinstance(s, dict) and isinstance(s.get("metric", {}), dict) and isinstance(s.get("value"), list)
            and len(s["value"]) == 2 for s in samples):
        raise Unreachable(f"GET {url}: the vector's samples are not {{metric: {{...}}, value: [time, value]}}")
    return samples


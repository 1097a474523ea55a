"""The two read-only HTTP APIs `forge promote` asks (docs/rollout.md lists the calls):

- Argo CD: `GET <argocd_url>/api/v1/applications?selector=forge.exa.ai/cluster=<cluster>`, with
  the bearer token of $ARGOCD_AUTH_TOKEN when set (the argocd CLI's variable);
- Prometheus: `GET <prometheus_url>/api/v1/query?query=<expr>` (instant queries), with the
  bearer token of $FORGE_PROMETHEUS_TOKEN when set.

Any failure to get an answer is a `Unreachable` with one line saying which call failed: a gate
that cannot be read does not pass."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from forge.model import LABEL_DOMAIN

TIMEOUT_SECONDS = 15
CLUSTER_LABEL = f"{LABEL_DOMAIN}/cluster"


class Unreachable(Exception):
    """An API gave no usable answer."""


def _get(url: str, token_env: str) -> Any:
    headers = {"Accept": "application/json"}
    if token := os.environ.get(token_env):
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:
            body = answer.read()
    except urllib.error.HTTPError as exc:
        raise Unreachable(f"GET {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise Unreachable(f"GET {url}: {getattr(exc, 'reason', exc)}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise Unreachable(f"GET {url}: the answer is not JSON") from None


def applications(argocd_url: str, cluster: str) -> list[dict[str, Any]]:
    """The Applications of one cluster, as Argo CD's API server reports them."""
    query = urllib.parse.urlencode({"selector": f"{CLUSTER_LABEL}={cluster}"})
    data = _get(f"{argocd_url.rstrip('/')}/api/v1/applications?{query}", "ARGOCD_AUTH_TOKEN")
    if not isinstance(data, dict) or not isinstance(data.get("items") or [], list):
        raise Unreachable(f"{argocd_url}: Argo CD answered without an Application list")
    return data.get("items") or []  # an empty list comes back as null


def query(prometheus_url: str, expr: str) -> list[dict[str, Any]]:
    """The vector an instant query returns: [{"metric": {...}, "value": [time, "v"]}, ...]."""
    url = f"{prometheus_url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    data = _get(url, "FORGE_PROMETHEUS_TOKEN")
    if not isinstance(data, dict) or data.get("status") != "success":
        error = data.get("error") if isinstance(data, dict) else None
        raise Unreachable(f"GET {url}: Prometheus answered {error or 'without status success'}")
    result = data.get("data", {})
    if result.get("resultType") != "vector":
        raise Unreachable(f"GET {url}: expected a vector, got {result.get('resultType')}")
    return result.get("result", [])


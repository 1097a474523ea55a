"""An object of an API the cluster's API server does not serve, refused as the cluster would, with
the API and the inventory fact that says what the cluster serves (cluster.api_server, or
cluster.cloud for a managed control plane: forge.facts.kube_apis).

The box's kube-apiserver runs with exactly the cluster's flags (forge.twin.controlplane), so its
discovery has no such kind: the refusal is the real server's, told in the inventory's words. A
kind of a group the API server does not build in (a CRD's) is not decided here: its CRD may come
with a later Application (forge.twin.sync retries it)."""
from __future__ import annotations

from typing import Any

from forge.facts.kube_apis import Served, built_in

REASON = "NotServed"


def not_served(served: Served | None, obj: dict[str, Any], missing_kind: bool) -> str | None:
    """Why the API server refused `obj` (the server had no kind for it), or None if that is not the reason."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    if served is None or not missing_kind or not built_in(served.version, api_version):
        return None
    why = served.missing(api_version, kind) or "the box's API server does not serve it"
    return f"the cluster does not serve {api_version} {kind}: {why} ({served.source})"

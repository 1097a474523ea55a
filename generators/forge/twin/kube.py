"""A small client of the box's API server: one kept-alive HTTPS connection (about twice kubectl's
rate for many small requests), discovery, server-side apply with strict field validation, and the
few reads and writes the box needs. Standard library only."""
from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from forge.errors import ForgeError

FIELD_MANAGER = "argocd-controller"  # what Argo CD's server-side apply writes as


@dataclass(frozen=True)
class Resource:
    group_version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: frozenset[str]


class ApiError(Exception):
    """The server refused a request: `status` its HTTP code, `body` its Status object."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body
        super().__init__(self.message)

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.body.get("message") or f"HTTP {self.status}")

    @property
    def causes(self) -> list[dict[str, Any]]:
        return list((self.body.get("details") or {}).get("causes") or [])


class Kube:
    def __init__(self, server: str, token: str, ca: Path) -> None:
        self.server = server
        parsed = urllib.parse.urlparse(server)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 443
        self.token, self.ca = token, ca
        self.context = ssl.create_default_context(cafile=str(ca))
        self._conn: http.client.HTTPSConnection | None = None
        self._resources: dict[tuple[str, str], Resource] = {}

    # ---- transport -------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                query: dict[str, str] | None = None, timeout: float = 60) -> Any:
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(3):
            conn = self._conn or http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
            self._conn = conn
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                self._conn = None
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
        try:
            parsed = json.loads(raw) if raw else {}
        except ValueError:  # "404 page not found" and other plain-text answers
            parsed = {"message": raw.decode(errors="replace").strip()}
        if resp.status >= 400:
            raise ApiError(resp.status, parsed if isinstance(parsed, dict) else {"message": raw.decode(errors="replace")})
        return parsed

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- discovery ---------------------------------------------------------------------------------

    def _discover(self) -> None:
        found: dict[tuple[str, str], Resource] = {}
        versions = [("v1", "/api/v1")]
        for group in self.request("GET", "/apis").get("groups", []):
            versions += [(v["groupVersion"], f"/apis/{v['groupVersion']}") for v in group.get("versions", [])]
        for group_version, path in versions:
            try:
                listing = self.request("GET", path)
            except ApiError:  # an aggregated API with no server behind it: skip its group
                continue
            subs: dict[str, set[str]] = {}
            for r in listing.get("resources", []):
                base, _, sub = r["name"].partition("/")
                if sub:
                    subs.setdefault(base, set()).add(sub)
            for r in listing.get("resources", []):
                if "/" not in r["name"]:
                    found[(group_version, r["kind"])] = Resource(group_version, r["kind"], r["name"], r["namespaced"],
                                                                 frozenset(subs.get(r["name"], ())))
        self._resources = found

    def resource(self, api_version: str, kind: str, refresh: bool = True) -> Resource | None:
        key = (api_version, kind)
        if key not in self._resources and refresh:
            self._discover()
        return self._resources.get(key)

    def path(self, api_version: str, kind: str, name: str | None = None, namespace: str | None = None,
             subresource: str | None = None) -> str:
        res = self.resource(api_version, kind)
        if res is None:
            raise ApiError(404, {"reason": "NotFound", "message": f"the server has no kind {kind} in {api_version}"})
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        parts = [prefix]
        if res.namespaced:
            parts.append(f"namespaces/{namespace or 'default'}")
        parts.append(res.plural)
        if name:
            parts.append(name)
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    # ---- verbs -------------------------------------------------------------------------------------

    def apply(self, obj: dict[str, Any], manager: str = FIELD_MANAGER, dry_run: bool = False,
              subresource: str | None = None) -> dict[str, Any]:
        """Server-side apply, forced (Argo CD's ServerSideApply=true), with strict field validation:
        an unknown or duplicated field is an error, not a warning."""
        meta = obj.get("metadata") or {}
        query = {"fieldManager": manager, "force": "true", "fieldValidation": "Strict"}
        if dry_run:
            query["dryRun"] = "All"
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("name"), meta.get("namespace"), subresource)
        return self.request("PATCH", path, obj, "application/apply-patch+yaml", query)

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return self.request("GET", self.path(api_version, kind, name, namespace))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, namespace: str | None = None,
             selector: str | None = None) -> list[dict[str, Any]]:
        res = self.resource(api_version, kind)
        if res is None:
            return []
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        path = f"{prefix}/namespaces/{namespace}/{res.plural}" if namespace and res.namespaced else f"{prefix}/{res.plural}"
        return self.request("GET", path, query={"labelSelector": selector} if selector else None).get("items", [])

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        path = self.path(obj["apiVersion"], obj["kind"], None, meta.get("namespace"))
        return self.request("POST", path, obj, query={"fieldValidation": "Strict"})

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        try:
            self.request("DELETE", self.path(api_version, kind, name, namespace),
                         {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        except ApiError as exc:
            if exc.status != 404:
                raise

    def events_for(self, namespace: str, name: str) -> Iterator[str]:
        for e in self.list("v1", "Event", namespace):
            if (e.get("involvedObject") or {}).get("name") == name:
                yield f"{e.get('reason')}: {e.get('message')}"


def connect(server: str, token: str, ca: Path) -> Kube:
    kube = Kube(server, token, ca)
    try:
        kube.request("GET", "/version")
    except (OSError, ApiError) as exc:
        raise ForgeError(f"twin: the box's API server at {server} does not answer ({exc}): is the box up? "
                         "(`forge twin status`)") from None
    return kube

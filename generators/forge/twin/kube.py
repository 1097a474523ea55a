"""A small client of the box's API server: kept-alive HTTPS connections, one per thread (so the
box can apply a wave's objects in parallel, as Argo CD does), discovery of one group version at a
time, server-side apply with strict field validation, and the few reads and writes the box needs.
Standard library only."""
from __future__ import annotations

import http.client
import json
import ssl
import threading
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
        self._local = threading.local()  # each thread's kept-alive connection
        self._open: list[http.client.HTTPSConnection] = []  # every thread's, for close()
        self._lock = threading.Lock()
        self._resources: dict[tuple[str, str], Resource] = {}
        self._asking: dict[str, threading.Lock] = {}  # group version -> held while one thread asks
        self.impersonate: str | None = None  # requests made as this user (Impersonate-User)

    def as_user(self, user: str) -> "Kube":
        """A client whose requests the API server authorizes as `user` (a controller's
        ServiceAccount, system:serviceaccount:<namespace>:<name>): what its RBAC lets it do."""
        other = Kube(self.server, self.token, self.ca)
        other.impersonate = user
        return other

    # ---- transport -------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                query: dict[str, str] | None = None, timeout: float = 60) -> Any:
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.impersonate:
            headers["Impersonate-User"] = self.impersonate
        for attempt in range(3):
            conn = self._connection(timeout)
            try:
                conn.request(method, url, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                self._local.conn = None
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

    def _connection(self, timeout: float) -> http.client.HTTPSConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=timeout)
            self._local.conn = conn
            with self._lock:
                self._open.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection (a thread that asks again opens a new one)."""
        with self._lock:
            opened, self._open = self._open, []
        for conn in opened:
            conn.close()
        self._local = threading.local()

    # ---- discovery ---------------------------------------------------------------------------------

    def _discover(self, group_version: str) -> None:
        """What one group version serves (`/api/v1` or `/apis/<group>/<version>`): one request,
        where walking every group would cost one per group each time a new kind appears (a CRD
        just applied). A group version the server does not serve has nothing."""
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        try:
            listing = self.request("GET", path)
        except ApiError:  # not served (yet), or an aggregated API with no server behind it
            return
        subs: dict[str, set[str]] = {}
        for r in listing.get("resources", []):
            base, _, sub = r["name"].partition("/")
            if sub:
                subs.setdefault(base, set()).add(sub)
        found = {(group_version, r["kind"]): Resource(group_version, r["kind"], r["name"], r["namespaced"],
                                                      frozenset(subs.get(r["name"], ())))
                 for r in listing.get("resources", []) if "/" not in r["name"]}
        with self._lock:
            self._resources.update(found)

    def resource(self, api_version: str, kind: str, refresh: bool = True) -> Resource | None:
        key = (api_version, kind)
        if key not in self._resources and refresh:
            with self._lock:
                asking = self._asking.setdefault(api_version, threading.Lock())
            with asking:  # the threads missing the same kind ask once
                if key not in self._resources:
                    self._discover(api_version)
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

    def delete_all(self, api_version: str, kind: str, namespace: str, selector: str | None = None,
                   grace_seconds: int | None = None) -> None:
        """Every object of a kind in a namespace (matching `selector`) in one request (a
        DeleteCollection), dependents in the background; nothing to delete is no error."""
        res = self.resource(api_version, kind)
        if res is None:
            return
        prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        try:
            self.request("DELETE", f"{prefix}/namespaces/{namespace}/{res.plural}", options,
                         query={"labelSelector": selector} if selector else None)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def remove_finalizer(self, api_version: str, kind: str, obj: dict[str, Any], finalizer: str) -> None:
        """Take one finalizer off an object as listed (a merge patch at its resourceVersion: a
        newer object is left for the next try); gone already is no error. (Listed items of the
        built-in kinds carry no apiVersion and kind, hence both given.)"""
        meta = obj["metadata"]
        if finalizer not in (meta.get("finalizers") or []):
            return
        rest = [f for f in meta["finalizers"] if f != finalizer]
        try:
            self.request("PATCH", self.path(api_version, kind, meta["name"], meta.get("namespace")),
                         {"metadata": {"finalizers": rest, "resourceVersion": meta["resourceVersion"]}},
                         "application/merge-patch+json")
        except ApiError as exc:
            if exc.status not in (404, 409):
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

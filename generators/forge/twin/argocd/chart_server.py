"""The box's chart server (forge twin argocd), run as its own process: `python chart_server.py
FOLDER PORT`. Standard library only, bound to 127.0.0.1, read-only.

It serves FOLDER (written by forge.twin.argocd.stand_ins) two ways:
- as Helm repositories over HTTP: `GET /<repo>/index.yaml` and the packaged charts beside it;
- as an OCI registry (the distribution API's pull side, what `helm pull oci://` asks):
  `GET /v2/`, `GET|HEAD /v2/<name>/manifests/<tag or digest>`, `GET|HEAD /v2/<name>/blobs/<digest>`
  and `GET /v2/<name>/tags/list`, from FOLDER/oci/<name>/tags/<tag> (a digest) and
  FOLDER/oci/blobs/sha256/<hex>.
"""
from __future__ import annotations

import json
import re
import sys
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
_NAME = r"[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
_ROUTE = re.compile(rf"^/v2/(?P<name>{_NAME})/(?P<kind>manifests|blobs|tags)/(?P<ref>[A-Za-z0-9_.:+-]+)$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class Handler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's name)
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")

    def do_GET(self) -> None:
        if self.path.startswith("/v2"):
            self._registry(body=True)
        else:
            super().do_GET()

    def do_HEAD(self) -> None:
        if self.path.startswith("/v2"):
            self._registry(body=False)
        else:
            super().do_HEAD()

    def _registry(self, body: bool) -> None:
        oci = Path(self.directory) / "oci"
        path = self.path.split("?", 1)[0]
        if path in ("/v2", "/v2/"):
            return self._send(200, "application/json", b"{}", body)
        route = _ROUTE.match(path)
        if route is None:
            return self._error(404, "NAME_UNKNOWN", f"no such path {path}", body)
        name, kind, ref = route["name"], route["kind"], route["ref"]
        if kind == "tags":
            tags = sorted(p.name for p in (oci / name / "tags").glob("*")) if ref == "list" else []
            if not tags:
                return self._error(404, "NAME_UNKNOWN", f"no repository {name}", body)
            return self._send(200, "application/json", json.dumps({"name": name, "tags": tags}).encode(), body)
        digest = ref
        if kind == "manifests" and not _DIGEST.match(ref):
            tag = oci / name / "tags" / ref
            if not tag.is_file():
                return self._error(404, "MANIFEST_UNKNOWN", f"no tag {ref} in {name}", body)
            digest = tag.read_text(encoding="ascii").strip()
        if not _DIGEST.match(digest):
            return self._error(400, "DIGEST_INVALID", f"not a digest: {digest}", body)
        blob = oci / "blobs" / "sha256" / digest.split(":", 1)[1]
        if not blob.is_file():
            code = "MANIFEST_UNKNOWN" if kind == "manifests" else "BLOB_UNKNOWN"
            return self._error(404, code, f"no {kind[:-1]} {digest}", body)
        kind_type = MANIFEST_TYPE if kind == "manifests" else "application/octet-stream"
        self._send(200, kind_type, blob.read_bytes(), body, digest)

    def _error(self, status: int, code: str, message: str, body: bool) -> None:
        self._send(status, "application/json",
                   json.dumps({"errors": [{"code": code, "message": message}]}).encode(), body)

    def _send(self, status: int, content_type: str, data: bytes, body: bool, digest: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if body:
            self.wfile.write(data)


def main(argv: list[str]) -> int:
    folder, port = Path(argv[0]), int(argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(Handler, directory=str(folder)))
    sys.stderr.write(f"serving {folder} on 127.0.0.1:{port}\n")
    sys.stderr.flush()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

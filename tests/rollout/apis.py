"""A real HTTP server on 127.0.0.1 that answers Argo CD's and Prometheus' API calls with the JSON
answers under tests/fixtures/rollout/ (in those APIs' shapes: an ApplicationList, an instant
query's vector), and remembers every call. `@COMMIT@` in an answer becomes the commit the test
says the ring runs.

Routes: /<cluster>/argocd/api/v1/applications and /<cluster>/prometheus/api/v1/query; which
answer each gives is `scenario[(cluster, what)]`, `what` being "applications", "alerts" or an
upgrade gauge's name (the query that names it)."""
from __future__ import annotations

import http.server
import threading
import urllib.parse
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rollout"


class Apis:
    def __init__(self) -> None:
        self.scenario: dict[tuple[str, str], str] = {}
        self.commit = ""
        self.calls: list[tuple[str, dict[str, str]]] = []
        apis = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                url = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(url.query))
                apis.calls.append((url.path, params))
                body = apis.answer(url.path, params)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, params: dict[str, str]) -> bytes | None:
        parts = path.strip("/").split("/", 1)
        if len(parts) != 2:
            return None
        cluster, rest = parts
        if rest == "argocd/api/v1/applications":
            what = "applications"
        elif rest == "prometheus/api/v1/query":
            expr = params.get("query", "")
            what = "alerts" if "ALERTS" in expr else next((w for c, w in self.scenario if c == cluster and w in expr), "")
        else:
            return None
        name = self.scenario.get((cluster, what), "prometheus-empty.json" if what != "applications" else None)
        if name is None:
            return None
        return (FIXTURES / name).read_text().replace("@COMMIT@", self.commit).encode()

    def __enter__(self) -> "Apis":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

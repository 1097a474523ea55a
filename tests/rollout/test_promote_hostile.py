"""`forge promote`'s HTTP calls against hostile answers (issue 36), from real HTTP servers on
127.0.0.1: a redirect to another origin (which must never see the token), a slow trickle, a huge
answer, answers labelled for another cluster or naming a commit only as part of a string, and
malformed JSON shapes. Each is one reason line (the gate does not pass), never a traceback."""
from __future__ import annotations

import datetime as dt
import http.server
import json
import threading
import time

import pytest

from forge.rollout import api, gates
from forge.rollout.rings import Gates, Ring

COMMIT = "a" * 40


class Server:
    """Answers every GET with `self.handle(handler)`; remembers the Authorization headers it saw."""

    def __init__(self, handle) -> None:
        self.handle, self.tokens = handle, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.tokens.append(self.headers.get("Authorization"))
                server.handle(self)

            def log_message(self, *args) -> None:
                pass

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def __enter__(self) -> "Server":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.http.shutdown()
        self.http.server_close()


def send(handler, body: bytes, status: int = 200, **headers: str) -> None:
    handler.send_response(status)
    for key, value in {"Content-Length": str(len(body)), **headers}.items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


def app(name: str = "a100-root", cluster: str = "a100", **status) -> dict:
    return {"metadata": {"name": name, "labels": {"forge.exa.ai/cluster": cluster}}, "status": status}


def test_a_redirect_to_another_origin_is_refused_and_the_token_never_leaves(monkeypatch):
    monkeypatch.setenv("ARGOCD_AUTH_TOKEN", "tok-secret")
    with Server(lambda h: send(h, b'{"items": []}')) as elsewhere, \
            Server(lambda h: send(h, b"", 302, Location=f"{elsewhere.url}/steal")) as argocd:
        with pytest.raises(api.Unreachable, match="follows no redirect"):
            api.applications(argocd.url, "a100")
    assert argocd.tokens == ["Bearer tok-secret"] and elsewhere.tokens == []


def test_a_slow_answer_is_cut_at_the_time_limit(monkeypatch):
    monkeypatch.setattr(api, "TIMEOUT_SECONDS", 1)

    def trickle(handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", "100000")
        handler.end_headers()
        for _ in range(40):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.1)

    with Server(trickle) as slow:
        with pytest.raises(api.Unreachable, match="no whole answer within"):
            api.applications(slow.url, "a100")


def test_a_huge_answer_is_not_read_whole(monkeypatch):
    monkeypatch.setattr(api, "MAX_ANSWER_BYTES", 1 << 20)
    with Server(lambda h: send(h, b'{"items": [' + b" " * (2 << 20) + b"]}")) as big:
        with pytest.raises(api.Unreachable, match="larger than 1 MiB"):
            api.applications(big.url, "a100")


def test_an_answer_labelled_for_another_cluster_is_refused():
    body = json.dumps({"items": [app(cluster="h200")]}).encode()
    with Server(lambda h: send(h, body)) as argocd:
        with pytest.raises(api.Unreachable, match="is labelled forge.exa.ai/cluster=h200, not a100"):
            api.applications(argocd.url, "a100")


def test_a_revisions_string_that_contains_the_commit_is_not_the_commit():
    ring = Ring(name="canary", soak_minutes=0, gates=Gates())
    status = {"sync": {"status": "Synced", "revisions": f"x{COMMIT}y"}, "health": {"status": "Healthy"}}
    reasons = gates._app_reasons("a100", "a100-root", status, ring, COMMIT, dt.datetime.now(dt.timezone.utc))
    assert any("not the ring's commit" in r for r in reasons), reasons


MALFORMED = [b"[1, 2]", b'{"items": [1]}', b'{"items": [{"metadata": 3}]}', b'{"items": {"a": 1}}',
             json.dumps({"items": [app(status=None) | {"status": {"sync": "Synced"}}]}).encode(),
             json.dumps({"items": [app() | {"status": {"health": {"status": "Degraded"}, "resources": [1, {"health": 2}]}}]}).encode(),
             json.dumps({"items": [app() | {"status": {"health": {"status": "Healthy", "lastTransitionTime": 5}}}]}).encode(),
             b"[" * 100000, b"\xff\xfe", b"null"]
PROMETHEUS = [b'{"status": "success", "data": 3}', b'{"status": "success", "data": {"resultType": "vector", "result": [1]}}',
              b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": 1, "value": [0, "1"]}]}}',
              b'{"status": "success", "data": {"resultType": "vector", "result": {"a": 1}}}', b'{"status": 5}']


@pytest.mark.parametrize("body", MALFORMED)
def test_a_malformed_argo_cd_answer_is_one_reason_never_a_traceback(body):
    ring = Ring(name="canary", soak_minutes=240, gates=Gates())
    with Server(lambda h: send(h, body)) as hostile:
        try:
            apps = api.applications(hostile.url, "a100")
        except api.Unreachable as exc:
            assert "\n" not in str(exc) and str(exc).startswith("GET ") or "Argo CD answered" in str(exc)
            return
    for item in apps:
        reasons = gates._app_reasons("a100", item["metadata"]["name"], item.get("status") or {}, ring, COMMIT,
                                     dt.datetime.now(dt.timezone.utc))
        assert reasons and all("\n" not in r for r in reasons)


@pytest.mark.parametrize("body", PROMETHEUS)
def test_a_malformed_prometheus_answer_is_one_line_never_a_traceback(body):
    with Server(lambda h: send(h, body)) as hostile:
        with pytest.raises(api.Unreachable) as caught:
            api.query(hostile.url, "up")
    assert "\n" not in str(caught.value)

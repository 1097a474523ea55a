"""Argo CD's cache in the box: redis-server of the pinned version, or one line saying what to
install. ci/tools.json said apt-get installed it; nothing did, and `forge twin argocd` ended in
"redis-server: No such file or directory" from the process starter."""
from __future__ import annotations

import json

import pytest

from forge.errors import ForgeError
from forge.twin.argocd.served import redis_server
from tests.helpers import REPO

PIN = json.loads((REPO / "ci/tools.json").read_text())["redis"]


def test_no_redis_server_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ForgeError, match=f"redis-server is not installed.*apt-get install {PIN['debian_package']}"):
        redis_server(REPO)


def test_a_redis_server_of_another_version_is_named(monkeypatch, tmp_path):
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'Redis server v=6.0.16 sha=0 malloc=libc bits=64'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ForgeError, match=f"is redis 6.0.16, ci/tools.json pins {PIN['version']}"):
        redis_server(REPO)


def test_the_pinned_redis_server_is_found(monkeypatch, tmp_path):
    fake = tmp_path / "redis-server"
    fake.write_text(f"#!/bin/sh\necho 'Redis server v={PIN['version']} sha=0 malloc=libc bits=64'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert redis_server(REPO) == str(fake)

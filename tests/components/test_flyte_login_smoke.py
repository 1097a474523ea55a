"""Issue 33: the login proven after each sync. The PostSync Job gets a client-credentials token with
the propeller client and lists Flyte's projects; a failure is one line naming the step."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from forge.components.flyte import smoke
from tests.helpers import CLUSTERS, generated


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_cluster_with_a_login_has_the_smoke_job(cluster):
    job = generated(f"overlays/{cluster}/flyte/job-flyte-login-smoke.yaml")
    assert job["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["FLYTE_AUDIENCE"] == f"https://flyte.{cluster}.exa.internal"
    assert env["FLYTE_CLIENT_ID"] == "flytepropeller" and env["FLYTE_SCOPES"] == "all"
    assert env["FLYTE_ADMIN_URL"] == "http://flyte-http.flyte.svc.cluster.local:8088"
    assert job["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == "flyte-client-secrets"


def test_an_unreachable_identity_provider_is_one_line_and_exit_1(tmp_path):
    """The script as the Job runs it (standard library only): nothing listens on the issuer's port."""
    (tmp_path / "client_secret").write_text("s3cret\n")
    env = {**os.environ, "FLYTE_OIDC_ISSUER": "http://127.0.0.1:9/realms/exa", "FLYTE_CLIENT_ID": "flytepropeller",
           "FLYTE_SCOPES": "all", "FLYTE_AUDIENCE": "https://flyte.h200.exa.internal",
           "FLYTE_ADMIN_URL": "http://127.0.0.1:9", "FLYTE_CLIENT_SECRET_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", smoke.SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [done.stdout.strip()] and done.stdout.startswith("flyte login smoke test: discovery: URLError")
    assert done.stderr == ""

"""The login, proven after every sync: a PostSync Job in Flyte's namespace that gets a
client-credentials token from the identity provider (the propeller client, its secret from the
Secret the chart mounts) with the scopes and audience forge configures, and lists Flyte's projects
with it (`GET /api/v1/projects` on the in-cluster HTTP service). Any step that fails is one line
naming the step and what the server said, exit 1: Argo CD marks the sync failed, with that line in
the Job's log. Standard library only, in the pinned Python image.
"""
from __future__ import annotations

from typing import Any

from forge.facts import versions
from forge.components.flyte.auth import FlyteAuth, audience
from forge.components.scheduling import SYSTEM_CLUSTER_CRITICAL
from forge.model.cluster import ClusterModel

IMAGE = "prerequisites-check"  # images in charts/versions.yaml: the official Python image, standard library only
JOB = "flyte-login-smoke"
SECRET_DIR = "/etc/flyte-client"
NOBODY = 65534

SCRIPT = r'''
import json, os, sys, urllib.error, urllib.parse, urllib.request

def fail(step, why):
    print(f"flyte login smoke test: {step}: {why}", flush=True)
    sys.exit(1)

def fetch(step, request):
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as exc:
        body = exc.read()[:300].decode("utf-8", "replace").replace("\n", " ")
        fail(step, f"HTTP {exc.code} {exc.reason}: {body}")
    except Exception as exc:
        fail(step, f"{type(exc).__name__}: {exc}")

env = os.environ
issuer = env["FLYTE_OIDC_ISSUER"].rstrip("/")
meta = fetch("discovery", f"{issuer}/.well-known/openid-configuration")
try:
    secret = open(os.path.join(env["FLYTE_CLIENT_SECRET_DIR"], "client_secret")).read().strip()
except OSError as exc:
    fail("client secret", f"{exc.strerror}: {exc.filename}")
form = {"grant_type": "client_credentials", "client_id": env["FLYTE_CLIENT_ID"], "client_secret": secret,
        "scope": env["FLYTE_SCOPES"]}
if env.get("FLYTE_AUDIENCE"):
    form["audience"] = env["FLYTE_AUDIENCE"]
token = fetch("token", urllib.request.Request(meta.get("token_endpoint", ""), data=urllib.parse.urlencode(form).encode()))
if "access_token" not in token:
    fail("token", "the answer has no access_token")
projects = fetch("list projects", urllib.request.Request(env["FLYTE_ADMIN_URL"] + "/api/v1/projects",
                 headers={"Authorization": "Bearer " + token["access_token"], "Accept": "application/json"}))
names = sorted(p.get("id", "?") for p in projects.get("projects", []))
print(f"flyte login smoke test: ok: {len(names)} projects ({', '.join(names)})", flush=True)
'''


def smoke_job(cluster: ClusterModel, auth: FlyteAuth, host: str | None, namespace: str, admin_url: str) -> dict[str, Any]:
    env = {"FLYTE_OIDC_ISSUER": auth.issuer, "FLYTE_CLIENT_ID": auth.propeller_client_id, "FLYTE_SCOPES": " ".join(auth.scopes),
           "FLYTE_AUDIENCE": audience(auth, host) or "", "FLYTE_ADMIN_URL": admin_url, "FLYTE_CLIENT_SECRET_DIR": SECRET_DIR}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": JOB, "namespace": namespace, "annotations": {
            "argocd.argoproj.io/hook": "PostSync", "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation"}},
        "spec": {
            "backoffLimit": 3,  # Flyte may still be starting after a sync
            "activeDeadlineSeconds": 600,
            "template": {"spec": {
                "restartPolicy": "OnFailure",
                "priorityClassName": SYSTEM_CLUSTER_CRITICAL,
                "nodeSelector": cluster.system_node_selector,
                "tolerations": cluster.system_tolerations,
                "automountServiceAccountToken": False,  # it talks to the identity provider and Flyte, never the API server
                "securityContext": {"runAsNonRoot": True, "runAsUser": NOBODY, "runAsGroup": NOBODY,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "login",
                    "image": versions.image(IMAGE).ref,
                    "command": ["python3", "-c", SCRIPT],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "128Mi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "client", "mountPath": SECRET_DIR, "readOnly": True}],
                }],
                "volumes": [{"name": "client", "secret": {"secretName": auth.secret, "items": [
                    {"key": "client_secret", "path": "client_secret"}]}}],
            }},
        },
    }

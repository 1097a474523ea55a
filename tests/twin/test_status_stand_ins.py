"""Issue 31: the box's status stand-ins (forge.twin.argocd.status_stand_ins) write, for the custom
resources of operators the box does not run, the status those operators write when all is well.
Without a box: each written status passes the health check Argo CD runs for its kind (forge's own
Lua in argocd-cm, else Argo CD v3.6.2's built-in resource_customizations/<group>/<kind>/health.lua,
read from Go's module cache where the box's build put it), and the same object without status
does not, so these fail without the stand-in."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from forge.argocd.config import health_checks, health_key
from forge.errors import ForgeError
from forge.twin.argocd.status_stand_ins import STAND_INS, StandIn, StatusWriter
from forge.twin.kube import ApiError
from tests.argocd.test_bootstrap import run_health
from tests.helpers import REPO

ARGOCD = json.loads((REPO / "ci" / "tools.json").read_text(encoding="utf-8"))["twin"]["argocd-box"]


def module_cache() -> Path:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    if shutil.which("go"):
        out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=60).stdout.strip()
        if out:
            return Path(out)
    return Path.home() / "go" / "pkg" / "mod"


BUILTIN = module_cache() / f"{ARGOCD['module']}@{ARGOCD['version']}" / "resource_customizations"


def health_script(stand_in: StandIn) -> str:
    group = stand_in.api_version.split("/")[0]
    forge_own = health_checks().get(health_key(group, stand_in.kind))
    if forge_own is not None:
        return forge_own
    builtin = BUILTIN / group / stand_in.kind / "health.lua"
    if not builtin.is_file():
        pytest.skip(f"Argo CD {ARGOCD['version']}'s built-in health check of {stand_in.kind} is not in Go's "
                    f"module cache ({builtin}): build the box's Argo CD once (`forge twin argocd`)")
    return builtin.read_text(encoding="utf-8")


def sample(stand_in: StandIn) -> dict:
    group = stand_in.api_version.split("/")[0]
    specs = {"ExternalSecret": {"target": {"name": "flyte-db"}},
             "NicClusterPolicy": {"ofedDriver": {"version": "x"}, "secondaryNetwork": {"multus": {"image": "m"}}}}
    return {"apiVersion": stand_in.api_version, "kind": stand_in.kind,
            "metadata": {"name": "forge", "namespace": "flyte", "generation": 2},
            "spec": specs.get(stand_in.kind, {"group": group})}


@pytest.mark.parametrize("stand_in", STAND_INS, ids=lambda s: s.kind)
def test_the_written_status_is_healthy_by_argo_cds_own_check(stand_in):
    script, obj = health_script(stand_in), sample(stand_in)
    assert run_health(script, obj)[0] != "Healthy"  # what Argo CD saw in the box: no operator, no status
    status, message = run_health(script, {**obj, "status": stand_in.status(obj)})
    assert status == "Healthy", message
    assert stand_in.written({**obj, "status": stand_in.status(obj)})
    assert not stand_in.written(obj)


def test_external_secret_status_names_its_target_as_the_operator_does():
    es = next(s for s in STAND_INS if s.kind == "ExternalSecret")
    obj = sample(es)
    assert es.status(obj)["binding"] == {"name": "flyte-db"}
    obj["spec"] = {}
    assert es.status(obj)["binding"] == {"name": "forge"}


def test_nic_cluster_policy_lists_the_states_its_spec_asks_for_as_ready():
    nic = next(s for s in STAND_INS if s.kind == "NicClusterPolicy")
    states = {a["name"]: a["state"] for a in nic.status(sample(nic))["appliedStates"]}
    assert {n for n, s in states.items() if s == "ready"} == {"state-OFED", "state-multus-cni"}
    assert set(states.values()) == {"ready", "ignore"}


def test_every_stood_in_kind_is_listed_in_docs_twin():
    doc = (REPO / "docs" / "twin.md").read_text(encoding="utf-8")
    section = doc[doc.index("### Status stand-ins"):]
    missing = [s.kind for s in STAND_INS if f"`{s.api_version.split('/')[0]}/{s.kind}`" not in section]
    assert not missing, f"docs/twin.md 'Status stand-ins' does not list {missing}"


class FakeKube:
    """Lists objects per kind and records status patches; a kind not served raises as the API server does."""

    def __init__(self, objects: dict[str, list[dict]]) -> None:
        self.objects, self.patches = objects, []

    def list(self, api_version, kind, namespace=None, selector=None):
        if kind not in self.objects:
            raise ApiError(404, {"message": "not served"})
        return self.objects[kind]

    def path(self, api_version, kind, name=None, namespace=None, subresource=None):
        return "/".join(p for p in (api_version, namespace, kind, name, subresource) if p)

    def request(self, method, path, body=None, content_type="", query=None, timeout=60):
        self.patches.append((method, path, body, content_type))
        if self.refuse:
            raise ApiError(422, {"message": "status.conditions[0].type: Unsupported value"})
        return {}

    refuse = False


def test_a_status_the_server_refuses_is_one_line_naming_the_object():
    kube = FakeKube({"ClusterSecretStore": [{"metadata": {"name": "forge"}, "spec": {}}]})
    kube.refuse = True
    with pytest.raises(ForgeError, match=r"ClusterSecretStore/forge refused .*Unsupported value"):
        StatusWriter(kube, print)()  # type: ignore[arg-type]


def test_the_writer_patches_only_the_status_subresource_and_says_each_kind_once():
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    es = [{"metadata": {"name": n, "namespace": "flyte"}, "spec": {}} for n in ("a", "b")]
    kube = FakeKube({"ClusterSecretStore": [{"metadata": {"name": "forge"}, "spec": {}, "status": ready}],
                     "ExternalSecret": es})
    said: list[str] = []
    writer = StatusWriter(kube, said.append)  # type: ignore[arg-type]
    writer()
    assert [p[1] for p in kube.patches] == ["external-secrets.io/v1/flyte/ExternalSecret/a/status",
                                            "external-secrets.io/v1/flyte/ExternalSecret/b/status"]
    assert all(set(p[2]) == {"status"} and p[3] == "application/merge-patch+json" for p in kube.patches)
    assert said == ["twin argocd: box-only: status of ExternalSecret/a written as External Secrets would: "
                    "Ready (secret synced)"]
    for obj in es:
        obj["status"] = ready
    writer()
    assert len(kube.patches) == 2 and len(said) == 1

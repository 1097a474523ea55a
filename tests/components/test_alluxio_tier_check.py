"""Issue 22 item 9: no Alluxio worker starts on a tier path that is not a mount point. A
MutatingAdmissionPolicy gives every worker pod of a release a first init container that runs
`mountpoint -q` on that release's SSD tier paths (seen through their parent folders of the host)
and fails, naming them, when one is not mounted. The real API server applying it:
tests/twin/test_admission_fences.py."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from forge.facts import versions
from forge.components.alluxio import Alluxio, tier_check
from tests.helpers import generated, model


def policy_and_binding(cluster: str) -> tuple[dict, dict]:
    name = tier_check.policy_name("alluxio")
    return (generated(f"overlays/{cluster}/alluxio/mutatingadmissionpolicy-{name}.yaml"),
            generated(f"overlays/{cluster}/alluxio/mutatingadmissionpolicybinding-{name}.yaml"))


@pytest.mark.parametrize("cluster, parents", [("h200", ["/mnt"]), ("a100", ["/mnt"])])
def test_every_worker_pod_checks_exactly_its_tier_paths_first(cluster, parents):
    policy, binding = policy_and_binding(cluster)
    spec = policy["spec"]
    assert policy["apiVersion"] == "admissionregistration.k8s.io/v1beta1" and spec["failurePolicy"] == "Fail"
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["alluxio"]
    [condition] = spec["matchConditions"]
    for label in ("object.metadata.labels['app'] == 'alluxio'", "object.metadata.labels['release'] == 'alluxio'",
                  "object.metadata.labels['role'] == 'alluxio-worker'"):
        assert label in condition["expression"]
    assert "variables" not in spec  # the API server refuses Object types in policy variables
    [mutation] = spec["mutations"]
    assert mutation["patchType"] == "JSONPatch"  # a container's command is an atomic list
    check = patch = mutation["jsonPatch"]["expression"]
    assert f"image: '{versions.image('alluxio').ref}'" in check  # the pinned image, the workers' own
    paths = [d.path for d in Alluxio().facts(model(cluster)).pools[0].layout.ssd]
    assert f"for p in {' '.join('/host' + p for p in paths)}; do mountpoint -q" in check
    for i, parent in enumerate(parents):
        assert (f"volumeMounts{{name: 'forge-tier-parent-{i}', mountPath: '/host{parent}', readOnly: true, "
                "mountPropagation: 'HostToContainer'}") in check
    # Before any other init container; an empty list made first where the pod has none.
    assert patch.startswith("(has(object.spec.initContainers) ? [] : [JSONPatch{op: 'add', path: '/spec/initContainers', "
                            "value: []}]) + [JSONPatch{op: 'add', path: '/spec/initContainers/0', value: "
                            "Object.spec.initContainers{name: 'forge-tier-mounts',")
    assert "hostPath: Object.spec.volumes.hostPath{path: '/mnt', type: 'Directory'}" in patch


def test_each_worker_release_gets_its_own_policy_for_its_own_paths():
    objs = tier_check.objects("alluxio", [("alluxio", {"release": "alluxio"}, ["/mnt/nvme0"]),
                                          ("alluxio-small", {"release": "alluxio-small"}, ["/data/a", "/scratch/b"])])
    names = [o["metadata"]["name"] for o in objs]
    assert names == ["forge-alluxio-worker-mounts"] * 2 + ["forge-alluxio-small-worker-mounts"] * 2
    small = objs[2]["spec"]
    small_patch = small["mutations"][0]["jsonPatch"]["expression"]
    assert "for p in /host/data/a /host/scratch/b;" in small_patch
    assert "'forge-tier-parent-1', mountPath: '/host/scratch'" in small_patch
    assert tier_check.objects("alluxio", [("alluxio", {}, [])]) == []  # no SSD tier, nothing to check


def test_the_check_runs_a_real_shell_against_real_mount_points(tmp_path):
    """The generated script under bash with mountpoint itself: the root of a real filesystem (/proc)
    passes; a folder that is no mount point fails the container, named in its message."""
    if not shutil.which("mountpoint"):
        pytest.skip("util-linux mountpoint not installed")
    ok = subprocess.run(["bash", "-c", tier_check.script(["/proc"]).replace("/host", "")], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    empty = tmp_path / "nvme1"
    empty.mkdir()
    bad = subprocess.run(["bash", "-c", tier_check.script(["/proc", str(empty)]).replace("/host", "")],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1
    assert f"forge: Alluxio tier path(s) {empty} not mounted: refusing to cache onto the root disk" in bad.stderr

"""Issue 21 items 3 and 4: the secret store serves only the namespaces that read from it, nobody
with `edit` may write ExternalSecrets, and every S3 consumer has its own credential."""
from __future__ import annotations

import pytest

from tests.helpers import CLUSTERS, REPO, generated, generated_dir, model


def external_secrets(cluster: str) -> list[dict]:
    return [o for c in sorted((REPO / "overlays" / cluster).iterdir()) for o in generated_dir(f"overlays/{cluster}/{c.name}", "externalsecret-")]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_the_store_serves_exactly_the_namespaces_that_read_from_it(cluster):
    store = generated(f"overlays/{cluster}/external-secrets/clustersecretstore-forge.yaml")
    used = sorted({o["metadata"]["namespace"] for o in external_secrets(cluster)})
    assert store["spec"]["conditions"] == [{"namespaces": used}]
    assert "external-secrets" not in used and "kube-system" not in used and "default" not in used


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_edit_and_admin_get_no_rights_on_externalsecrets(cluster):
    rbac = generated(f"overlays/{cluster}/external-secrets/values.yaml")["rbac"]
    assert rbac == {"aggregateToEdit": False, "aggregateToAdmin": False}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_s3_consumer_has_its_own_remote_key(cluster):
    found = {}
    for o in external_secrets(cluster):
        keys = {d["remoteRef"]["key"] for d in o["spec"]["data"]}
        if o["spec"]["target"]["name"] == "s3-credentials":
            [found[o["metadata"]["namespace"]]] = keys
    assert found.pop("alluxio") == f"forge/{cluster}/s3-alluxio"
    assert found.pop("loki") == f"forge/{cluster}/s3-loki"
    assert found.pop("flyte") == f"forge/{cluster}/s3-flyte"  # Flyte's control plane
    assert found  # the task pods: one key per project, in each of its domains
    for ns, key in found.items():
        project = ns.rsplit("-", 1)[0]
        assert key == f"forge/{cluster}/s3-tasks-{project}"
    assert len(set(found.values())) == len({ns.rsplit("-", 1)[0] for ns in found})


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_alluxio_mounts_the_datasets_bucket_read_only(cluster):
    job = generated(f"overlays/{cluster}/alluxio/job-alluxio-mount-buckets.yaml")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    lines = {line.split("grep -qx ")[1].split(";")[0]: line for line in script.splitlines() if "grep -qx" in line}
    buckets = model(cluster).settings.s3.buckets
    ro = lines.pop(f"/{buckets['datasets']}")
    assert f"alluxio fs mount --readonly /{buckets['datasets']} s3://{buckets['datasets']}/" in ro
    assert f"alluxio fs updateMount --readonly /{buckets['datasets']}" in ro  # a writable mount of an earlier sync turns read-only
    assert lines and all("--readonly" not in line for line in lines.values())  # checkpoints and Flyte's bucket stay writable


def test_remote_keys_accept_per_project_task_roles_and_refuse_the_shared_one():
    from tests.helpers import edit, inventory_text, line_of, model, problems_of
    from forge.components.external_secrets import ExternalSecrets, remote_key
    base = inventory_text("h200")
    store = "      credentials_secret: external-secrets-aws\n"
    text = edit(base, store, store + "    remote_keys: {s3-tasks-training: team/training/s3}\n")
    m = model("h200", text)
    assert remote_key(m, ExternalSecrets().settings(m), "s3-tasks-training") == "team/training/s3"
    text = edit(base, store, store + "    remote_keys: {s3: forge/h200/s3}\n")
    problems = problems_of("h200", text)
    assert problems and all(p.line == line_of(text, "remote_keys:") for p in problems)

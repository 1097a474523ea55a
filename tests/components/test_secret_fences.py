"""Issue 21 items 3 and 4: the secret store serves only the namespaces that read from it, nobody
with `edit` may write ExternalSecrets, and every S3 consumer has its own credential."""
from __future__ import annotations

import pytest

from tests.helpers import CLUSTERS, REPO, generated, generated_dir


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

"""The central Argo CD: one ApplicationSet per component over the cluster generator gives every
cluster exactly the child Applications of the per-cluster form, and the ApplicationSets and
cluster Secrets validate against Argo CD v3.4.4's CRDs, the argo-cd chart's and External
Secrets'."""
from __future__ import annotations


import pytest

from forge.argocd.bootstrap import app_name
from forge.fleet import components_of, load_fleet
from forge.rollout.appset import central_clusters, central_objects, child_application, generated_applications
from forge.validate.crd import CrdSchemas
from tests.helpers import copy_repo_inputs, edit, forge, needs_upstream, upstream_data

CENTRAL = "    ring: {ring}\n"


def central(text: str, cluster: str) -> str:
    text = edit(text, "  argocd:\n", f"  argocd:\n    destination: {{server: 'https://api.{cluster}.exa.internal:6443'}}\n")
    return text.replace("    prometheus_url:", "    central: true\n    prometheus_url:", 1)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The shipped fleets plus a second canary (a101, a copy of a100), all run centrally."""
    root = copy_repo_inputs(tmp_path_factory.mktemp("central"))
    for name in ("a100", "h200"):
        path = root / "clusters" / name / "inventory.yaml"
        path.write_text(central(path.read_text(), name))
    copy = root / "clusters" / "a101" / "inventory.yaml"
    copy.parent.mkdir()
    copy.write_text((root / "clusters" / "a100" / "inventory.yaml").read_text().replace("a100", "a101"))
    return load_fleet(root)


def split(files):
    appsets = [o for n, o in files.items() if n.startswith("applicationset-")]
    secrets = [o for n, o in files.items() if n.startswith("externalsecret-")]
    return appsets, secrets


def test_the_application_sets_generate_the_per_cluster_child_applications(fleet):
    clusters = central_clusters(fleet)
    assert [c.name for c in clusters] == ["a100", "a101", "h200"]
    appsets, secrets = split(central_objects(fleet, clusters))
    made = generated_applications(appsets, secrets, {c.name: c for c in clusters})
    expected = {app_name(c, comp.name): child_application(c, comp, fleet.pins) for c in clusters for comp in components_of(c)}
    assert sorted(made) == sorted(expected)
    for name, app in expected.items():
        assert made[name] == app, name
    # One ApplicationSet per component: a100 and a101 share every template, h200's differ only
    # where its Application has another shape (extra releases, the fabric).
    names = sorted(a["metadata"]["name"] for a in appsets)
    components = sorted({comp.name for c in clusters for comp in components_of(c)})
    assert [n for n in names if not n[-2:-1] == "-" or not n[-1].isdigit()] == [f"forge-{c}" for c in components]
    ring_of = {s["metadata"]["name"]: s["spec"]["target"]["template"]["metadata"]["labels"]["forge.exa.ai/ring"] for s in secrets}
    assert ring_of == {"cluster-a100": "canary", "cluster-a101": "canary", "cluster-h200": "fleet"}
    by_name = {a["metadata"]["name"]: a for a in made.values()}
    assert {s["targetRevision"] for s in by_name["a101-alloy"]["spec"]["sources"]} == {"forge/ring/canary"}


def test_the_cluster_secret_carries_the_inventory_labels(fleet):
    files = central_objects(fleet, central_clusters(fleet))
    secret = files["externalsecret-cluster-h200.yaml"]["spec"]["target"]["template"]
    labels = secret["metadata"]["labels"]
    assert labels["argocd.argoproj.io/secret-type"] == "cluster"
    assert (labels["forge.exa.ai/cluster"], labels["forge.exa.ai/ring"], labels["forge.exa.ai/gpu-model"]) == ("h200", "fleet", "H200-141GB")
    assert secret["data"]["server"] == "https://api.h200.exa.internal:6443"
    assert files["argocd-values.yaml"]["controller"]["replicas"] == 1  # 3 clusters: one shard


@needs_upstream
@pytest.mark.parametrize("crds", ["argo-cd-crds-v3.4.4", "argo-cd-10.1.1"])
def test_they_validate_against_argo_cd_and_external_secrets_crds(fleet, crds):
    schemas = CrdSchemas()
    assert schemas.add_dir(upstream_data(crds) / "crds") >= 3
    assert schemas.add_dir(upstream_data("external-secrets-2.9.0") / "crds") > 0
    files = central_objects(fleet, central_clusters(fleet))
    appsets, secrets = split(files)
    for obj in appsets + secrets:
        assert schemas.validate(obj) == [], obj["metadata"]["name"]
    made = generated_applications(appsets, secrets, {c.name: c for c in central_clusters(fleet)})
    for app in made.values():
        assert schemas.validate(app) == [], app["metadata"]["name"]


def test_two_central_clusters_on_one_api_server_are_refused(tmp_path):
    root = copy_repo_inputs(tmp_path)
    for name in ("a100", "h200"):
        path = root / "clusters" / name / "inventory.yaml"
        path.write_text(path.read_text().replace("    prometheus_url:", "    central: true\n    prometheus_url:", 1))
    result = forge(root, "appsets")
    assert result.exit_code == 2
    assert "clusters/h200/inventory.yaml: cluster.argocd.destination.server: https://kubernetes.default.svc is also cluster a100's" in result.output


def test_an_unwritable_out_folder_is_one_line(fleet, tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("")
    result = forge(fleet.root, "appsets", "--out", str(taken / "central"))
    assert result.exit_code == 2
    assert result.output.startswith(f"error: --out: cannot write {taken / 'central'} (") and "Traceback" not in result.output
    assert not list((fleet.root / "build").glob("central/*"))

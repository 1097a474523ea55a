"""Issue 33: developer pods per project. Each hub admits only its project's group, is served over
TLS to Flyte's source ranges only, and keeps homes off a GPU node's root disk."""
from __future__ import annotations

from tests.helpers import edit, generated, inventory_text, only_problem, problems_of


def test_each_hub_admits_only_its_projects_group_over_tls_from_the_source_ranges():
    hub = generated("overlays/h200/jupyterhub/values-jupyterhub-research.yaml")
    oauth = hub["hub"]["config"]["GenericOAuthenticator"]
    assert (oauth["allow_all"], oauth["claim_groups_key"], oauth["allowed_groups"]) == (False, "groups", ["research"])
    host = "research.jupyter.h200.exa.internal"
    assert hub["ingress"]["tls"] == [{"hosts": [host], "secretName": "jupyterhub-tls"}]
    assert hub["ingress"]["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"] == "10.0.0.0/8"
    assert hub["singleuser"]["storage"]["dynamic"]["storageClass"] == "nfs-homes"
    es = generated("overlays/h200/jupyterhub/externalsecret-jupyterhub-tls.yaml")
    assert es["spec"]["target"]["name"] == "jupyterhub-tls"


def test_homes_on_a_node_local_class_are_refused():
    text = edit(inventory_text("h200"), "    home_storage_class: nfs-homes\n", "")
    p = only_problem(problems_of("h200", text), "components.jupyterhub")
    assert "users' homes on StorageClass 'local-path' stay on the node of the first spawn" in p.message

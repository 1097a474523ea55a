"""Issue 36, reserved namespaces: a Flyte project-domain namespace (`<project>-<domain>`) is none
that a component, a prerequisite or the cluster's own settings use (forge.fleet.scope). A project
`ingress` with domain `nginx` took over the ingress controller's namespace `ingress-nginx`: forge
wrote a quota and default-deny policies into it and made it a destination of Flyte's AppProject.

The reserved set is derived from the sources of truth (the inventory's fields, each component's
declared namespaces and settings, the prerequisites), and the last test holds it to what forge
really writes: every namespace the shipped clusters' generated output names is reserved or a
project-domain one."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import yaml

from forge.fleet import load_fleet, registry
from forge.fleet.scope import reserved_namespaces
from tests.helpers import H200_FILE, REPO, copy_repo_inputs, edit, forge, inventory_text, line_of, problems

H200 = inventory_text("h200")
PROJECT = "components.flyte.projects[3].name"  # research, the fourth project of h200


def _project(text: str, project: str, domain: str) -> str:
    """h200 with its fourth project (research) renamed and its staging domain renamed."""
    text = edit(edit(text, "{name: research,", f"{{name: {project},"), "      research: {flavor", f"      {project}: {{flavor")
    return edit(text, "{name: staging, share_percent: 10}", f"{{name: {domain}, share_percent: 10}}")


def _mine(text: str) -> str:
    found = [p for p in problems(text) if f": {PROJECT}: " in p]
    assert len(found) == 1, problems(text)
    return found[0]


def test_project_ingress_domain_nginx_is_refused_naming_the_ingress_controller():
    text = _project(H200, "ingress", "nginx")
    p = _mine(text)
    assert p.startswith(f"{H200_FILE}:{line_of(text, '{name: ingress,')}: {PROJECT}: "), p
    assert "makes the namespace 'ingress-nginx', which is the ingress controller's (cluster.ingress_namespace)" in p, p
    assert "rename the project" in p


def test_the_ingress_controllers_namespace_is_the_inventorys_not_the_default():
    """Read from cluster.ingress_namespace: a cluster whose controller lives elsewhere reserves that."""
    text = edit(H200, "  storage_class:", "  ingress_namespace: research-staging\n  storage_class:")
    assert "which is the ingress controller's (cluster.ingress_namespace)" in _mine(text)


def test_the_network_operators_network_namespace_is_reserved():
    """Where the Network Operator writes the rails' NetworkAttachmentDefinitions (its setting
    network_namespace), which the GPU pods and the node gate's tests name."""
    text = edit(H200, "  external-secrets:", "  network-operator:\n    network_namespace: research-staging\n  external-secrets:")
    assert "which is component network-operator's (network_namespace)" in _mine(text)


def _names(value: Any, key: str | None = None) -> Iterator[str]:
    """Every namespace an object names: `namespace` and `networkNamespace` fields (metadata,
    subjects, AppProject and Application destinations), namespace selectors by name, and the same
    inside the JSON configuration forge ships in ConfigMaps (the node gate's, the prerequisites')."""
    if isinstance(value, dict):
        if value.get("key") == "kubernetes.io/metadata.name":
            yield from value.get("values") or []
        for k, v in value.items():
            if k in ("namespace", "networkNamespace", "kubernetes.io/metadata.name") and isinstance(v, str):
                yield v
            yield from _names(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from _names(v)
    elif isinstance(value, str) and key is not None and key.endswith(".json"):
        yield from _names(json.loads(value))


def _written(root: Path, cluster: str, components: list[str]) -> dict[str, str]:
    """Namespace -> one file of the cluster's generated output (and its components' bases) naming it."""
    files = [*(root / "overlays" / cluster).rglob("*"), *(root / "clusters" / cluster / "argocd").rglob("*"),
             *(p for c in components for p in (root / "base" / c).rglob("*"))]
    found: dict[str, str] = {}
    for path in sorted(files):
        if not path.is_file() or path.suffix not in (".yaml", ".json"):
            continue
        text = path.read_text(encoding="utf-8")
        docs = [json.loads(text)] if path.suffix == ".json" else list(yaml.safe_load_all(text))
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            names = list(_names(doc))
            if doc.get("kind") == "Namespace":
                names.append(doc["metadata"]["name"])
            for ns in names:
                found.setdefault(ns, path.relative_to(root).as_posix())
    return found


def test_every_namespace_the_shipped_clusters_output_names_is_reserved_or_a_projects():
    """The generated output as committed (forge check keeps it in step with generate): its
    namespaces minus the Flyte project-domain ones are all reserved, so no project can take one."""
    for plan in load_fleet(REPO):
        projects = set(plan.cluster.component_facts["flyte"].namespaces) if "flyte" in plan.cluster.component_facts else set()
        reserved = reserved_namespaces(plan.loaded, plan.cluster.component_settings, registry())
        written = _written(REPO, plan.name, [c.name for c in plan.components])
        assert {"ingress-nginx", plan.cluster.settings.argocd.namespace} <= set(written), plan.name  # the walk sees them
        loose = {ns: f for ns, f in written.items() if ns not in projects and ns not in reserved}
        assert not loose, f"{plan.name}: namespaces forge writes that a Flyte project could take: {loose}"


def test_generate_refuses_it_with_one_line_and_writes_nothing(tmp_path: Path):
    root = copy_repo_inputs(tmp_path / "repo")
    inventory = root / H200_FILE
    text = _project(inventory.read_text(), "ingress", "nginx")
    inventory.write_text(text)
    result = forge(root, "generate")
    assert result.exit_code == 2, result.output
    mine = [line for line in result.output.splitlines() if "'ingress-nginx'" in line]
    assert len(mine) == 1 and mine[0].startswith(f"error: {H200_FILE}:{line_of(text, '{name: ingress,')}: {PROJECT}: "), \
        result.output
    assert "Traceback" not in result.output
    assert not (root / "overlays").exists() and not (root / "clusters/h200/argocd").exists()

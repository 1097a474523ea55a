"""The pipeline: load every inventory -> check -> derive models -> build the file tree (pure).

`build_tree` does no writing; `forge.writer` is the only place that touches the output folders.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from forge import argocd, emit
from forge.charts import chart_pins
from forge.components import COMPONENTS, Component
from forge.components.external_secrets import external_secrets_for
from forge.errors import ForgeError, InventoryError
from forge.inventory import load_inventory
from forge.model import ClusterModel, derive
from forge.paths import ARGOCD_DIR, BASE_DIR, CLUSTERS_DIR, INVENTORY_FILE, OVERLAYS_DIR

EXAMPLES_DIR = "examples"  # overlays/<cluster>/<component>/examples/: generated, never synced


@dataclass
class Tree:
    """Generated files by repo-relative path, and the folders the generator owns whole."""

    files: dict[str, str] = field(default_factory=dict)
    owned: list[str] = field(default_factory=list)

    def add(self, path: Path | str, text: str) -> None:
        key = Path(path).as_posix()
        if key in self.files:
            raise ForgeError(f"internal: two generators write {key}")
        self.files[key] = text


def inventory_paths(root: Path) -> list[Path]:
    return sorted((root / CLUSTERS_DIR).glob(f"*/{INVENTORY_FILE}"))


def load_clusters(root: Path) -> list[ClusterModel]:
    """Every cluster's model; all problems of all inventories are reported together."""
    models, problems = [], []
    for path in inventory_paths(root):
        try:
            loaded = load_inventory(path, path.relative_to(root).as_posix())
        except InventoryError as exc:
            problems += exc.problems
            continue
        if loaded.inventory.cluster.name != path.parent.name:
            problems.append(loaded.problem(("cluster", "name"), f"is '{loaded.inventory.cluster.name}' but the folder is '{path.parent.name}'; they must match"))
            continue
        model = derive(loaded)
        enabled = {c.name for c in enabled_components(model)}
        for name in sorted(set(model.component_settings) - enabled):
            # Fail on stale configuration: settings nothing reads would silently mislead.
            problems.append(loaded.problem(("components", name), f"settings for '{name}', which is off on this cluster "
                                           "(its hardware does not call for it): remove the block"))
        models.append(model)
    if problems:
        raise InventoryError(problems)
    if not models:
        raise ForgeError(f"no inventories found: expected {CLUSTERS_DIR}/<cluster>/{INVENTORY_FILE} under {root}")
    return models


def enabled_components(cluster: ClusterModel) -> list[Component]:
    return [c for c in COMPONENTS if c.enabled(cluster)]


def build_tree(root: Path) -> Tree:
    clusters = load_clusters(root)
    pins = chart_pins(root)
    tree = Tree(owned=[OVERLAYS_DIR])
    for cluster in clusters:
        components = enabled_components(cluster)
        for component in components:
            _component_files(root, tree, cluster, component)
        _bootstrap_files(tree, cluster, components, pins)
    # A cluster folder whose inventory is gone keeps no stale bootstrap.
    tree.owned += sorted({p.relative_to(root).as_posix() for p in (root / CLUSTERS_DIR).glob(f"*/{ARGOCD_DIR}") if p.is_dir()}
                         | {f"{CLUSTERS_DIR}/{c.name}/{ARGOCD_DIR}" for c in clusters})
    return tree


def _component_files(root: Path, tree: Tree, cluster: ClusterModel, component: Component) -> None:
    base = Path(BASE_DIR, component.name)
    if not (root / base / "kustomization.yaml").is_file():
        raise ForgeError(f"{base}/kustomization.yaml is missing: every component has a hand-written base")
    folder = Path(OVERLAYS_DIR, cluster.name, component.name)
    generator = component.module
    values = component.values(cluster)
    if values is not None:
        tree.add(folder / "values.yaml", emit.yaml_file(generator, cluster.source, [values]))
    resources = [Path("../../..", base).as_posix()]
    for obj in component.manifests(cluster) + external_secrets_for(cluster, component):
        meta = obj["metadata"]
        # Objects in another namespace than the component's (Flyte's per-project ones) may share
        # a name: their file names carry the namespace.
        scope = f"{meta['namespace']}-" if meta.get("namespace") not in (None, component.namespace) else ""
        name = f"{obj['kind'].lower()}-{scope}{meta['name']}.yaml"
        tree.add(folder / name, emit.yaml_file(generator, cluster.source, [obj]))
        resources.append(name)
    tree.add(folder / "kustomization.yaml", emit.kustomization(generator, cluster.source, cluster.name, resources))
    for obj in component.examples(cluster):  # not in resources: never synced
        tree.add(folder / EXAMPLES_DIR / f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml", emit.yaml_file(generator, cluster.source, [obj]))
    for rel, data in component.local_files(cluster).items():  # not in resources either
        tree.add(folder / rel, emit.yaml_file(generator, cluster.source, [data]))


def _bootstrap_files(tree: Tree, cluster: ClusterModel, components: list[Component], pins) -> None:
    folder = Path(CLUSTERS_DIR, cluster.name, ARGOCD_DIR)
    files = argocd.bootstrap_objects(cluster, components, pins)
    for name, obj in files.items():
        tree.add(folder / name, emit.yaml_file(argocd.__name__, cluster.source, [obj]))
    tree.add(folder / "kustomization.yaml", emit.kustomization(argocd.__name__, cluster.source, cluster.name, list(files)))

"""The fleet's file tree: every plan of `forge.fleet.load_fleet` -> files by path (pure).

`build_tree` does no writing; `forge.generate.writer` is the only place that touches the output folders.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from forge.argocd import bootstrap as argocd, config as argocd_config

GENERATOR = "forge.generate"  # the name in the headers of the files this stage writes

from forge.files import emit

from forge.generate import overrides
from forge.components import Component, network
from forge.components.base import extra_values_file
from forge.components.external_secrets import external_secrets_for
from forge.inventory.limits import MAX_OBJECT_BYTES, MAX_SSA_OBJECT_BYTES
from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import COMPONENTS, Fleet, load_fleet
from forge.model.cluster import ClusterModel
from forge.files.paths import APPS_DIR, ARGOCD_DIR, BASE_DIR, CLUSTERS_DIR, OVERLAYS_DIR

EXAMPLES_DIR = "examples"  # overlays/<cluster>/<component>/examples/: generated, never synced
MANIFEST_FILE = "generated.sha256"  # overlays/<cluster>/generated.sha256: every file generate wrote there and in argocd/


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


def build_tree(root: Path, fleet: Fleet | None = None) -> Tree:
    fleet = fleet or load_fleet(root)
    tree = Tree(owned=[OVERLAYS_DIR])
    for plan in fleet:
        cluster_files(root, tree, plan.cluster, list(plan.components), fleet.pins)
    # A cluster folder whose inventory is gone keeps no stale bootstrap (the fleet stage refused
    # any such folder holding files forge did not generate).
    tree.owned += sorted({p.relative_to(root).as_posix() for p in (root / CLUSTERS_DIR).glob(f"*/{ARGOCD_DIR}") if p.is_dir()}
                         | {f"{CLUSTERS_DIR}/{p.name}/{ARGOCD_DIR}" for p in fleet})
    return tree


def cluster_files(root: Path, tree: Tree, cluster: ClusterModel, components: list[Component], pins) -> None:
    """One cluster's generated files into `tree`: overlays (with its overrides), the Argo CD
    bootstrap, and the manifest of both (MANIFEST_FILE: what generate wrote, to tell hand edits)."""
    enabled = {c.name for c in components}
    found = overrides.load(root, cluster.name, {c.name: c.name in enabled for c in COMPONENTS})
    for component in components:
        _component_files(root, tree, cluster, component, components, found.get(component.name))
    overrides.check_stale(found)
    _bootstrap_files(tree, cluster, components, pins)
    prefixes = tuple(f"{folder}/" for folder in cluster_folders(cluster.name))
    mine = {rel: text for rel, text in tree.files.items() if rel.startswith(prefixes)}
    tree.add(manifest_path(cluster.name), emit.header(GENERATOR, cluster.source) + manifest_text(mine))


def cluster_folders(name: str) -> tuple[str, str]:
    """The folders generate owns for one cluster."""
    return f"{OVERLAYS_DIR}/{name}", f"{CLUSTERS_DIR}/{name}/{ARGOCD_DIR}"


def manifest_path(name: str) -> str:
    return f"{OVERLAYS_DIR}/{name}/{MANIFEST_FILE}"


def manifest_text(files: dict[str, str]) -> str:
    """`sha256sum` lines (`sha256sum -c` checks them from the repo root, after the header), sorted by path."""
    return "".join(f"{hashlib.sha256(text.encode()).hexdigest()}  {rel}\n" for rel, text in sorted(files.items()))


def _component_files(root: Path, tree: Tree, cluster: ClusterModel, component: Component, components: list[Component],
                     hand: overrides.Overrides | None = None) -> None:
    base = Path(BASE_DIR, component.name)
    if not (root / base / "kustomization.yaml").is_file():
        raise ForgeError(f"{base}/kustomization.yaml is missing: every component has a hand-written base")
    folder = Path(OVERLAYS_DIR, cluster.name, component.name)
    generator = component.module
    values = component.values(cluster)
    notes_extra: list[str] = []
    if hand is not None and hand.values is not None:
        if values is None:
            raise ForgeError(f"{hand.folder}/{overrides.VALUES_FILE}: {component.name} installs no Helm chart: "
                             f"allowed in {hand.folder}/: manifests (*.yaml) and patches (patches/*.yaml)")
        merged = overrides.merge(values, hand.values)
        overrides.check_merged(hand, values, merged, component.guarded_values(cluster))
        values = merged
        notes_extra.append(f"Values from {hand.folder}/{overrides.VALUES_FILE} are merged last (forge.generate.overrides).")
    if values is not None:
        text = emit.yaml_file(generator, cluster.source, [values])
        notes = "".join(f"# {line}\n" for line in [*component.values_notes(cluster), *notes_extra])
        header = emit.header(generator, cluster.source)
        tree.add(folder / "values.yaml", header + notes + text.removeprefix(header))
    for release, extra in component.extra_releases(cluster).items():
        tree.add(folder / extra_values_file(release), emit.yaml_file(generator, cluster.source, [extra]))
    resources = [Path("../../..", base).as_posix()]
    own = [(obj, generator) for obj in component.fleet_manifests(cluster, components) + external_secrets_for(cluster, component)]
    own += [(obj, network.__name__) for obj in network.policies(component, cluster, components)]
    for obj, writer in own:
        meta = obj["metadata"]
        # Objects in another namespace than the component's (Flyte's per-project ones) may share
        # a name: their file names carry the namespace.
        scope = f"{meta['namespace']}-" if meta.get("namespace") not in (None, component.namespace) else ""
        name = f"{obj['kind'].lower()}-{scope}{meta['name']}.yaml"
        text = emit.yaml_file(writer, cluster.source, [obj])
        limit = MAX_SSA_OBJECT_BYTES if component.server_side_apply else MAX_OBJECT_BYTES
        if len(text.encode("utf-8")) > limit:
            how = ("server-side, and etcd takes" if component.server_side_apply else
                   "with its last-applied copy in an annotation,")
            raise InventoryError([Problem(cluster.source, 1, "", (
                f"makes {obj['kind']} {meta['name']} ({folder / name}) {len(text) // 1024} KiB: Argo CD applies it {how} "
                f"at most {limit // 1024} KiB; fewer labels, nodes or entries of what it lists"))])
        tree.add(folder / name, text)
        resources.append(name)
    patches = []
    for source, text in sorted((hand.manifests | hand.patches).items()) if hand else ():
        name = overrides.copied_name(source)
        tree.add(folder / name, overrides.copy_header(source) + text)
        (patches if source in hand.patches else resources).append(name)
    tree.add(folder / "kustomization.yaml", emit.kustomization(generator, cluster.source, cluster.name, resources, patches=patches))
    for obj in component.examples(cluster):  # not in resources: never synced
        tree.add(folder / EXAMPLES_DIR / f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml", emit.yaml_file(generator, cluster.source, [obj]))
    for rel, data in component.local_files(cluster).items():  # not in resources either (a list: one document each)
        tree.add(folder / rel, emit.yaml_file(generator, cluster.source, data if isinstance(data, list) else [data]))


def _bootstrap_files(tree: Tree, cluster: ClusterModel, components: list[Component], pins) -> None:
    folder = Path(CLUSTERS_DIR, cluster.name, ARGOCD_DIR)
    files = argocd.bootstrap_objects(cluster, components, pins)
    for name, obj in files.items():
        tree.add(folder / name, emit.yaml_file(argocd.GENERATOR, cluster.source, [obj]))
    # The root Application syncs this folder whole (itself included). Argo CD's own configuration
    # (config/) must stay part-of argocd, which its settings informer selects: the folder above
    # and config/ add every standard label but part-of; the other folders add all of them.
    subfolders = sorted({n.split("/", 1)[0] for n in files if "/" in n})
    for sub in subfolders:
        members = [n.split("/", 1)[1] for n in files if n.startswith(f"{sub}/")]
        text = emit.kustomization(argocd.GENERATOR, cluster.source, cluster.name, members,
                                  part_of=sub != argocd_config.CONFIG_DIR)
        tree.add(folder / sub / "kustomization.yaml", text)
    tree.add(folder / "kustomization.yaml", emit.kustomization(argocd.GENERATOR, cluster.source, cluster.name,
                                                               [*(n for n in files if "/" not in n), *subfolders],
                                                               part_of=False))
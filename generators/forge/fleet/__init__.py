"""The fleet stage: the one front door from inventories to everything that reads them.

`load_fleet(root)` loads every `clusters/<name>/inventory.yaml`, runs every rule in one pass
(the inventory's own, each component's settings and `check`, the compute fabric's, the folder's,
and the rules across clusters) and reports all problems of all inventories together as one
InventoryError. What it hands back is one `ClusterPlan` per cluster: the typed inventory, the
derived `ClusterModel` carrying the typed settings and the frozen facts of its enabled
components, and those components in registry order. generate, check, render, validate,
hydrate, diff, the node commands and bench all start here; nothing else decides which
components run or validates a settings block.

Stages, each importing only from the ones before it (tests/test_layering.py):
hardware/errors/emit/paths -> inventory -> model -> components (+ observability) -> fleet ->
generate/validate/upstream/diff/nodes/render/bench -> cli.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

from forge.facts.versions import ChartPin, chart_pins
from forge.components import COMPONENTS, Component
from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import links, rules, scope
from forge.fleet.unique import shared_across_clusters
from forge.fleet.fabric import fabric_rules
from forge.inventory import LoadedInventory, load_inventory, load_inventory_text
from forge.inventory import limits
from forge.inventory.loader import Rules
from forge.model.cluster import ClusterModel, derive
from forge.files.paths import CLUSTERS_DIR, INVENTORY_FILE


@dataclass(frozen=True)
class ClusterPlan:
    """One cluster as the pipeline sees it."""

    loaded: LoadedInventory  # the typed inventory, with the line of every field
    cluster: ClusterModel  # derived facts; typed settings and facts of the enabled components
    components: tuple[Component, ...]  # the enabled ones, in forge.components.COMPONENTS order

    @property
    def name(self) -> str:
        return self.cluster.name

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)


@dataclass(frozen=True)
class Fleet:
    root: Path
    plans: tuple[ClusterPlan, ...]  # by cluster name

    def __iter__(self) -> Iterator[ClusterPlan]:
        return iter(self.plans)

    @property
    def clusters(self) -> list[ClusterModel]:
        return [p.cluster for p in self.plans]

    def plan(self, name: str) -> ClusterPlan:
        found = next((p for p in self.plans if p.name == name), None)
        if found is None:
            raise ForgeError(f"no cluster '{name}' (have: {', '.join(p.name for p in self.plans)})")
        return found

    @cached_property
    def pins(self) -> dict[str, ChartPin]:
        """The chart pins (charts/versions.yaml), read when first asked for."""
        return chart_pins(self.root)


def inventory_paths(root: Path) -> list[Path]:
    """clusters/*/inventory.yaml; one that is not a regular file (a symbolic link, dangling or
    not, a FIFO, a device, a folder) is refused here, before anything reads it: it must never
    read as a retired cluster, block, or lead a read outside the repository."""
    paths = sorted(p for p in (root / CLUSTERS_DIR).glob(f"*/{INVENTORY_FILE}") if os.path.lexists(p))
    paths = sorted({*paths, *(p / INVENTORY_FILE for p in (root / CLUSTERS_DIR).glob("*")
                             if os.path.lexists(p / INVENTORY_FILE))})
    problems = [Problem(p.relative_to(root).as_posix(), 1, "", why) for p in paths if (why := rules.not_regular(p))]
    if problems:
        raise InventoryError(problems)
    return paths


def load_fleet(root: Path) -> Fleet:
    """Every cluster's plan; all problems of all inventories are reported together."""
    plans: list[ClusterPlan] = []
    loaded: list[LoadedInventory] = []
    problems = rules.orphan_folders(root)
    for path in inventory_paths(root):
        try:
            plan = load_plan(path, path.relative_to(root).as_posix(), folder=path.parent.name)
        except InventoryError as exc:
            problems += exc.problems
            continue
        plans.append(plan)
        loaded.append(plan.loaded)
    problems += rules.shared_node_names(loaded) + scope.shared_projects(loaded) + shared_across_clusters(loaded)
    if problems:
        raise InventoryError(problems)
    if not plans:
        raise ForgeError(f"no inventories found: expected {CLUSTERS_DIR}/<cluster>/{INVENTORY_FILE} under {root}")
    return Fleet(root, tuple(plans))


def load_plan(path: Path, display: str, folder: str | None = None) -> ClusterPlan:
    """One inventory file's plan (`folder`: the name its cluster folder gives it, when it has
    one). The inventories it links to (forge.fleet.links) are read beside it."""
    given: dict[str, Any] = {}
    linked: dict[str, ClusterModel] = {}
    loaded = load_inventory(path, display, _rules(given, links.on_disk(path.parent.parent), linked))
    return _plan(loaded, given, folder, linked)


def load_plan_text(text: str, file: str, folder: str | None = None,
                   neighbours: links.Neighbours | None = None) -> ClusterPlan:
    """The same from inventory text (`forge node` checks an edit before writing it); the
    inventories it links to come from `neighbours` (default: beside `file`)."""
    given: dict[str, Any] = {}
    linked: dict[str, ClusterModel] = {}
    loaded = load_inventory_text(text, file, _rules(given, neighbours or links.near(file), linked))
    return _plan(loaded, given, folder, linked)


def _rules(given: dict[str, Any], neighbours: links.Neighbours, linked: dict[str, ClusterModel]) -> Rules:
    """The rules this stage hands to the inventory loader; they fill `given` with the typed
    settings they validated, so each block is validated exactly once, and `linked` with the
    models of the clusters the inventory links to."""
    def run(loaded: LoadedInventory) -> list[Problem]:
        known = registry()
        typed, problems = rules.typed_settings(loaded, known)
        given.update(typed)
        other = lambda text, display, name: load_plan_text(text, display, name, neighbours)  # noqa: E731
        return [*fabric_rules(loaded), *problems, *rules.settings_rules(loaded, typed, known),
                *scope.flyte_namespaces(loaded, typed, known), *limits.name_lengths(loaded, list(known)),
                *links.burst_rules(loaded, typed, neighbours, other, linked)]
    return run


def _plan(loaded: LoadedInventory, given: dict[str, Any], folder: str | None,
          linked: dict[str, ClusterModel]) -> ClusterPlan:
    problems = rules.folder_name(loaded, folder) if folder is not None else []
    if problems:
        raise InventoryError(problems)
    cluster = dataclasses.replace(derive(loaded, given), linked=dict(linked))
    components = tuple(c for c in COMPONENTS if c.enabled(cluster))
    problems = rules.stale_settings(loaded, given, (c.name for c in components))
    problems += rules.window_components(loaded, (c.name for c in components))
    if problems:
        raise InventoryError(problems)
    # Components without a block run on their defaults (validated here, once, like the rest).
    settings = {c.name: given[c.name] if c.name in given else c.Settings.model_validate({}) for c in components}
    cluster = dataclasses.replace(cluster, component_settings=settings)
    facts = {c.name: c.derive_facts(cluster) for c in components}
    cluster = dataclasses.replace(cluster, component_facts=facts)
    return ClusterPlan(loaded, cluster, components)


def components_of(cluster: ClusterModel) -> tuple[Component, ...]:
    """The components the fleet stage enabled on `cluster`, in registry order: its typed settings
    hold exactly those (for code handed a ClusterModel rather than its plan)."""
    known = registry()
    return tuple(known[name] for name in cluster.component_settings)


def registry() -> dict[str, Component]:
    """The component registry by name: the one place the fleet stage reads forge.components.COMPONENTS
    (tests narrow it by replacing forge.fleet.COMPONENTS)."""
    return {c.name: c for c in COMPONENTS}

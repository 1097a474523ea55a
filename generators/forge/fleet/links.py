"""Links between inventories: an on-premises cluster names its burst cluster
(`components.kueue.burst.cluster`), a cloud cluster of the same fleet whose queues its `cloud`
LocalQueues reach through MultiKueue (docs/burst.md). The manager's cloud ClusterQueues carry the
burst cluster's quotas, so its plan holds the burst cluster's model (`ClusterModel.linked`) and its
generate key the burst inventory's bytes (forge.generate.incremental.cluster_keys, `linked_names`).

Refused at the field, `file:line`: a cluster that does not exist, this cluster itself (a
MultiKueue manager is never its own worker), an on-premises one (no cluster.cloud), a burst link
on a cloud cluster (a worker is not a manager: no chains), a burst cluster without Kueue, or
without every Flyte project and domain of this one (MultiKueue creates the job in the worker's
namespace of the same name, from its LocalQueue `cloud`), or whose inventory has problems.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from forge.errors import InventoryError, Problem
from forge.inventory import LoadedInventory, load_inventory_text
from forge.files.paths import CLUSTERS_DIR, INVENTORY_FILE

KUEUE, FLYTE = "kueue", "flyte"
AT = ("components", KUEUE, "burst", "cluster")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Neighbours:
    """The fleet's other inventories as a link reads them: `read(name)` gives (text, display) of
    clusters/<name>/inventory.yaml, or None when there is none; `names()` the clusters there are."""

    read: Callable[[str], "tuple[str, str] | None"]
    names: Callable[[], list[str]]


def on_disk(clusters: Path) -> Neighbours:
    """The inventories under a clusters/ folder (display: clusters/<name>/inventory.yaml)."""
    def read(name: str) -> tuple[str, str] | None:
        path = clusters / name / INVENTORY_FILE
        try:
            return path.read_text(encoding="utf-8"), f"{CLUSTERS_DIR}/{name}/{INVENTORY_FILE}"
        except (OSError, UnicodeDecodeError):
            return None

    def names() -> list[str]:
        return sorted(p.parent.name for p in clusters.glob(f"*/{INVENTORY_FILE}"))
    return Neighbours(read, names)


def near(file: str) -> Neighbours:
    """The inventories beside `file` (clusters/<this>/inventory.yaml: its folder's parent)."""
    return on_disk(Path(file).parent.parent)


def linked_names(text: bytes) -> list[str]:
    """The clusters an inventory's text links to, for its generate key: read without the
    inventory's rules (an inventory with problems is refused by the fleet stage anyway)."""
    if b"burst" not in text:
        return []  # the cheap answer for nearly every inventory
    try:
        doc = yaml.load(text, Loader=_Loader)  # noqa: S506 - the C safe loader
        name = doc["components"][KUEUE]["burst"]["cluster"]
    except (yaml.YAMLError, TypeError, KeyError):
        return []
    return [name] if isinstance(name, str) else []


def burst_rules(loaded: LoadedInventory, typed: Mapping[str, Any], neighbours: Neighbours,
                load: Callable[[str, str, str], Any], linked: dict[str, Any]) -> list[Problem]:
    """The link's problems, at the field; `linked` gets the burst cluster's plan when it holds.
    `load(text, display, folder)`: the fleet stage's plan of another inventory."""
    kueue = typed.get(KUEUE)
    if kueue is None or kueue.burst is None:
        return []
    name, me = kueue.burst.cluster, loaded.inventory.cluster.name
    problem = lambda message: [loaded.problem(AT, message)]  # noqa: E731
    if loaded.inventory.cluster.cloud is not None:
        return problem("a cloud cluster is a burst cluster, not a MultiKueue manager: drop components.kueue.burst here "
                       "and set it on the on-premises cluster whose cloud queues reach this one")
    if name == me:
        return problem(f"'{name}' is this cluster: a MultiKueue manager is never its own worker; name a cloud cluster "
                       "of the fleet (one with cluster.cloud)")
    found = neighbours.read(name)
    if found is None:
        others = [n for n in neighbours.names() if n != me]
        return problem(f"no cluster '{name}' (no {CLUSTERS_DIR}/{name}/{INVENTORY_FILE}); expected a cloud cluster of the "
                       f"fleet, one of: {', '.join(others) or 'none'}")
    text, display = found
    try:
        shape = load_inventory_text(text, display)  # its shape only: an on-premises one is never loaded further
    except InventoryError as exc:
        return problem(_broken(name, display, exc))
    if shape.inventory.cluster.cloud is None:
        return problem(f"cluster '{name}' is on premises (no cluster.cloud in {display}): a burst cluster is a cloud "
                       "cluster, whose node pools are made on demand")
    try:
        plan = load(text, display, name)
    except InventoryError as exc:
        return problem(_broken(name, display, exc))
    out = _mirrors(plan.cluster, typed.get(FLYTE), name, display)
    if out:
        return problem(out)
    linked[name] = plan.cluster
    return []


def _broken(name: str, display: str, exc: InventoryError) -> str:
    n = len(exc.problems)
    return (f"burst cluster '{name}': {display} has {n} problem{'s' if n != 1 else ''} (the first: {exc.problems[0]}): "
            "fix it first (forge check)")


def _mirrors(burst, flyte, name: str, display: str) -> str | None:
    """Why the burst cluster cannot take this cluster's cloud jobs, or None."""
    settings = burst.component_settings
    if KUEUE not in settings:
        return f"cluster '{name}' runs no Kueue: MultiKueue dispatches to the worker's Kueue; add components.kueue to {display}"
    if flyte is None:
        return None  # Kueue's own rule asks for components.flyte
    theirs = settings.get(FLYTE)
    projects = {p.name for p in theirs.projects} if theirs else set()
    domains = {d.name for d in theirs.domains} if theirs else set()
    missing = [f"project '{p.name}'" for p in flyte.projects if p.name not in projects]
    missing += [f"domain '{d.name}'" for d in flyte.domains if d.name not in domains]
    if missing:
        return (f"cluster '{name}' has no Flyte {', '.join(missing)}: MultiKueue creates each job in the worker's "
                f"namespace of the same name (<project>-<domain>); add them to components.flyte in {display}")
    return None

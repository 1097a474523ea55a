"""Each cluster's plan (its inventory loaded, every rule run, typed settings and facts derived),
kept pickled under .cache/forge/plans/ by the cluster's generate key, so `forge validate` (and
`forge diff`) reuse what `forge generate` loaded instead of parsing the inventory again.

The key (forge.generate.incremental.cluster_keys) covers the inventory's bytes, forge's code and data,
the versions file and base/: a plan is never served for inputs it was not loaded from. A file
that cannot be read back (torn, from another Python) is ignored and the plan loaded again; a
cache that cannot be written only costs time. `prune` keeps only the current keys' plans.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path

from forge.generate.cache import CACHE_DIR, digest
from forge.fleet import ClusterPlan, load_plan

PLANS_DIR = CACHE_DIR / "plans"


def _file(root: Path, key: str, display: str) -> Path:
    return root / PLANS_DIR / f"{digest(key, display)}.pickle"


def load(root: Path, path: Path, key: str | None) -> tuple[ClusterPlan, bytes | None]:
    """The plan of the inventory at `path` (InventoryError as load_plan raises it), and, when it
    was loaded rather than read back, what `store` keeps of it (None without a key)."""
    display = path.relative_to(root).as_posix()
    if key is None:
        return load_plan(path, display, folder=path.parent.name), None
    try:
        plan = pickle.loads(_file(root, key, display).read_bytes())
        if isinstance(plan, ClusterPlan):
            return plan, None
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - any unreadable cache file means: load the inventory again
        pass
    plan = load_plan(path, display, folder=path.parent.name)
    try:
        return plan, pickle.dumps(plan, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a component class defined in a function (tests): not kept
        return plan, None


def store(root: Path, key: str, display: str, data: bytes) -> None:
    """Keep a plan `load` returned (generate: only once the run has succeeded, so a refused
    run leaves the repository exactly as it was)."""
    stored = _file(root, key, display)
    try:
        stored.parent.mkdir(parents=True, exist_ok=True)
        tmp = stored.with_name(f"{stored.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, stored)  # a reader sees a whole file or none
    except OSError:
        pass  # a cache that cannot be written only costs time


def plan_for(root: Path, path: Path, key: str | None) -> ClusterPlan:
    """The plan, kept at once when it had to be loaded (validate's workers)."""
    plan, data = load(root, path, key)
    if data is not None and key is not None:
        store(root, key, path.relative_to(root).as_posix(), data)
    return plan


def prune(root: Path, keys: dict[str, str], displays: dict[str, str]) -> None:
    """Drop the plans of keys no cluster has any more (old inventories, old code)."""
    folder = root / PLANS_DIR
    if not folder.is_dir():
        return
    wanted = {_file(root, key, displays[name]).name for name, key in keys.items()}
    for path in folder.iterdir():
        if path.name not in wanted:
            path.unlink(missing_ok=True)

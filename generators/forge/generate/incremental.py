"""Incremental `forge generate`: only clusters whose inputs changed are built, only files whose
content changed are written, and the tree stays whole (old or new) at every instant.

Per cluster the key is `cache.digest(global generate inputs, folder name, inventory bytes)`.
A cluster is *fresh* when the state (.cache/forge/generate.json) holds that key and every file it
recorded is on disk as written (size, mtime, inode) with no other file in its folders; a fresh
cluster is neither loaded nor built. Stale clusters are built in parallel (one process per core),
then written like `forge.generate.writer.write_tree` does: each one's new folders are staged whole (files
whose content did not change are hard links to the current ones, never rewritten) and every
changed folder, and every folder of a retired cluster, goes in through ONE journaled
`forge.files.folders.swap`. A crash leaves the old tree or the new one, as for a full generate.

Any problem (an inventory rule, a node name also in a fresh cluster) is reported by the full
fleet stage, so messages and their order are exactly those of `load_fleet`.
"""
from __future__ import annotations

import inspect
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from forge.generate.cache import PACKAGE_DIR, GlobalInputs, State, digest, signature, tree_digest
from forge.fleet.selection import check_clusters
from forge.errors import ForgeError, InventoryError
from forge.fleet import inventory_paths, load_fleet, rules
from forge.fleet.links import linked_names
from forge.fleet.unique import clash, tokens
from forge.files.folders import swap, write_error
from forge.files.lock import repo_lock
from forge.generate.tree import Tree, cluster_files, cluster_folders
from forge.generate.overrides import folder_of as overrides_folder
from forge.files.paths import ARGOCD_DIR, CLUSTERS_DIR, INVENTORY_FILE, OVERLAYS_DIR
from forge.generate.plan_cache import load as load_plan_of, prune as prune_plans, store as store_plan
from forge.facts.versions import chart_pins
from forge.workers import process_pool
from forge.generate.writer import STAGING, recover_interrupted, refuse_links

Progress = Callable[[int, int], None]


@dataclass
class Outcome:
    clusters: int = 0
    files: int = 0  # generated files in the whole tree
    built: list[str] = field(default_factory=list)  # clusters whose key changed
    written: int = 0  # files whose content changed (the only ones written)


def _files_on_disk(root: Path, name: str) -> set[str]:
    found = set()
    base = str(root)
    for folder in cluster_folders(name):
        for dirpath, _, filenames in os.walk(os.path.join(base, folder)):
            rel = os.path.relpath(dirpath, base).replace(os.sep, "/")
            found.update(f"{rel}/{f}" for f in filenames)
    return found


def _fresh(root: Path, entry: dict | None, key: str) -> bool:
    if not entry or entry.get("key") != key:
        return False
    files: dict[str, list[int]] = entry.get("files", {})
    base = str(root)
    # Strings, not Paths: this runs for every generated file of the fleet on every generate.
    return _files_on_disk(root, entry["name"]) == set(files) and all(
        signature(os.path.join(base, rel)) == sig for rel, sig in files.items())


# name, files, the names it claims fleet-wide (its nodes', and its Argo CD projects' as
# `argocd-project:<name>`, a form no node name takes), plan to keep
Built = tuple[str, dict[str, str], list[str], "bytes | None"]


def build_cluster(root: Path, path: Path, key: str | None = None) -> Built | None:
    """One cluster's generated files (None: its inventory has problems; the fleet stage says which).
    With its generate `key`, the plan comes from (or is returned for) forge.generate.plan_cache."""
    try:
        plan, kept = load_plan_of(root, path, key)
    except InventoryError:
        return None
    tree = Tree()
    cluster_files(root, tree, plan.cluster, list(plan.components), chart_pins(root))
    return plan.name, tree.files, claims_of(plan), kept


def claims_of(plan) -> list[str]:
    """The names a cluster claims fleet-wide (forge.fleet.unique)."""
    project = plan.cluster.settings.argocd.project
    return tokens(plan.loaded) + [f"argocd-project:{p}" for p in (project, f"{project}-bootstrap")]


def fleet_claims(root: Path, entries: dict[str, dict], keys: dict[str, str], built: list, left: list[Path]) -> tuple[dict[str, list[str]], bool]:
    """Every cluster's claims, for the fleet-wide rules: the built ones' from their build, the
    clusters `--cluster` left out that are not current from their inventory (their recorded
    claims may be out of date), the fresh ones' as recorded. And whether an inventory has problems."""
    left_names = {p.parent.name for p in left}
    names = {n: entries[n]["nodes"] for n in keys if n in entries and n not in left_names}
    problem = False
    for path in left:
        try:
            names[path.parent.name] = claims_of(load_plan_of(root, path, keys[path.parent.name])[0])
        except InventoryError:
            problem = True
    names.update({r[0]: r[2] for r in built if r})
    return names, problem or any(r is None for r in built)


def _build_job(args: tuple[str, str, str | None]) -> Built | None:
    return build_cluster(Path(args[0]), Path(args[1]), args[2])


def build_clusters(root: Path, paths: list[Path], jobs: int, progress: Progress | None,
                   keys: dict[str, str] | None = None) -> list:
    """Build clusters in `jobs` processes (in this one for a single cluster or job)."""
    done: list = []
    tick = (lambda: progress(len(done), len(paths))) if progress else (lambda: None)
    key = (keys or {}).get
    if jobs <= 1 or len(paths) <= 1:
        for path in paths:
            done.append(build_cluster(root, path, key(path.parent.name)))
            tick()
        return done
    with process_pool(min(jobs, len(paths))) as pool:
        jobs_args = [(str(root), str(p), key(p.parent.name)) for p in paths]
        for result in pool.map(_build_job, jobs_args, chunksize=max(1, len(paths) // (jobs * 8))):
            done.append(result)
            tick()
    return done


def _stage_cluster(root: Path, new: Path, files: dict[str, str]) -> int:
    """Stage a cluster's folders; unchanged files are hard links to the current ones. Returns how
    many files changed (0: nothing to swap in, the folders on disk are already right)."""
    changed = 0
    for rel, text in sorted(files.items()):
        target, current = new / rel, root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            same = current.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            same = False
        if same:
            try:
                os.link(current, target)
                continue
            except OSError:
                pass  # another file system: write it
        target.write_text(text, encoding="utf-8")
        changed += 1
    return changed


def _retired(root: Path, names: set[str]) -> list[Path]:
    """Folders of clusters that have no inventory any more (and strays in overlays/)."""
    out = [p for p in sorted((root / OVERLAYS_DIR).glob("*")) if p.name not in names]
    out += [p for p in sorted((root / CLUSTERS_DIR).glob(f"*/{ARGOCD_DIR}")) if p.parent.name not in names]
    return out


def write_clusters(root: Path, built: dict[str, dict[str, str]], names: set[str], retire: bool = True) -> int:
    """Swap in the folders of the built clusters whose files changed and drop retired ones (not
    with `retire` False: `--cluster` touches no other cluster's folders), all in one journaled
    swap. Returns the number of files written."""
    staging = root / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    new = staging / "new"
    pairs: list[tuple[Path | None, Path]] = []
    written = 0
    try:
        for name, files in sorted(built.items()):
            changed = _stage_cluster(root, new, files)
            if changed or _files_on_disk(root, name) != set(files):
                written += changed
                # A folder the cluster no longer fills (no component left) goes.
                pairs += [(new / folder if (new / folder).is_dir() else None, root / folder)
                          for folder in cluster_folders(name) if (new / folder).is_dir() or (root / folder).exists()]
        pairs += [(None, path) for path in _retired(root, names)] if retire else []
        if pairs:
            swap(staging, pairs)
    except OSError as exc:
        raise write_error(exc, "the generated tree") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _check_fleet(problem_found: bool, names: dict[str, list[str]], root: Path) -> None:
    """Problems (or a node name, unique name, CIDR or Argo CD project in two clusters) are reported
    by the full fleet stage."""
    if problem_found or clash(names) or rules.orphan_folders(root):
        load_fleet(root)  # raises with every problem, as a full generate reports them
        raise ForgeError("internal: the incremental generate saw a problem the fleet stage did not")


def registry_key() -> str:
    """The component registry's part of every key. Components from outside forge's package (a
    test narrowing forge.fleet.COMPONENTS to its own) are code the key cannot see: a key never
    seen again, so nothing is served from the cache while they are in use."""
    from forge import fleet

    files = [Path(inspect.getfile(type(c))).resolve() for c in fleet.COMPONENTS]
    if not all(f.is_relative_to(PACKAGE_DIR) for f in files):
        return os.urandom(16).hex()
    return digest(*(f"{c.name}={type(c).__module__}.{type(c).__qualname__}" for c in fleet.COMPONENTS))


def cluster_keys(root: Path, paths: list[Path]) -> dict[str, str]:
    shared = digest(GlobalInputs(root).generate, registry_key())
    # A cluster's overrides (clusters/<c>/overrides/) are its input as much as its inventory, and
    # so are the inventories it links to (its burst cluster's pools size its cloud queues).
    out = {}
    for p in paths:
        text = p.read_bytes()
        linked = [f"{name}={_linked_bytes(root, name)}" for name in linked_names(text)]
        out[p.parent.name] = digest(shared, p.parent.name, text, tree_digest(root / overrides_folder(p.parent.name)), *linked)
    return out


def _linked_bytes(root: Path, name: str) -> str:
    try:
        return digest((root / CLUSTERS_DIR / name / INVENTORY_FILE).read_bytes())
    except OSError:
        return "missing"  # the fleet stage says so; the key still changes when it appears


def generate(root: Path, jobs: int | None = None, progress: Progress | None = None, discard_edits: bool = False,
             only: tuple[str, ...] = ()) -> Outcome:
    """Regenerate, one writer at a time (forge.files.lock); a file changed by hand in a cluster about to
    be written is refused (forge.generate.handedits) unless `discard_edits`. `only`: these clusters alone
    (--cluster); the others' folders, and folders of clusters that are gone, stay as they are,
    while the fleet-wide rules still read every inventory."""
    with repo_lock(root, "generate"):
        return _generate(root, jobs, progress, discard_edits, only)


def _generate(root: Path, jobs: int | None, progress: Progress | None, discard_edits: bool, only: tuple[str, ...]) -> Outcome:
    from forge.generate.handedits import refuse

    recover_interrupted(root)
    refuse_links(root, [OVERLAYS_DIR, *(f"{CLUSTERS_DIR}/{p.name}/{ARGOCD_DIR}" for p in sorted((root / CLUSTERS_DIR).glob("*")))])
    state_file = State(root, "generate")
    state_file.writable()
    state = state_file.load()
    paths = inventory_paths(root)
    if not paths:
        load_fleet(root)  # says there is no inventory
    check_clusters(only, [p.parent.name for p in paths])
    entries: dict[str, dict] = state.get("clusters", {})
    keys = cluster_keys(root, paths)
    stale = [p for p in paths if not _fresh(root, entries.get(p.parent.name), keys[p.parent.name])]
    left = [p for p in stale if only and p.parent.name not in only]
    stale = [p for p in stale if p not in left]
    fresh = len(paths) - len(stale)
    if not discard_edits:
        refuse(root, [p.parent.name for p in stale])
    results = build_clusters(root, stale, jobs or os.cpu_count() or 1,
                             (lambda done, _: progress(fresh + done, len(paths))) if progress else None, keys)
    if progress and not stale:
        progress(fresh, len(paths))
    names, problem = fleet_claims(root, entries, keys, results, left)
    _check_fleet(problem, names, root)
    built = {name: files for name, files, _, _ in results}
    written = write_clusters(root, built, set(keys), not only)  # positional: tests wrap it as write_clusters(*args)
    displays = {p.parent.name: p.relative_to(root).as_posix() for p in paths}
    for name, files, nodes, kept in results:
        entries[name] = {"name": name, "key": keys[name], "nodes": nodes, "files": {rel: signature(root / rel) for rel in files}}
        if kept is not None:
            store_plan(root, keys[name], displays[name], kept)
    state_file.save({"clusters": {n: entries[n] for n in keys if n in entries}})
    prune_plans(root, keys, displays)
    total = sum(len(entries[n]["files"]) for n in keys if n in entries)
    return Outcome(len(keys), total, sorted(built), written)

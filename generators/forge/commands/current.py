"""Is the tree on disk what the inputs give? render and validate refuse to work on a stale one
(issue 24's third wall): overlays/ older than the inventories and overrides (run generate), or
build/rendered/ older than the overlays (run render). One line, naming the command to run.

The cheap proof first: the incremental generate's state (every cluster's key and the files as it
wrote them) and render's state (every overlay's key and the rendered files as it wrote them).
Only when a state cannot vouch for the tree is the tree built in memory and compared (generate's
side, as `forge check` does; ~2 s for the shipped fleets).
"""
from __future__ import annotations

from pathlib import Path

from forge.generate.cache import Digests, GlobalInputs, State
from forge.fleet.selection import check_clusters
from forge.errors import ForgeError
from forge.fleet import inventory_paths
from forge.generate.incremental import _fresh, _retired, cluster_keys
from forge.files.paths import RENDERED_DIR

ALLOW = "--allow-stale"


class StaleTree(ForgeError):
    pass


def generated_problems(root: Path, only: tuple[str, ...] = ()) -> list[str]:
    """Generated files that differ from what the inventories and overrides give ([] when current).
    `only`: of these clusters (--cluster; folders of clusters that are gone are not theirs)."""
    from forge.generate.tree import build_tree, cluster_folders
    from forge.generate.writer import diff_tree

    paths = inventory_paths(root)
    check_clusters(only, [p.parent.name for p in paths])
    if not paths:
        return []  # nothing to compare against (a hand-made tree): render says what it finds
    keys = cluster_keys(root, paths)
    entries = State(root, "generate").load().get("clusters", {})
    if all(_fresh(root, entries.get(name), key) for name, key in keys.items() if not only or name in only) and (
            only or not _retired(root, set(keys))):
        return []
    from forge.generate.tree import MANIFEST_FILE

    prefixes = tuple(f"{folder}/" for name in only for folder in cluster_folders(name))
    found = [line for line in diff_tree(root, build_tree(root)) if not only or line.startswith(prefixes)]
    # The files people edit first; the manifest of what generate wrote differs whenever they do.
    return sorted(found, key=lambda line: MANIFEST_FILE in line)


def require_generated(root: Path, then: str, only: tuple[str, ...] = ()) -> None:
    problems = generated_problems(root, only)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise StaleTree(f"{problems[0]}{more}: the generated tree is not current with the inventories and overrides: "
                        f"run `forge generate` (make generate), then {then} ({ALLOW} to go on with the tree as it is)")


def stale_rendered(root: Path, only: tuple[str, ...] = ()) -> list[str]:
    """Clusters whose build/rendered/ files are not what `forge render` makes of the overlays now
    (`only`: of these clusters)."""
    from forge.render import overlays as render

    out = root / RENDERED_DIR
    if not out.is_dir():
        return []  # validate says nothing was rendered
    todo = render.targets(root)
    keys = render._keys(root, todo, GlobalInputs(root), Digests(root, "render-inputs"))
    by_cluster: dict[str, dict] = {}
    for target in todo:
        by_cluster.setdefault(target.cluster, {})[target] = keys[target]
    state = render._load(out.with_name(f".{out.name}.state.json"))
    # A cluster with nothing rendered at all is named by validate itself ("run `make render` first").
    stale = [c for c, wanted in sorted(by_cluster.items()) if (out / c).is_dir() and not render._fresh(out, c, wanted, state)]
    stale += sorted(p.name for p in out.iterdir() if p.is_dir() and p.name not in by_cluster)
    return [c for c in stale if not only or c in only]


def require_rendered(root: Path, only: tuple[str, ...] = ()) -> None:
    stale = stale_rendered(root, only)
    if stale:
        raise StaleTree(f"{RENDERED_DIR}/{stale[0]}: not what the overlays render to now"
                        f"{f' (and {len(stale) - 1} more clusters)' if len(stale) > 1 else ''}: run `forge render` "
                        f"(make render), then validate ({ALLOW} to validate it as it is)")

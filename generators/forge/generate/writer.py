"""The only code that writes generated files. It owns whole folders: it builds the new tree in a
staging folder, then swaps the owned folders in with forge.files.folders.swap, so stale files disappear,
a failure or Ctrl-C leaves the previous tree exactly as it was, and a crash mid-swap is rolled back
(or completed) by the next run."""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import click

from forge.files.folders import JOURNAL, recover, refuse_symlinks, swap, write_error
from forge.generate.tree import Tree
from forge.files.lock import repo_lock
from forge.files.textguard import odd_kind

STAGING = ".forge-staging"
# What generate's swaps own (forge.files.paths): overlays/ or one cluster's overlay, a cluster's
# bootstrap. A journal naming anything else is not generate's (forge.files.folders.check_journal).
_OWNED = re.compile(r"overlays(/[^/]+)?|clusters/[^/]+/argocd")


def owned(target: str) -> bool:
    return bool(_OWNED.fullmatch(target)) and ".." not in target.split("/")


def refuse_links(root: Path, rels: list[str]) -> None:
    """No symbolic link in the staging folder, the owned trees or the folders above them."""
    refuse_symlinks(root, [STAGING, *rels])


def _write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_tree(root: Path, tree: Tree) -> None:
    """Write the tree to staging, then swap every owned folder in at once (forge.files.folders.swap).
    A swap a crash interrupted is recovered first; a disk that refuses a write is one error."""
    with repo_lock(root, "generate"):
        _write_tree(root, tree)


def _write_tree(root: Path, tree: Tree) -> None:
    staging = root / STAGING
    recover_interrupted(root)
    refuse_links(root, tree.owned)
    shutil.rmtree(staging, ignore_errors=True)
    new = staging / "new"
    try:
        for owned in tree.owned:
            (new / owned).mkdir(parents=True, exist_ok=True)
        for rel, text in sorted(tree.files.items()):
            _write_file(new / rel, text)
        swap(staging, [(new / rel if any((new / rel).iterdir()) else None, root / rel) for rel in tree.owned])
    except OSError as exc:
        raise write_error(exc, "the generated tree") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def recover_interrupted(root: Path) -> str | None:
    """Run by generate and `forge check`: a generate a crash stopped mid-swap is rolled back (or
    completed, if every new folder was already in) and said on stderr; None when there was none."""
    refuse_symlinks(root, [STAGING])
    with repo_lock(root, "generate"):
        outcome = recover(root / STAGING, owned)
    if outcome:
        outcome = f"{STAGING}/{JOURNAL}: a generate was interrupted while swapping folders in: {outcome}"
        click.echo(f"recovered: {outcome}", err=True)
    return outcome


def _on_disk(root: Path, tree: Tree) -> dict[str, str | None]:
    """Every entry under the owned folders but folders: repo path -> what it is when it is not a
    regular file (a link, a FIFO, a device: forge writes none, and opening a FIFO blocks)."""
    found = {}
    for rel in tree.owned:
        for dirpath, dirnames, filenames in os.walk(root / rel):  # links to folders are listed, not followed
            for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
                path = Path(dirpath) / name
                found[path.relative_to(root).as_posix()] = odd_kind(path)
    return found


def diff_tree(root: Path, tree: Tree) -> list[str]:
    """Files whose content on disk differs from the tree: '<path> (changed|missing|stale|...)'."""
    problems = []
    on_disk = _on_disk(root, tree)
    for rel in sorted(on_disk.keys() | set(tree.files)):
        if on_disk.get(rel):
            problems.append(f"{rel} (not a regular file: a {on_disk[rel]}; forge writes only regular files: delete it)")
        elif rel not in tree.files:
            problems.append(f"{rel} (stale: the inventory no longer produces it)")
        elif rel not in on_disk:
            problems.append(f"{rel} (missing)")
        elif (root / rel).read_text(encoding="utf-8") != tree.files[rel]:
            problems.append(f"{rel} (changed)")
    return problems

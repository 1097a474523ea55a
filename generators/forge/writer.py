"""The only code that writes generated files. It owns whole folders: it builds the new tree in a
staging folder, then swaps each owned folder in, so stale files disappear and a failure (or
Ctrl-C) leaves the previous tree exactly as it was."""
from __future__ import annotations

import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

from forge.generate import Tree

STAGING = ".forge-staging"


def _write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@contextmanager
def _interrupts_deferred():
    """Hold SIGINT while folders are being swapped; deliver it once the tree is whole again."""
    caught: list[tuple] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    except ValueError:  # not the main thread: nothing to defer
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt


def write_tree(root: Path, tree: Tree) -> None:
    staging = root / STAGING
    shutil.rmtree(staging, ignore_errors=True)
    new, old = staging / "new", staging / "old"
    try:
        for owned in tree.owned:
            (new / owned).mkdir(parents=True, exist_ok=True)
        for rel, text in sorted(tree.files.items()):
            _write_file(new / rel, text)
        _swap(root, tree.owned, new, old)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap(root: Path, owned: list[str], new: Path, old: Path) -> None:
    done: list[str] = []
    with _interrupts_deferred():
        try:
            for rel in owned:
                target = root / rel
                if target.exists():
                    (old / rel).parent.mkdir(parents=True, exist_ok=True)
                    target.rename(old / rel)
                done.append(rel)
                if (new / rel).exists() and any((new / rel).iterdir()):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    (new / rel).rename(target)
        except BaseException:
            for rel in reversed(done):  # put every folder back the way it was
                target = root / rel
                if target.exists():
                    shutil.rmtree(target)
                if (old / rel).exists():
                    (old / rel).rename(target)
            raise


def diff_tree(root: Path, tree: Tree) -> list[str]:
    """Files whose content on disk differs from the tree: '<path> (changed|missing|stale)'."""
    problems = []
    on_disk = {p.relative_to(root).as_posix() for rel in tree.owned for p in (root / rel).rglob("*") if p.is_file()}
    for rel in sorted(on_disk | set(tree.files)):
        if rel not in tree.files:
            problems.append(f"{rel} (stale: the inventory no longer produces it)")
        elif rel not in on_disk:
            problems.append(f"{rel} (missing)")
        elif (root / rel).read_text(encoding="utf-8") != tree.files[rel]:
            problems.append(f"{rel} (changed)")
    return problems

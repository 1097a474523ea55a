"""The one way forge replaces output: a journaled swap of finished staging entries into place.

Used by generate (overlays/ and clusters/*/argocd/), render, hydrate (the whole build/hydrated/
or single files with --component) and the chart caches. Each swap works in a folder of its own
(`work`) beside the targets:

1. every new entry is written in full under staging;
2. `work/journal.json` lists, per entry, the planned renames (target -> work/old/<i>, then
   staging -> target) and is fsynced before the first rename;
3. the renames run, with Ctrl-C deferred until the targets are whole again;
4. work/old/ is removed, then the journal.

Recovery (`recover`, run by the next swap into the same place and by `forge check`) reads a
journal left by a crash (SIGKILL, power loss) and decides:

* every staging -> target rename was done: the new tree is complete, so the swap is *completed*
  (work/old/ and the journal are removed);
* otherwise it is *rolled back*: each entry's new copy goes back to staging and its old copy back
  to the target, last entry first, so the targets are exactly the old tree again.

Each rename is atomic and each path in the journal is used once, so which renames happened is
read from the disk alone: an entry whose staging path is gone was swapped in; an entry whose
old copy exists was moved aside. A target is therefore at all times the old or the new copy, or,
for the moment between an entry's two renames, absent with its old copy in work/old/ and the
journal naming it: recovery restores it before anything else reads the tree.

FORGE_SWAP_FAULT=<k>[:kill|:oserror] (tests only) stops a swap after its step k (1 = journal
written, then one step per rename, then old copies removed): SIGKILL, or an OSError (ENOSPC).
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from forge.errors import ForgeError
from forge.files.textguard import read_regular  # noqa: F401  (the journal's reader; others import it here)

JOURNAL = "journal.json"
FAULT_ENV = "FORGE_SWAP_FAULT"


@dataclass(frozen=True)
class Entry:
    """One target and its planned renames (paths relative to the work folder's parent)."""

    target: str
    new: str | None  # staging path moved to target; None: the target is removed
    old: str | None  # where the target's old copy goes; None: there was none


@contextmanager
def interrupts_deferred():
    """Hold SIGINT while entries are being swapped; deliver it once the targets are whole again."""
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


class _Faults:
    """The test hook: count steps, stop after the one FORGE_SWAP_FAULT names."""

    def __init__(self) -> None:
        spec = os.environ.get(FAULT_ENV, "")
        step, _, how = spec.partition(":")
        self.at = int(step) if step.isdigit() else 0
        self.how = how or "kill"
        self.step = 0

    def tick(self, where: Path) -> None:
        self.step += 1
        if self.step != self.at:
            return
        if self.how == "oserror":
            raise OSError(errno.ENOSPC, "No space left on device", str(where))
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_journal(work: Path, entries: list[Entry]) -> None:
    work.mkdir(parents=True, exist_ok=True)
    path = work / JOURNAL
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"entries": [e.__dict__ for e in entries]}, handle, indent=1)
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_dir(work)


def _read_journal(work: Path) -> list[Entry] | None:
    path = work / JOURNAL
    if work.is_symlink():
        raise JournalError(path, f"lies in {work}, a symbolic link")
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise JournalError(path, "is not a regular file")
    try:
        data = json.loads(read_regular(path, MAX_JOURNAL_BYTES).decode("utf-8"))
    except UnicodeDecodeError:
        raise JournalError(path, "is not UTF-8 text") from None
    except ValueError:
        # A torn journal: it was being written, so no rename had started yet.
        return []
    except OSError as exc:
        raise JournalError(path, f"cannot be read ({exc.strerror or exc})") from None
    items = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(i, dict) and set(i) == _ENTRY_KEYS for i in items):
        raise JournalError(path, "is not a swap journal (expected {\"entries\": [{target, new, old}, ...]})")
    if not all(isinstance(i["target"], str) and all(isinstance(i[k], (str, type(None))) for k in ("new", "old"))
               for i in items):
        raise JournalError(path, "has an entry whose paths are not text")
    return [Entry(**item) for item in items]


_ENTRY_KEYS = {"target", "new", "old"}
MAX_JOURNAL_BYTES = 4 * 1024 * 1024  # a swap of 20,000 entries; a real one lists a few hundred


class JournalError(ForgeError):
    """A journal this swap did not write (planted, committed, edited, or for other targets): refused
    before anything is renamed, so it can never move or delete a path outside the swap's own."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}; nothing was renamed. A swap journal is forge's own record of a "
                         f"swap in progress, never committed: if no forge is running, delete {path.parent}/")


def _inside(base: Path, rel: str) -> bool:
    """`rel` is a plain relative path (no `..`, `.`, `//`, not absolute) whose folder, symlinks
    resolved, is inside `base`: a rename of it can touch nothing else."""
    if not rel or os.path.isabs(rel) or os.path.normpath(rel) != rel or rel.split(os.sep)[0] == "..":
        return False
    return (base / rel).parent.resolve().is_relative_to(base.resolve())


def check_journal(work: Path, entries: list[Entry], targets: Callable[[str], bool] | None) -> None:
    """Every entry names one of the swap's own targets (`targets`), its old copy work/old/<i> and a
    new copy beside the targets, all inside the work folder's parent."""
    base = work.parent
    for i, entry in enumerate(entries):
        paths = [entry.target] + [p for p in (entry.new, entry.old) if p is not None]
        if not all(_inside(base, p) for p in paths):
            raise JournalError(work / JOURNAL, f"entry {i} names a path outside {base} (or through a symlink)")
        if targets is not None and not targets(entry.target):
            raise JournalError(work / JOURNAL, f"entry {i} names '{entry.target}', which this swap does not own")
        if entry.old is not None and entry.old != f"{work.name}/old/{i}":
            raise JournalError(work / JOURNAL, f"entry {i} puts an old copy at '{entry.old}', not {work.name}/old/{i}")
        if entry.new is not None and (entry.new == entry.target or entry.target.startswith(entry.new + os.sep)
                                      or entry.new.startswith(entry.target + os.sep)):
            raise JournalError(work / JOURNAL, f"entry {i}'s new copy '{entry.new}' overlaps its target")


def _rename(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    src.rename(dst)


def _clean(work: Path) -> None:
    shutil.rmtree(work / "old", ignore_errors=True)
    (work / JOURNAL).unlink(missing_ok=True)
    shutil.rmtree(work, ignore_errors=True)


def _roll_back(base: Path, entries: list[Entry]) -> None:
    for entry in reversed(entries):
        target = base / entry.target
        if entry.new is not None and not (base / entry.new).exists() and target.exists():
            _rename(target, base / entry.new)  # it was swapped in: take it back out
        if entry.old is not None and (base / entry.old).exists():
            _rename(base / entry.old, target)


def _all_swapped_in(base: Path, entries: list[Entry]) -> bool:
    return all(((base / e.target).exists() and not (base / e.new).exists()) if e.new is not None
               else not (base / e.target).exists() for e in entries)


def recover(work: Path, targets: Callable[[str], bool] | None = None) -> str | None:
    """Finish or undo a swap a crash interrupted in `work`; says which, or None if there was none.
    The journal is checked first (check_journal; `targets`: which target paths, relative to the
    work folder's parent, the caller's swaps own): a journal that is not this swap's own is an
    error and nothing is renamed."""
    entries = _read_journal(work)
    if entries is None:
        return None
    check_journal(work, entries, targets)
    base = work.parent
    with interrupts_deferred():
        if entries and _all_swapped_in(base, entries):
            outcome = "completed (every new entry was already in place)"
        else:
            _roll_back(base, entries)
            outcome = "rolled back to the previous tree"
        _clean(work)
    return outcome


def _relative(path: Path, base: Path) -> str:
    return os.path.relpath(path, base)


def swap(work: Path, pairs: list[tuple[Path | None, Path]]) -> None:
    """Put each finished staging path at its target (staging None: remove the target), all or
    nothing, crash-safe (see the module doc). `work` sits in the targets' file system; the caller
    runs `recover(work)` before it prepares staging. `work` is removed at the end."""
    base = work.parent
    entries = [Entry(_relative(target, base), _relative(staging, base) if staging is not None else None,
                     f"{_relative(work, base)}/old/{i}" if os.path.lexists(target) else None)
               for i, (staging, target) in enumerate(pairs)]
    faults = _Faults()
    with interrupts_deferred():
        try:
            _write_journal(work, entries)
            faults.tick(work / JOURNAL)
            for entry in entries:
                if entry.old is not None:
                    _rename(base / entry.target, base / entry.old)
                    faults.tick(base / entry.target)
                if entry.new is not None:
                    _rename(base / entry.new, base / entry.target)
                    faults.tick(base / entry.target)
        except BaseException:
            _roll_back(base, entries)
            _clean(work)
            raise
        # Every new entry is in place: from here a crash is completed by recovery, never undone.
        shutil.rmtree(work / "old", ignore_errors=True)
        faults.tick(work / "old")
        _clean(work)


def swap_in(staging: Path, final: Path) -> None:
    """Put the finished `staging` folder at `final`: `final` is at all times the old tree or the
    new one (or restored to the old one by the next swap's recovery after a crash)."""
    work = final.with_name(f".{final.name}.swap")
    recover(work, lambda target: target == final.name)
    swap(work, [(staging, final)])


class WriteError(ForgeError, OSError):
    """A write the disk refused (read-only, full, a file where a folder belongs), as one line for
    people; still an OSError for code that catches those."""

    def __str__(self) -> str:
        return str(self.args[0])


def write_error(exc: OSError, what: str) -> WriteError:
    where = f"{exc.filename}: " if exc.filename else ""
    return WriteError(f"{where}cannot write {what}: {exc.strerror or exc}; the previous files are kept")


class SymlinkError(ForgeError):
    """A symbolic link where forge owns a tree: writing or swapping there would follow it out."""


def refuse_symlinks(root: Path, rels: list[str]) -> None:
    """Each of `rels` (relative to `root`), every folder between, and everything inside it, must
    not be a symbolic link: forge writes, renames and deletes in these trees, and a link (committed,
    or planted) would take that outside the repository."""
    for rel in rels:
        path = root
        for part in Path(rel).parts:
            path = path / part
            if path.is_symlink():
                _symlink(root, path)
        if path.is_dir():
            stack = [str(path)]
            while stack:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        if entry.is_symlink():
                            _symlink(root, Path(entry.path))
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)


def _symlink(root: Path, path: Path) -> None:
    rel = path.relative_to(root).as_posix()
    raise SymlinkError(f"{rel}: is a symbolic link (to {os.readlink(path)}) where forge owns a tree, which it writes "
                       f"and deletes in: replace it with a real folder (or delete it and run `forge generate`); "
                       "forge never follows a link out of the repository")

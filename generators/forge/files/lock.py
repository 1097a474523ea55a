"""One writer at a time per repository: generate, check (which may roll back an interrupted
swap), render and `forge node` hold an exclusive lock on the repository's folder itself while
they run (flock on the directory: no lock file is created, so a refused run leaves the tree as it
was, and a read-only cache does not matter). A
second run waits, saying so on stderr, and refuses with exit 2 once FORGE_LOCK_TIMEOUT seconds
(default 300) have passed: two writers at once could each swap half a tree in.

The lock is flock(2) on an open file: the kernel drops it when its holder exits, however it
exits (SIGKILL included), so it is never stale. It is re-entrant within a process (generate calls
the writer, which takes it again)."""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from forge.errors import ForgeError

TIMEOUT_ENV = "FORGE_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
_POLL = 0.1
_held: dict[str, tuple[int, int]] = {}  # lock path -> (fd, depth), in this process


class LockError(ForgeError):
    pass


def _timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        raise LockError(f"{TIMEOUT_ENV}={raw!r}: expected a number of seconds, such as 300") from None
    if not 0 <= value <= 86400:
        raise LockError(f"{TIMEOUT_ENV}={raw!r}: expected 0 to 86400 seconds")
    return value


def _open(path: Path) -> int | None:
    """The folder's descriptor; None when there is no folder yet (nothing to protect: the command
    reports the missing repository itself)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LockError(f"{path}: cannot open the repository to lock it: {exc.strerror or exc}; nothing was written") from None


@contextmanager
def repo_lock(root: Path, what: str) -> Iterator[None]:
    """Hold the repository's writer lock for `what` (a command's name, shown to a waiting run)."""
    path = root
    key = os.path.realpath(path)
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[key] = (fd, _held[key][1] - 1)
        return
    timeout = _timeout()
    fd = _open(path)
    if fd is None:
        yield
        return
    try:
        _acquire(fd, path, timeout, what)
        _held[key] = (fd, 1)
        try:
            yield
        finally:
            del _held[key]
    finally:
        os.close(fd)  # releases the lock


def _acquire(fd: int, path: Path, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        if not said:
            click.echo(f"waiting: another forge run is writing in {path}; forge {what} waits up to {timeout:g} s "
                       f"({TIMEOUT_ENV})", err=True)
            said = True
        if time.monotonic() >= deadline:
            raise LockError(f"{path}: another forge run is still writing here after {timeout:g} s ({TIMEOUT_ENV}); "
                            "one writer at a time: nothing was written; let it finish, then run again")
        time.sleep(_POLL)

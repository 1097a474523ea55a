"""The process that owns a box after `forge twin up`: it starts the box, says when it is ready (or
why not) in the box's log, then waits; SIGTERM (`forge twin down`) stops every process and
removes the box's state. Its processes die with it (PR_SET_PDEATHSIG), so even a SIGKILL of the
supervisor leaves nothing running. Until the box is ready it also watches the `forge twin up`
that started it: if that goes (Ctrl-C, a crash), the half-started box is stopped.

Run by `forge twin up` as `python -m forge.twin.supervise ROOT CLUSTER UPSTREAM PARENT_PID`.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

from forge.errors import ForgeError
from forge.fleet import load_fleet
from forge.twin.box import Box, state_folder

READY = "twin: ready"
FAILED = "twin: failed:"


def log_file(root: Path, cluster: str) -> Path:
    return state_folder(root, cluster).with_suffix(".log")


def main(argv: list[str]) -> int:
    root, cluster, upstream, parent = Path(argv[0]), argv[1], argv[2], int(argv[3])
    stop, ready = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    def say(line: str) -> None:
        print(line, flush=True)

    box: Box | None = None
    try:
        plan = next((p for p in load_fleet(root) if p.name == cluster), None)
        if plan is None:
            raise ForgeError(f"no cluster {cluster!r} in {root / 'clusters'}")
        box = Box(root, plan, Path(upstream) if upstream else None, say)
        watcher = threading.Thread(target=_abort_if_gone, args=(parent, stop, ready), daemon=True)
        watcher.start()
        box.up()
        ready.set()  # from here on the box outlives `forge twin up`, as asked
        if stop.is_set():
            raise ForgeError("`forge twin up` was interrupted before the box was ready")
        say(READY)
        stop.wait()
        return 0
    except ForgeError as exc:
        say(f"{FAILED} " + "\n".join(exc.lines()))
        return 2
    except Exception as exc:  # noqa: BLE001 - a bug: its line reaches `forge twin up`, then the traceback
        say(f"{FAILED} internal error: {exc!r}")
        raise
    finally:
        if box is not None:
            box.down()
            shutil.rmtree(box.state, ignore_errors=True)


def _abort_if_gone(parent: int, stop: threading.Event, ready: threading.Event) -> None:
    """Until the box is ready, a vanished `forge twin up` means nobody wants it: stop."""
    while not stop.is_set() and not ready.is_set():
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            if not ready.is_set():
                stop.set()
            return
        ready.wait(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

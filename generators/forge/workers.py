"""Worker processes for the stages that use every core (generate's builds, validate's clusters).

Ctrl-C on a terminal reaches the whole foreground process group. A worker that raised its own
KeyboardInterrupt would print a traceback per worker, so workers take SIGINT's default action
(they end, silently) and the parent alone turns it into `interrupted` (exit 130). They take it
from the fork on, not from the pool's initializer: a Ctrl-C between the two (seen in CI) made the
child raise forge's KeyboardInterrupt inside multiprocessing's bootstrap and print its traceback.
When the parent
stops early for any reason, queued work is cancelled and running workers are ended: leaving the
`with` block never waits for the rest of the fleet.
"""
from __future__ import annotations

import os
import signal
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Iterator


def _quiet_on_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


_quiet_children = {"registered": False}


@contextmanager
def process_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    if not _quiet_children["registered"]:  # once per process: every fork after this is quiet
        os.register_at_fork(after_in_child=_quiet_on_sigint)
        _quiet_children["registered"] = True
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_quiet_on_sigint)
    try:
        yield pool
    except BaseException:
        # The executor has no public way to stop work already running in a worker: end them, then
        # let the executor see it and wind down (its exit hook must not find it half shut).
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()

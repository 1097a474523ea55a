"""Progress of a long stage: on a terminal one live line (`render: 37/100 clusters`), rewritten in
place; in CI (not a terminal, CI set) a line every HEARTBEAT_S = 10 seconds while it runs (a CI log
that says nothing for half a minute reads as a hang); elsewhere nothing until the stage ends; then
one line with its time."""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import TextIO

# In CI (CI set, as GitHub Actions and most runners set it) or when asked (FORGE_HEARTBEAT_S).
HEARTBEAT_S = float(os.environ.get("FORGE_HEARTBEAT_S") or ("10" if os.environ.get("CI") else "0"))
# Stages whose heartbeat still runs: a command that fails before its stage finished stops them on
# its way out (stop_all, from cli_common.user_errors), so no beat outlives the command that started it.
_RUNNING: set["Progress"] = set()


def stop_all() -> None:
    for progress in list(_RUNNING):
        progress.stop()


class Progress:
    def __init__(self, stage: str, unit: str = "clusters", stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stage, self.unit = stage, unit
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.started = time.perf_counter()
        self.done = self.total = 0
        self._shown = 0.0
        self._stop = threading.Event()
        if not self.live and HEARTBEAT_S > 0:
            _RUNNING.add(self)
            threading.Thread(target=self._beat, name=f"progress-{stage}", daemon=True).start()

    def stop(self) -> None:
        """End the heartbeat, say nothing (the command's own error says what happened)."""
        self._stop.set()
        _RUNNING.discard(self)

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            seconds = time.perf_counter() - self.started
            so_far = f"{self.done}/{self.total} {self.unit}" if self.total else "working"
            self.stream.write(f"{self.stage}: {so_far}, {seconds:.0f}s so far\n")
            self.stream.flush()

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        now = time.perf_counter()
        # At most ten updates a second: a redraw per cluster would cost more than it shows.
        if self.live and (done == total or now - self._shown > 0.1):
            self._shown = now
            self.stream.write(f"\r{self.stage}: {done}/{total} {self.unit}")
            self.stream.flush()

    def finish(self, note: str = "") -> None:
        self.stop()
        seconds = time.perf_counter() - self.started
        line = f"{self.stage}: {self.done}/{self.total} {self.unit} in {seconds:.2f}s{f' ({note})' if note else ''}"
        self.stream.write(("\r" + line + "\033[K\n") if self.live else line + "\n")
        self.stream.flush()

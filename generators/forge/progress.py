"""Progress of a long stage: on a terminal one live line (`render: 37/100 clusters`), rewritten in
place; elsewhere (CI logs, pipes) nothing until the stage ends, then one line with its time."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stage: str, unit: str = "clusters", stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stage, self.unit = stage, unit
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.started = time.perf_counter()
        self.done = self.total = 0
        self._shown = 0.0

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        now = time.perf_counter()
        # At most ten updates a second: a redraw per cluster would cost more than it shows.
        if self.live and (done == total or now - self._shown > 0.1):
            self._shown = now
            self.stream.write(f"\r{self.stage}: {done}/{total} {self.unit}")
            self.stream.flush()

    def finish(self, note: str = "") -> None:
        seconds = time.perf_counter() - self.started
        line = f"{self.stage}: {self.done}/{self.total} {self.unit} in {seconds:.2f}s{f' ({note})' if note else ''}"
        self.stream.write(("\r" + line + "\033[K\n") if self.live else line + "\n")
        self.stream.flush()

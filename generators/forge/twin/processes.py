"""Starting and stopping the box's processes so that none outlives the box.

Every process is started with PR_SET_PDEATHSIG = SIGKILL: when the process that started it dies
(Ctrl-C, a crash, SIGKILL), the kernel kills it too. Servers listen on 127.0.0.1, on ports the
kernel picked as free. A process's output goes to its log file, shown when it fails to start.
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from forge.errors import ForgeError

_PR_SET_PDEATHSIG = 1
STOP_GRACE_SECONDS = 10


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 right now (all held open while choosing, so no
    two are the same)."""
    held = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def _die_with_parent(parent: int) -> Callable[[], None]:
    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return preexec


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def failed(self, what: str) -> ForgeError:
        code = self.popen.poll()
        state = f"exited with {code}" if code is not None else "still running"
        return ForgeError(f"twin: {self.name} {what} ({state}); the end of {self.log}:\n{self.tail()}")


# client-go (kwok, Kueue and the training-operator use v0.36) asks for watch-list streams, which the
# API server cannot serve over etcd 3.4 (no progress notifications: RequestWatchProgress is off);
# each refused stream costs a relist with back-off, and pods waited tens of seconds to turn Running.
CLIENT_ENV = {"KUBE_FEATURE_WatchListClient": "false"}


def start(name: str, cmd: list[str], logs: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> Process:
    logs.mkdir(parents=True, exist_ok=True)
    env = {**(env if env is not None else os.environ), **CLIENT_ENV}
    log = logs / f"{name}.log"
    with open(log, "ab") as out:
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=env, cwd=cwd, preexec_fn=_die_with_parent(os.getpid()))
    return Process(name, popen, log)


def wait_until(ready: Callable[[], bool], proc: Process, what: str, timeout: float) -> None:
    """Poll `ready` until it is true; fail with the process's log if it exits or time runs out."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if not proc.alive():
            raise proc.failed(f"did not become {what}")
        if time.monotonic() > deadline:
            raise proc.failed(f"was not {what} after {timeout:.0f}s")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def stop_all(procs: list[Process]) -> None:
    """SIGTERM to each, newest first, then SIGKILL to whatever is left after the grace period."""
    for proc in reversed(procs):
        if proc.alive():
            proc.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for proc in reversed(procs):
        try:
            proc.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.popen.kill()
            proc.popen.wait()


def pid_alive(pid: int, cmd_hint: str) -> bool:
    """Whether `pid` runs and is ours (its command line contains `cmd_hint`): never signal a
    process that merely reused the number."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return cmd_hint in cmdline

"""`forge twin up` leaves a box running that kubectl can use, on 127.0.0.1 only; `down` stops every
process of it; a crash of the command that owns a box takes the whole box with it."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.twin.conftest import still_running

KUBECTL = Path(sys.executable).with_name("kubectl")


def twin(root: Path, upstream: Path, *args: str, env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge.commands.main", "twin", *args, "--root", str(root), *kw.pop("extra", ())],
                          capture_output=True, text=True, env={**env, "FORGE_UPSTREAM": str(upstream)}, timeout=900, **kw)


def listening_addresses(pids: list[int]) -> set[str]:
    """The local addresses these processes listen on, in this network namespace (hex of /proc/net/tcp)."""
    inodes = set()
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                target = fd.readlink().as_posix()
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                found.add(parts[1].rsplit(":", 1)[0])
    return found


def test_up_leaves_a_box_kubectl_reaches_on_loopback_only_and_down_stops_it_all(fleet_copy, upstream, twin_env):
    up = twin(fleet_copy, upstream, "up", "h200", env=twin_env)
    assert up.returncode == 0, up.stdout + up.stderr
    kubeconfig = fleet_copy / "build/twin/h200/kubeconfig"
    assert f"export KUBECONFIG={kubeconfig}" in up.stdout
    state = json.loads((fleet_copy / "build/twin/h200/state.json").read_text())
    pids = [state["supervisor_pid"], *state["pids"].values()]
    try:
        nodes = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "nodes", "--no-headers"],
                               capture_output=True, text=True, timeout=60)
        assert nodes.returncode == 0, nodes.stderr
        assert len(nodes.stdout.splitlines()) == 21 and all(" Ready " in ln for ln in nodes.stdout.splitlines())
        version = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "version", "-o", "json"],
                                 capture_output=True, text=True, timeout=60)
        assert json.loads(version.stdout)["serverVersion"]["gitVersion"] == "v1.34.4"
        assert "h200: up at https://127.0.0.1:" in twin(fleet_copy, upstream, "status", env=twin_env).stdout
        addresses = listening_addresses(pids)
        assert addresses and addresses <= {"0100007F"}, addresses  # 127.0.0.1, nothing else
    finally:
        down = twin(fleet_copy, upstream, "down", "h200", env=twin_env)
    assert down.returncode == 0 and "box of h200 stopped" in down.stdout, down.stdout + down.stderr
    assert still_running(pids) == []
    assert not (fleet_copy / "build/twin/h200").exists()
    assert "no box is up" in twin(fleet_copy, upstream, "status", env=twin_env).stdout


def test_a_crash_of_the_command_that_owns_the_box_leaves_no_process(fleet_copy, upstream, twin_env):
    state_file = fleet_copy / "build/twin/a100/state.json"
    proc = subprocess.Popen([sys.executable, "-m", "forge.commands.main", "twin", "run", "a100", "--root", str(fleet_copy)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**twin_env, "FORGE_UPSTREAM": str(upstream)})
    deadline = time.monotonic() + 600
    while not (state_file.is_file() and json.loads(state_file.read_text()).get("ready")):
        assert proc.poll() is None and time.monotonic() < deadline, "the box never came up"
        time.sleep(0.5)
    pids = list(json.loads(state_file.read_text())["pids"].values())
    assert still_running(pids) == pids  # all running
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while still_running(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert still_running(pids) == []
    down = twin(fleet_copy, upstream, "down", "a100", env=twin_env)  # clears what the crash left on disk
    assert down.returncode == 0
    assert not (fleet_copy / "build/twin/a100").exists()

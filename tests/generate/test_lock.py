"""Issue 26, a lock: one writer per repository (no lock file: the repository folder is locked). A second generate waits with a line saying so,
and refuses with exit 2 (one `error:` line, nothing written) once FORGE_LOCK_TIMEOUT has passed."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import copy_repo_inputs

FORGE = [str(Path(sys.executable).parent / "forge")]
HOLD = ("import sys, time; from pathlib import Path; from forge.files.lock import repo_lock\n"
        "with repo_lock(Path(sys.argv[1]), 'generate'):\n"
        "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n")


def hold(root: Path, seconds: float) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def generate(root: Path, timeout: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FORGE_LOCK_TIMEOUT": timeout}
    return subprocess.run([*FORGE, "generate", "--root", str(root)], capture_output=True, text=True, env=env, timeout=600)


def test_a_second_writer_refuses_after_the_timeout_and_writes_nothing(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    holder = hold(root, 60)
    try:
        started = time.monotonic()
        result = generate(root, "1")
        assert time.monotonic() - started < 30
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0] == f"waiting: another forge run is writing in {root}; forge generate waits up to 1 s (FORGE_LOCK_TIMEOUT)"
    assert lines[-1].startswith(f"error: {root}: another forge run is still writing here after 1 s") and len(lines) == 2
    assert "Traceback" not in result.stderr
    assert not (root / "overlays").exists() and not (root / ".forge-staging").exists()


def test_a_second_writer_waits_then_runs(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    holder = hold(root, 2)
    try:
        result = generate(root, "120")
    finally:
        holder.wait()
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("waiting: another forge run")
    assert (root / "overlays/h200").is_dir()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    holder = hold(root, 60)
    holder.kill()
    holder.wait()
    result = generate(root, "0")
    assert result.returncode == 0 and "waiting" not in result.stderr, result.stderr


@pytest.mark.parametrize("value", ["soon", "-1"])
def test_a_bad_timeout_is_one_error_line(tmp_path, value):
    root = copy_repo_inputs(tmp_path / "repo")
    result = generate(root, value)
    assert result.returncode == 2 and result.stderr.startswith("error: FORGE_LOCK_TIMEOUT="), result.stderr

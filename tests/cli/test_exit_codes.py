"""Exit codes, the same for every command (forge.commands.common): 0 done or no change, 1 changes or
failures found, 2 bad input or usage, 130 interrupted. Run as real processes, with real signals."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p.endswith("generators"))}
FORGE = [sys.executable, "-m", "forge.commands.main"]


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*FORGE, *args], capture_output=True, text=True, env=ENV, timeout=300, **kwargs)


def wait_for_a_child(session: int, timeout: float = 120) -> None:
    """Until a process of the session other than its leader runs (git or kustomize started by forge)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = subprocess.run(["ps", "-o", "pid=", "-s", str(session)], capture_output=True, text=True).stdout.split()
        if any(int(pid) != session for pid in pids):
            return
        time.sleep(0.05)
    raise AssertionError("forge started no child process")


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """This repository's tracked files in a fresh git repo with one commit (forge diff needs a base)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    dest = tmp_path / "repo"
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True, check=True).stdout
    for rel in filter(None, files.split("\0")):
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    git = ["git", "-C", str(dest), "-c", "user.name=t", "-c", "user.email=t@forge.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], check=True)
    return dest


@pytest.mark.parametrize("args", [("no-such-command",), ("generate", "--no-such-option"), ("render", "--jobs", "0"),
                                  ("diff",), ("validate", "--component", "x")])
def test_usage_errors_exit_2(args):
    proc = run(*args, "--root", str(REPO)) if args[0] != "no-such-command" else run(*args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Error" in proc.stderr or "error:" in proc.stderr


def test_help_exits_0():
    proc = run("--help")
    assert proc.returncode == 0 and "forge generate" in proc.stdout or "generate" in proc.stdout


def test_check_exits_0_in_step_and_1_on_changes(git_repo: Path):
    assert run("check", "--root", str(git_repo)).returncode == 0
    values = next((git_repo / "overlays/h200").glob("*/values.yaml"))
    values.write_text(values.read_text() + "# edited by hand\n")
    proc = run("check", "--root", str(git_repo))
    assert proc.returncode == 1, proc.stderr
    assert "generated files differ from the inventory" in proc.stderr


def test_ctrl_c_during_diff_exits_130_not_1(git_repo: Path):
    """Ctrl-C reaches the whole foreground process group: forge and the kustomize it runs. Exit 1
    would read as "changes found", which `make diff` and ci/pr-diff.sh accept."""
    (git_repo / "clusters/h200/inventory.yaml").write_text(
        (git_repo / "clusters/h200/inventory.yaml").read_text().replace("exa.ai/pool: training", "exa.ai/pool: research", 1))
    proc = subprocess.Popen([*FORGE, "diff", "--base", "HEAD", "--root", str(git_repo)], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    wait_for_a_child(proc.pid)  # diff renders both revisions with kustomize: interrupt it there
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err.splitlines()[-1] == "interrupted"
    assert "Traceback" not in err and "Aborted!" not in err


def test_ctrl_c_after_generate_swapped_the_tree_exits_130(git_repo: Path):
    """The writer holds SIGINT while it swaps folders and delivers it once the tree is whole: that
    late KeyboardInterrupt is an interruption (130), not click's `Aborted!` with exit 1."""
    driver = ("import os, signal, sys\n"
              "import forge.generate.incremental as writer\n"  # generate's writer (the journaled swap of changed clusters)
              "real = writer.write_clusters\n"
              "def write_then_ctrl_c(*args):\n"
              "    real(*args)\n"
              "    os.kill(os.getpid(), signal.SIGINT)\n"
              "    signal.sigtimedwait([], 0) if hasattr(signal, 'sigtimedwait') else None\n"
              "writer.write_clusters = write_then_ctrl_c\n"
              "from forge.commands.main import main\n"
              "main(['generate', '--root', sys.argv[1]])\n")
    proc = subprocess.run([sys.executable, "-c", driver, str(git_repo)], capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stderr.split() == ["interrupted"]  # after a blank line that closes the terminal's ^C
    assert subprocess.run(["git", "-C", str(git_repo), "status", "--porcelain"], capture_output=True, text=True).stdout == ""


def test_bad_inventory_exits_2_from_generate_and_the_pre_commit_hook(git_repo: Path):
    inventory = git_repo / "clusters/h200/inventory.yaml"
    inventory.write_bytes(b"\x00\x01\x02binary\xff\xfe")
    proc = run("generate", "--root", str(git_repo))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    hook = subprocess.run([sys.executable, "-m", "forge.inventory", "clusters/h200/inventory.yaml"], cwd=git_repo,
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert hook.returncode == 2, hook.stderr
    assert hook.stderr.startswith("clusters/h200/inventory.yaml:1: <top>: byte 0xff at offset 9")
    assert "Traceback" not in hook.stderr


@pytest.mark.parametrize(("code", "ok", "said"), [(0, True, "nothing changes"), (1, True, "changes found"),
                                                  (2, False, "failed (exit 2)"), (130, False, "failed (exit 130)")])
def test_pr_diff_script_fails_on_error_and_interruption(tmp_path: Path, code: int, ok: bool, said: str):
    """ci/pr-diff.sh with a stand-in `forge` that exits `code` (it puts tools/bin first on PATH)."""
    (tmp_path / "ci").mkdir()
    shutil.copy2(REPO / "ci/pr-diff.sh", tmp_path / "ci/pr-diff.sh")
    fake = tmp_path / "tools/bin/forge"
    fake.parent.mkdir(parents=True)
    fake.write_text(f"#!/bin/sh\nexit {code}\n")
    fake.chmod(0o755)
    env = {**os.environ, "FORGE_PR_TWIN": "0"}  # the diff's exit codes; the box's part is tests/twin/test_upgrade.py's
    proc = subprocess.run(["bash", "ci/pr-diff.sh", "HEAD", "build/out.md"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert (proc.returncode == 0) is ok and (ok or proc.returncode == code)
    assert said in proc.stdout + proc.stderr


def test_make_diff_accepts_only_0_and_1():
    """`make diff` turns "changes found" (1) into success; an interrupted or failed diff stays a failure."""
    recipe = next(line for line in (REPO / "Makefile").read_text().splitlines() if "forge diff --base" in line)
    command = recipe.strip().lstrip("@").split("  #")[0].replace("$$", "$").replace("forge diff --base $(BASE)", "sh -c 'exit $0'")
    for code, ok in ((0, True), (1, True), (2, False), (130, False)):
        assert (subprocess.run(["sh", "-c", command.replace("$0", str(code))]).returncode == 0) is ok, code


def test_ctrl_c_while_workers_build_clusters_exits_130_without_a_traceback(git_repo: Path):
    """Cold generate builds clusters in worker processes; Ctrl-C reaches them too. h200's build is
    made slow here, so the signal surely arrives while one worker is busy and the other waits for
    work (a waiting worker is the one that used to print a KeyboardInterrupt traceback)."""
    driver = ("import sys, time\n"
              "import forge.generate.incremental as incremental\n"
              "real = incremental.build_cluster\n"
              "def slow(*args):\n"
              "    time.sleep(60 if 'h200' in str(args[1]) else 0)\n"
              "    return real(*args)\n"
              "incremental.build_cluster = slow\n"  # forked workers inherit the slow build
              "from forge.commands.main import main\n"
              "main(['generate', '--jobs', '2', '--root', sys.argv[1]])\n")
    proc = subprocess.Popen([sys.executable, "-c", driver, str(git_repo)], env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    wait_for_a_child(proc.pid)
    time.sleep(2)  # a100 built, h200 building
    started = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and err.split() == ["interrupted"]
    assert time.monotonic() - started < 30  # the workers' remaining minute was not waited for


def test_a_worker_is_quiet_on_ctrl_c_from_its_fork_not_only_from_its_initializer():
    """CI saw Ctrl-C land between a worker's fork and the pool's initializer: the child raised
    forge's KeyboardInterrupt inside multiprocessing's bootstrap and printed a traceback. Every fork
    after the first pool takes SIGINT's default action at once."""
    from forge.commands.common import _on_sigint
    from forge.workers import process_pool

    with process_pool(1):
        pass
    previous = signal.signal(signal.SIGINT, _on_sigint)  # what forge's commands install
    try:
        pid = os.fork()
        if pid == 0:  # the child: report what a Ctrl-C would do here, before any initializer
            os._exit(0 if signal.getsignal(signal.SIGINT) == signal.SIG_DFL else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert os.waitstatus_to_exitcode(status) == 0

"""What Argo CD reads in the box, served on 127.0.0.1: the working tree as a Git repository with
the ring refs forge owns, and Redis, Argo CD's cache.

The served repository is a copy of the working tree (tracked and untracked, not ignored files) with
one box-only commit on top: in clusters/<cluster>/argocd/, every repoURL of forge's own repository
rewritten to the box's Git server, and every upstream chart repository and Git source to the box's
stand-ins (forge.twin.argocd.stand_ins; the OCI ones' repository Secrets also get
`insecureOCIForceHttp`, the local registry being plain HTTP). The rewrites are returned so the box's
report lists them."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from forge.errors import ForgeError
from forge.twin.processes import Process, free_ports, start, wait_until

RING_REFS = ("forge/ring/canary", "forge/ring/fleet")


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"GIT_AUTHOR_NAME": "forge box", "GIT_AUTHOR_EMAIL": "box@forge.invalid",
                               "GIT_COMMITTER_NAME": "forge box", "GIT_COMMITTER_EMAIL": "box@forge.invalid",
                               "PATH": "/usr/bin:/bin", "HOME": str(cwd)})
    if done.returncode != 0:
        raise ForgeError(f"twin argocd: git {' '.join(args[:2])} failed in {cwd}: {done.stderr.strip()[-300:]}")
    return done.stdout


def served_tree(root: Path, dest: Path, cluster: str, rewrites: dict[str, str]) -> list[str]:
    """Copy the working tree to dest/forge.git's work tree, rewrite the cluster's repoURLs and commit
    on every ring ref; returns one line per rewritten file and URL."""
    work = dest / "forge"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    files = _git(root, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, files):
        source = root / rel
        if source.is_file() and not source.is_symlink():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, work / rel)
    changed = []
    for path in sorted((work / "clusters" / cluster / "argocd").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for old, new in sorted(rewrites.items(), key=lambda kv: -len(kv[0])):  # a URL before any it starts with
            if old in text:
                text = text.replace(old, new)
                changed.append(f"{path.relative_to(work)}: {_one_line(old)} -> {_one_line(new)}")
        path.write_text(text, encoding="utf-8")
    _git(work, "init", "-q", "-b", RING_REFS[0])
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "the working tree, repoURLs rewritten for the box")
    for ref in RING_REFS[1:]:
        _git(work, "branch", ref)
    return changed


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.strip().splitlines())


def git_daemon(dest: Path, logs: Path) -> tuple[Process, int]:
    port = free_ports(1)[0]
    dest.mkdir(parents=True, exist_ok=True)
    # git-daemon itself, not `git daemon`: that one runs the daemon as its child, which outlives the
    # SIGTERM stop_all sends the process it started (found left serving after a run).
    daemon = Path(_git(dest, "--exec-path").strip()) / "git-daemon"
    proc = start("git-daemon", [str(daemon), "--export-all", "--reuseaddr", "--listen=127.0.0.1",
                                f"--port={port}", f"--base-path={dest}"], logs)
    wait_until(lambda: _answers(port), proc, "serving Git", 30)
    return proc, port


def redis_server(root: Path) -> str:
    """The redis-server on PATH, of the version ci/tools.json pins (`redis`), else what to install."""
    pin = json.loads((root / "ci" / "tools.json").read_text(encoding="utf-8"))["redis"]
    found = shutil.which("redis-server")
    if found is None:
        raise ForgeError(f"twin argocd: redis-server is not installed (Argo CD's cache): install Debian's "
                         f"`{pin['debian_package']}` (apt-get install {pin['debian_package']}; ci/tools.json pins {pin['version']})")
    said = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30).stdout
    version = next((w[2:] for w in said.split() if w.startswith("v=")), "")
    if version != pin["version"]:
        raise ForgeError(f"twin argocd: {found} is redis {version or '(no version)'}, ci/tools.json pins {pin['version']}: "
                         f"install Debian's `{pin['debian_package']}` of that version, or move the pin after checking Argo CD with it")
    return found


def redis(root: Path, logs: Path) -> tuple[Process, int]:
    server = redis_server(root)
    port = free_ports(1)[0]
    proc = start("redis", [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                           "--appendonly", "no", "--protected-mode", "yes"], logs)
    wait_until(lambda: _answers(port), proc, "serving Redis", 30)
    return proc, port


def _answers(port: int) -> bool:
    import socket
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0

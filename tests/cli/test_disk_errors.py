"""Issue 26, disks and data: a cache or build folder the disk refuses, a missing FORGE_KUSTOMIZE:
one `error:` line naming the path, exit 2 (exit 1 would read as "changes found"), the tree as it
was. (The machine's tests run as root, which ignores chmod: a file where the folder belongs is
the refusal planted here; ENOSPC mid-swap is tests/generate/test_swap_crash.py's.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import copy_repo_inputs

FORGE = str(Path(sys.executable).parent / "forge")


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([FORGE, *args, "--root", str(root)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=600)


def test_a_cache_the_disk_refuses_is_one_line_and_nothing_is_written(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    (root / ".cache").write_text("not a folder")
    done = run(root, "generate")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"error: {root}/.cache/forge: Not a directory (the tree is whole: each write is staged, then swapped in)"
    assert not (root / "overlays").exists()


def test_a_build_folder_the_disk_refuses_is_one_line(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    assert run(root, "generate").returncode == 0
    (root / "build").write_text("not a folder")
    done = run(root, "render")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {root}/build/") and "Not a directory" in line


def test_a_missing_forge_kustomize_is_one_line(tmp_path):
    root = copy_repo_inputs(tmp_path / "repo")
    assert run(root, "generate").returncode == 0
    done = run(root, "render", env={"FORGE_KUSTOMIZE": str(tmp_path / "nowhere/kustomize")})
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: FORGE_KUSTOMIZE={tmp_path}/nowhere/kustomize: no such file")

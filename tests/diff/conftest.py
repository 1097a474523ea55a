"""Fixtures for the pull-request workflow tests: a throwaway git repo made of this repo's files.

Revisions are crafted in it (commit, edit, commit), then `forge diff` compares them with the
real generators, the real kustomize and real git: nothing here stands in for a tool.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.cli import main
from forge.errors import ForgeError
from forge.generate import build_tree
from forge.tools import kustomize_build_command
from forge.writer import write_tree

REPO = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=forge-tests", "-c", "user.email=tests@forge.invalid",
                           "-c", "commit.gpgsign=false", *args], check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def regenerate(repo: Path) -> None:
    write_tree(repo, build_tree(repo))


@pytest.fixture
def kustomize() -> list[str]:
    try:
        return kustomize_build_command(REPO)
    except ForgeError as exc:
        pytest.skip(f"needs kustomize (run `make setup`): {exc}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """This repo's files (tracked and untracked, not ignored), generated, committed once."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    dest = tmp_path / "repo"
    listing = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             check=True, capture_output=True, text=True).stdout
    for rel in filter(None, listing.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git(dest.parent, "init", "-q", "-b", "main", str(dest))
    regenerate(dest)
    commit(dest, "base")
    return dest


def forge(*args: str):
    """Run the forge CLI in-process; returns click's Result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)

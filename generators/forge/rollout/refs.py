"""The rings' git refs (branches forge/ring/<ring>), read and moved with git itself. With a
remote, the refs are read from it (fetched first) and moved there by a push with a lease: a ref
someone else moved since it was read is not overwritten."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from forge.errors import ForgeError

ZERO = "0" * 40


@dataclass(frozen=True)
class Repo:
    path: Path
    remote: str | None = None  # None: the repository's own branches

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ForgeError(f"git {' '.join(args)}: {exc}") from None
        if check and done.returncode:
            last = (done.stderr.strip().splitlines() or ["failed"])[-1]
            raise ForgeError(f"git {' '.join(args)}: {last}")
        return done

    def fetch(self, branches: list[str]) -> None:
        """The remote's branches as they are now; one it does not have (a ring ref not pushed
        yet, created by the move) leaves no stale remote-tracking ref behind."""
        if not self.remote:
            return
        listed = self.git("ls-remote", "--heads", self.remote, *(f"refs/heads/{b}" for b in branches)).stdout
        present = {line.split("\t", 1)[1].removeprefix("refs/heads/") for line in listed.splitlines() if "\t" in line}
        if present:
            self.git("fetch", "--quiet", self.remote, *(f"+refs/heads/{b}:{self.full(b)}" for b in sorted(present)))
        for branch in set(branches) - present:
            self.git("update-ref", "-d", self.full(branch), check=False)

    def full(self, branch: str) -> str:
        return f"refs/remotes/{self.remote}/{branch}" if self.remote else f"refs/heads/{branch}"

    def resolve(self, branch: str) -> str | None:
        done = self.git("rev-parse", "--verify", "--quiet", f"{self.full(branch)}^{{commit}}", check=False)
        return done.stdout.strip() or None

    def commit_of(self, revision: str) -> str:
        """A revision a person names (a sha, a tag, a branch) as a commit."""
        done = self.git("rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}", check=False)
        if not done.stdout.strip():
            raise ForgeError(f"--to: '{revision}' is no commit of {self.path}: name a commit, tag or branch the ring ran")
        return done.stdout.strip()

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def move(self, branch: str, new: str, old: str | None) -> None:
        """Point `branch` at `new`, only if it still points at `old` (None: it does not exist)."""
        if self.remote:
            self.git("push", "--quiet", f"--force-with-lease=refs/heads/{branch}:{old or ''}", self.remote, f"{new}:refs/heads/{branch}")
            self.git("update-ref", self.full(branch), new)
        else:
            self.git("update-ref", "-m", "forge promote", self.full(branch), new, old or ZERO)

    def note(self, ref: str, commit: str, text: str) -> None:
        """Append `text` to the git note of `commit` under `ref`, and push that ref with a remote:
        the record of what a promotion accepted stays in git next to the commit."""
        self.git("notes", f"--ref={ref}", "append", "-m", text, commit)
        if self.remote:
            self.git("push", "--quiet", self.remote, f"{ref}:{ref}")

"""Crash safety of the one folder swap (forge.files.folders): SIGKILL at every step, then recovery."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.files import folders

from forge.generate import writer
from forge.commands.main import main
from forge.generate.tree import Tree, build_tree
from forge.generate.writer import write_tree

OWNED = ["overlays", "clusters/a/argocd", "clusters/b/argocd"]
# steps of a swap of the three owned folders: journal, then 2 renames each, then old copies removed
STEPS = 1 + 2 * len(OWNED) + 1
LAST_RENAME = 1 + 2 * len(OWNED)


def tree(version: str) -> Tree:
    """A small generated tree; `new` adds a folder and drops a file, as a real change would."""
    t = Tree(owned=list(OWNED))
    for rel in ("overlays/a/gpu/values.yaml", "overlays/b/gpu/values.yaml", "clusters/a/argocd/app.yaml",
                "clusters/b/argocd/app.yaml"):
        t.add(rel, f"{version}: {rel}\n")
    if version == "new":
        t.add("overlays/a/loki/values.yaml", "new: loki\n")
    else:
        t.add("overlays/b/old-only.yaml", "old: only\n")
    return t


def snapshot(root: Path) -> dict[str, str]:
    """The tree, without the inputs and the incremental cache's state (.cache/: inodes and times)."""
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith(("inputs/", ".cache/"))}


def killed_at(root: Path, step: int) -> int:
    """Write the new tree in a child process that SIGKILLs itself after swap step `step`."""
    pid = os.fork()
    if pid == 0:  # the child: nothing of pytest must run here
        try:
            os.environ[folders.FAULT_ENV] = f"{step}:kill"
            write_tree(root, tree("new"))
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return status


def test_sigkill_at_every_step_of_the_swap_leaves_a_whole_tree_100_times(tmp_path: Path):
    old, new = snapshot_of(tmp_path / "o", "old"), snapshot_of(tmp_path / "n", "new")
    outcomes = {"old": 0, "new": 0}
    for kill in range(100):
        step = kill % STEPS + 1
        root = tmp_path / f"r{kill}"
        write_tree(root, tree("old"))
        status = killed_at(root, step)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, f"step {step}: not killed"
        assert (root / writer.STAGING / folders.JOURNAL).is_file()
        outcome = writer.recover_interrupted(root)  # what the next generate and `forge check` run first
        assert outcome and ("rolled back" in outcome if step < LAST_RENAME else "completed" in outcome), (step, outcome)
        after = snapshot(root)
        assert (root / "overlays").is_dir()
        assert after == (old if step < LAST_RENAME else new), f"step {step}: a mixed tree"
        outcomes["old" if after == old else "new"] += 1
        assert not (root / writer.STAGING).exists()
        write_tree(root, tree("new"))  # and the next run then works
        assert snapshot(root) == new
    assert outcomes["old"] and outcomes["new"] and sum(outcomes.values()) == 100


def snapshot_of(root: Path, version: str) -> dict[str, str]:
    write_tree(root, tree(version))
    return snapshot(root)


def test_a_torn_journal_is_rolled_back(tmp_path: Path):
    """Killed while writing the journal: no rename had started, the old tree stands."""
    write_tree(tmp_path, tree("old"))
    before = snapshot(tmp_path)
    (tmp_path / writer.STAGING).mkdir()
    (tmp_path / writer.STAGING / folders.JOURNAL).write_text('{"entries": [{"tar')
    assert "rolled back" in writer.recover_interrupted(tmp_path)
    assert snapshot(tmp_path) == before and not (tmp_path / writer.STAGING).exists()


def test_the_journal_lists_every_planned_rename_before_the_first(tmp_path: Path):
    write_tree(tmp_path, tree("old"))
    assert killed_at(tmp_path, 1)
    journal = json.loads((tmp_path / writer.STAGING / folders.JOURNAL).read_text())
    assert [e["target"] for e in journal["entries"]] == OWNED
    assert all(e["old"] and e["new"] for e in journal["entries"])
    assert (tmp_path / "overlays/a/gpu/values.yaml").read_text() == "old: overlays/a/gpu/values.yaml\n"


def generate_killed_at(root: Path, step: int) -> None:
    env = {**os.environ, folders.FAULT_ENV: f"{step}:kill"}
    proc = subprocess.run([sys.executable, "-m", "forge.commands.main", "generate", "--discard-edits", "--root", str(root)], env=env, capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def edit_by_hand(root: Path) -> None:
    """A change on both clusters, so the incremental generate has every cluster folder to swap."""
    for path in ("overlays/a100/loki/values.yaml", "clusters/a100/argocd/kustomization.yaml",
                 "overlays/h200/loki/values.yaml", "clusters/h200/argocd/kustomization.yaml"):
        (root / path).write_text("edited by hand\n")


def test_forge_generate_killed_mid_swap_is_recovered_by_check_and_by_generate(repo_inputs: Path):
    """The real command, two clusters, each changed: one journaled swap of their four folders
    (overlays/<c>, clusters/<c>/argocd). SIGKILL after it moved overlays/a100 aside (missing on
    disk), then after it swapped that in and moved a100's bootstrap aside, then after every
    folder was in but the old copies were not yet removed."""
    assert CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)]).exit_code == 0
    clean = snapshot(repo_inputs)
    edit_by_hand(repo_inputs)
    before = snapshot(repo_inputs)
    generate_killed_at(repo_inputs, 2)
    assert not (repo_inputs / "overlays/a100").exists()
    check = CliRunner().invoke(main, ["check", "--root", str(repo_inputs)])
    assert ("recovered: .forge-staging/journal.json: a generate was interrupted while swapping folders in: "
            "rolled back to the previous tree") in check.output
    assert check.exit_code == 1 and snapshot(repo_inputs) == before  # the old tree, edits and all
    assert not (repo_inputs / writer.STAGING).exists()

    generate_killed_at(repo_inputs, 4)
    assert (repo_inputs / "overlays/a100").exists() and not (repo_inputs / "clusters/a100/argocd").exists()
    result = CliRunner().invoke(main, ["generate", "--discard-edits", "--root", str(repo_inputs)])
    assert result.exit_code == 0 and "rolled back to the previous tree" in result.output
    assert snapshot(repo_inputs) == clean

    edit_by_hand(repo_inputs)
    generate_killed_at(repo_inputs, 9)  # every folder swapped in, old copies not yet removed
    result = CliRunner().invoke(main, ["check", "--root", str(repo_inputs)])
    assert result.exit_code == 0 and "completed (every new entry was already in place)" in result.output
    assert snapshot(repo_inputs) == clean


@pytest.mark.parametrize("step", range(1, LAST_RENAME))
def test_a_disk_error_during_the_swap_is_one_line_exit_2_and_the_old_tree(tmp_path: Path, step: int, monkeypatch):
    write_tree(tmp_path, tree("old"))
    before = snapshot(tmp_path)
    monkeypatch.setenv(folders.FAULT_ENV, f"{step}:oserror")
    with pytest.raises(folders.WriteError) as caught:
        write_tree(tmp_path, tree("new"))
    assert "cannot write the generated tree: No space left on device; the previous files are kept" in str(caught.value)
    assert snapshot(tmp_path) == before and not (tmp_path / writer.STAGING).exists()


def test_generate_into_an_unwritable_place_says_which_path(repo_inputs: Path):
    """Run as root chmod cannot refuse a write: a file where generate needs a folder does."""
    CliRunner().invoke(main, ["generate", "--root", str(repo_inputs)])
    edit_by_hand(repo_inputs)  # something to write
    before = snapshot(repo_inputs)
    (repo_inputs / writer.STAGING).write_text("in the way\n")
    result = CliRunner().invoke(main, ["generate", "--discard-edits", "--root", str(repo_inputs)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {repo_inputs / writer.STAGING}")
    assert "cannot write the generated tree" in lines[0] and "Traceback" not in result.output
    (repo_inputs / writer.STAGING).unlink()
    assert snapshot(repo_inputs) == before


def test_a_generated_tree_is_unchanged_by_the_journaled_swap(repo_inputs: Path):
    tree_ = build_tree(repo_inputs)
    write_tree(repo_inputs, tree_)
    assert writer.diff_tree(repo_inputs, tree_) == []

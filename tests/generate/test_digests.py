"""forge.generate.cache.Digests remembers a file's digest by what the file looks like on disk, so a warm run
reads only what was written since. It must never serve a digest for content it was not computed
from: not after an edit of the same size, not after the edit's mtime is put back, not for a file
written in the same clock tick as it was read."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from forge.generate.cache import Digests, digest, file_digest, tree_digest


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def age(path: Path, seconds: int = 60) -> None:
    """Give the file an older mtime (its ctime stays: only the kernel sets it)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - seconds * 1_000_000_000))


def remembered(folder: Path, text: str) -> Path:
    """A file (with an old mtime) whose digest a saved Digests of `folder` holds."""
    path = folder / "a.yaml"
    path.write_text(text)
    age(path)
    digests = Digests(folder)
    assert digests.file(path) == sha(text)
    digests.save()
    return path


@pytest.fixture
def no_racy_window(monkeypatch):
    """Files written by the test a moment ago count as settled (the window is tested on its own)."""
    monkeypatch.setattr(Digests, "RACY_NS", 0)


def test_a_remembered_digest_is_served_without_reading(tmp_path: Path, no_racy_window):
    path = remembered(tmp_path, "one\n")
    reads: list[str] = []
    again = Digests(tmp_path, of=lambda p: reads.append(p) or "read")
    assert again.file(path) == sha("one\n") and reads == []
    path.write_text("one!\n")
    assert again.file(path) == "read" and reads == [os.path.abspath(path)]


def test_an_edit_of_the_same_size_is_read_again_even_with_its_mtime_put_back(tmp_path: Path, no_racy_window):
    path = remembered(tmp_path, "one\n")
    st = path.stat()
    path.write_text("two\n")  # same size, same inode
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime as it was: ctime still moved
    assert Digests(tmp_path).file(path) == sha("two\n")


def test_a_file_read_in_the_racy_window_is_not_remembered(tmp_path: Path, monkeypatch):
    path = tmp_path / "a.yaml"
    path.write_text("one\n")  # just written: a rewrite in the same tick could keep every stat field
    age(path)  # an old mtime does not help: the write's ctime is recent
    digests = Digests(tmp_path)
    assert digests.file(path) == sha("one\n")
    digests.save()
    assert Digests(tmp_path).known == {}
    monkeypatch.setattr(Digests, "RACY_NS", 0)  # settled: now it is remembered
    digests = Digests(tmp_path)
    digests.file(path)
    digests.save()
    assert list(Digests(tmp_path).known) == [os.path.abspath(path)]


def test_a_replaced_file_and_a_missing_file(tmp_path: Path, no_racy_window):
    path = remembered(tmp_path, "one\n")
    replacement = tmp_path / "new.yaml"
    replacement.write_text("uno\n")
    age(replacement)  # even an old mtime: another inode
    os.replace(replacement, path)
    assert Digests(tmp_path).file(path) == sha("uno\n")
    path.unlink()
    assert Digests(tmp_path).file(path).startswith("unreadable:")


def test_tree_digest_is_the_same_with_and_without_remembered_digests(tmp_path: Path):
    tree = tmp_path / "tree"
    for rel in ("b/x.yaml", "a.yaml", "a-b.yaml", "a/c.yaml", "__pycache__/m.pyc"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(rel)
    plain = tree_digest(tree)
    assert tree_digest(tree, digests=Digests(tmp_path)) == plain
    (tree / "a/c.yaml").write_text("changed")
    assert tree_digest(tree) != plain
    assert file_digest(tree / "a.yaml") == sha("a.yaml")


def test_tree_digest_patterns_select_what_pathlib_glob_selects(tmp_path: Path):
    tree = tmp_path / "tree"
    for rel in ("a/values.yaml", "a/values-extra.yaml", "a/b/values.yaml", "values.yaml", "a/examples/x.yaml",
                "a/examples/deeper/y.yaml", "m.py", "p/q/r.py", "p/__pycache__/r.py", "a/values.yml"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(rel)
    for patterns in (("*/values.yaml", "*/values-*.yaml", "*/examples/*.yaml"), ("**/*.py",), ("a/?/values.yaml",)):
        globbed = sorted({p for pattern in patterns for p in tree.glob(pattern) if p.is_file() and "__pycache__" not in p.parts})
        expected = digest(*(f"{p.relative_to(tree).as_posix()}={file_digest(p)}" for p in globbed))
        assert globbed and tree_digest(tree, patterns) == expected, patterns

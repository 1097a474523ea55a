"""`forge inventory migrate` reads as the loader does (forge.files.textguard, then the C parser's nesting
and alias limits) before ruamel's round trip: a 20,000-deep list was a RecursionError, 10 MB ran
for minutes, a FIFO blocked (issue 36). Each is one `error:` line, exit 2, nothing written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import copy_repo_inputs

A100 = "clusters/a100/inventory.yaml"


def _plant(root: Path, how: str) -> None:
    path = root / A100
    path.unlink()
    if how == "deep":
        path.write_text("format: 1\ncluster: " + "[" * 20_000 + "]" * 20_000 + "\n")
    elif how == "huge":
        path.write_text("format: 1\nnodes:\n" + "  - {name: n, profile: p}\n" * 400_000)  # 10 MB
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "outside":
        (root.parent / "outside.yaml").write_text("format: 1\ncluster: {name: a100}\n")
        path.symlink_to(root.parent / "outside.yaml")


@pytest.mark.parametrize("how, words", [
    ("deep", f"error: {A100}:2: <top>: not valid YAML: exceeded maximum nesting depth"),
    ("huge", f"error: {A100}:1: <top>: cannot read: it is larger than 4 MiB"),
    ("fifo", f"error: {A100}:1: <top>: is not a regular file (a folder, a FIFO, a device or a socket)"),
    ("dev-zero", f"error: {A100}:1: <top>: is a symbolic link (to /dev/zero): an inventory must be a regular file"),
    ("outside", f"error: {A100}:1: <top>: is a symbolic link (to "),
])
def test_migrate_refuses_hostile_inventories_fast(tmp_path: Path, how: str, words: str):
    root = copy_repo_inputs(tmp_path / "repo")
    _plant(root, how)
    h200 = (root / "clusters/h200/inventory.yaml").read_bytes()
    exe = Path(sys.executable).parent / "forge"  # its own process: a FIFO opened blocks, a timeout fails the test
    proc = subprocess.run([str(exe), "inventory", "migrate", "--root", str(root)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert (root / "clusters/h200/inventory.yaml").read_bytes() == h200 and not list(root.rglob("*.forge-tmp"))

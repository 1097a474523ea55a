"""A FIFO, a device or a symbolic link in the generated folders is named by `forge check` and
`forge generate` (exit 1 and 2, nothing written), never opened: opening a FIFO blocks, and a link
may lead to /dev/zero or out of the repository (issue 36: a FIFO hung generate and check, and
check said a tree with a FIFO in it was in step)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import copy_repo_inputs, forge

WRITTEN = "overlays/a100/loki/kustomization.yaml"  # a file generate wrote
EXTRA = "overlays/a100/loki/pipe.yaml"  # a path generate does not write


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = copy_repo_inputs(tmp_path_factory.mktemp("walks") / "repo")
    assert forge(root, "generate").exit_code == 0
    return root


def _plant(root: Path, rel: str, how: str) -> None:
    path = root / rel
    path.unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    else:  # a link to a regular file outside the repository
        (root.parent / "outside.yaml").write_text("secret: x\n")
        path.symlink_to(root.parent / "outside.yaml")


def _forge(root: Path, *args: str) -> subprocess.CompletedProcess:
    """In a process of its own, so a walk that opens a FIFO fails the test instead of hanging it."""
    exe = Path(sys.executable).parent / "forge"
    return subprocess.run([str(exe), *args, "--root", str(root)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("rel", [WRITTEN, EXTRA])
@pytest.mark.parametrize("how,kind", [("fifo", "FIFO"), ("dev-zero", "symbolic link"), ("outside", "symbolic link")])
def test_an_odd_file_in_the_generated_folders_is_named(generated: Path, rel: str, how: str, kind: str):
    before = (generated / WRITTEN).read_bytes() if rel == EXTRA else None
    keep = (generated / WRITTEN).read_bytes()
    _plant(generated, rel, how)
    try:
        check = _forge(generated, "check")
        assert check.returncode == 1, check.stderr
        assert f"out of date: {rel} (not a regular file: a {kind}; forge writes only regular files: delete it)" in check.stderr
        gen = _forge(generated, "generate")
        assert gen.returncode == 2 and f"error: {rel}: " in gen.stderr, gen.stderr  # a link: forge.files.folders' own refusal
        assert "Traceback" not in check.stderr + gen.stderr
        assert os.path.lexists(generated / rel)  # nothing written
        if before is not None:
            assert (generated / WRITTEN).read_bytes() == before
    finally:
        (generated / rel).unlink()
        (generated / WRITTEN).write_bytes(keep)

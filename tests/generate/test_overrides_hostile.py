"""Hostile overrides (issue 36): an override file is read as an inventory is (forge.files.textguard) and
scanned for credentials as an inventory is, before anything is merged or written."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.generate.test_generate import snapshot
from tests.helpers import forge

OVERRIDE = "clusters/h200/overrides/loki/values.yaml"


def plant(root: Path, how: str, tmp: Path) -> None:
    path = root / OVERRIDE
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "link-outside":
        (tmp / "kubeconfig.yaml").write_text("loki: {auth_enabled: false}\n")
        path.symlink_to(tmp / "kubeconfig.yaml")
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "credential":
        path.write_text("loki:\n  # token hf" + "_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567\n  x: 1\n")
    elif how == "alias-bomb":
        path.write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh")))


@pytest.mark.parametrize("how,words", [
    ("link-outside", "outside the repository"), ("dev-zero", "cannot read: it is"),
    ("fifo", "not a regular file"), ("credential", "looks like"), ("alias-bomb", "aliases expand to too much"),
])
def test_a_hostile_override_is_refused_before_anything_is_written(repo_inputs: Path, tmp_path: Path, how, words):
    assert forge(repo_inputs, "generate").exit_code == 0
    before = snapshot(repo_inputs / "overlays")
    plant(repo_inputs, how, tmp_path)
    result = forge(repo_inputs, "generate")
    assert result.exit_code == 2, result.output
    assert f"error: {OVERRIDE}:" in result.output and words in result.output, result.output
    assert "Traceback" not in result.output and "aBcDeFgH" not in result.output
    assert snapshot(repo_inputs / "overlays") == before

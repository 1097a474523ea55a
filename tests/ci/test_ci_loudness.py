"""CI and local checks say when the upstream chart data is missing, instead of passing quietly.

The layouts are made in temp folders: a clone with or without `shared/upstream` beside it."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO

ENV = {k: v for k, v in os.environ.items() if k != "FORGE_UPSTREAM"}


def layout(tmp_path: Path, shared: bool) -> Path:
    """<tmp>/work/p (the scripts CI runs), and <tmp>/work/shared/upstream when `shared`."""
    clone = tmp_path / "work/p"
    for rel in (".ci/run", "ci/find-upstream.sh", "Makefile", "requirements.lock", "pyproject.toml"):
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, clone / rel)
    if shared:
        (tmp_path / "work/shared/upstream/loki-7.3.0").mkdir(parents=True)
    return clone


def find_upstream(clone: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "ci/find-upstream.sh"], cwd=clone, capture_output=True, text=True, env={**ENV, **env})


def test_without_shared_ci_fails_at_once_with_one_line(tmp_path: Path):
    clone = layout(tmp_path, shared=False)
    proc = subprocess.run(["bash", ".ci/run"], cwd=clone, capture_output=True, text=True, env={**ENV, "CI": "true"}, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""  # it stopped before `make setup`
    assert proc.stderr.splitlines() == [
        "error: no upstream chart data: set FORGE_UPSTREAM=DIR or put shared/upstream beside this clone "
        "(../shared/upstream); without it CRDs and chart values go unchecked"]


def test_shared_beside_the_clone_is_found(tmp_path: Path):
    clone = layout(tmp_path, shared=True)
    proc = find_upstream(clone)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str((tmp_path / "work/shared/upstream").resolve())


def test_forge_upstream_wins_and_must_exist(tmp_path: Path):
    clone = layout(tmp_path, shared=True)
    mine = tmp_path / "mine"
    mine.mkdir()
    assert find_upstream(clone, FORGE_UPSTREAM=str(mine)).stdout.strip() == str(mine.resolve())
    proc = find_upstream(clone, FORGE_UPSTREAM=str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: FORGE_UPSTREAM={tmp_path / 'nowhere'} is not a folder")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["validate", "test"])
def test_make_finds_shared_upstream_as_ci_does(tmp_path: Path, target: str):
    clone = layout(tmp_path, shared=True)
    proc = subprocess.run(["make", "-n", target], cwd=clone, capture_output=True, text=True, env=ENV)
    upstream = (tmp_path / "work/shared/upstream").resolve()
    if target == "validate":
        assert f"forge validate --upstream {upstream}" in proc.stdout
    assert "no upstream chart data" not in proc.stdout
    printed = subprocess.run(["make", "-pn", target], cwd=clone, capture_output=True, text=True, env=ENV).stdout
    assert f"FORGE_UPSTREAM := {upstream}" in printed


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["validate", "test"])
def test_make_says_when_there_is_no_upstream_data(tmp_path: Path, target: str):
    clone = layout(tmp_path, shared=False)
    proc = subprocess.run(["make", "-n", target], cwd=clone, capture_output=True, text=True, env=ENV)
    assert "note: no upstream chart data" in proc.stdout and "set FORGE_UPSTREAM=DIR" in proc.stdout


def test_setup_installs_the_pinned_pre_commit_and_hypothesis():
    pins = dict(line.split("==") for line in (REPO / "requirements.lock").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["pre_commit"] == "4.7.0" and pins["hypothesis"] == "6.170.17"
    assert "pre-commit install" in (REPO / "docs/pull-requests.md").read_text()


def test_setup_shows_a_line_per_step():
    makefile = (REPO / "Makefile").read_text()
    steps = [line for line in makefile.splitlines() if line.strip().startswith('@echo "setup ')]
    assert [s.split('"')[1].split(":")[0] for s in steps] == ["setup 1/4", "setup 2/4", "setup 3/4", "setup 4/4"]

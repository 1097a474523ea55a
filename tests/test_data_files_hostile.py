"""forge's own data files (clusters/rings.yaml, charts/versions.yaml, clusters/<c>/scenarios.yaml)
read with the inventory's guards (forge.files.textguard): an alias bomb, a deep nesting, /dev/zero, a
FIFO, binary bytes, a lone carriage return and a link out of the repository are each one
`file:line:` problem, in bounded memory and time, never a traceback (issue 36)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from forge.files.datafile import DataFileError
from forge.inventory.rings import load_rings_file
from forge.twin.scenario import load_scenarios
from forge.facts.versions import chart_pins
from tests.helpers import REPO, copy_repo_inputs

# 600 bytes that expand to 10^8 values if built naively (a "billion laughs" document).
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh"))
DEEP = "rings: " + "[" * 100 + "]" * 100 + "\n"  # libyaml itself stops at 1,000

FILES = {
    "rings": ("clusters/rings.yaml", lambda root: load_rings_file(root)),
    "versions": ("charts/versions.yaml", lambda root: chart_pins(root)),
    "scenarios": ("clusters/h200/scenarios.yaml", lambda root: load_scenarios(root, "h200")),
}


def _plant(path: Path, how: str, outside: Path) -> None:
    path.unlink(missing_ok=True)
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "outside":
        outside.write_text("rings: []\nsource: main\ncharts: {}\nimages: {}\nscenarios: []\n", encoding="utf-8")
        path.symlink_to(outside)
    else:
        path.write_bytes({"bomb": BOMB.encode(), "deep": DEEP.encode(), "binary": b"\x7fELF\x00\x01\xff\xfe",
                          "cr": b"# a\rrings: []\n"}[how])


WORDS = {"bomb": "aliases expand to too much", "deep": "nested more than", "fifo": "not a regular file",
         "dev-zero": "cannot read: it is", "binary": "not UTF-8", "cr": "line break only YAML counts",
         "outside": "outside the repository"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = copy_repo_inputs(tmp_path_factory.mktemp("data") / "repo")
    shutil.copy(REPO / "clusters/h200/scenarios.yaml", root / "clusters/h200/scenarios.yaml")
    return root


@pytest.mark.parametrize("how", list(WORDS))
@pytest.mark.parametrize("which", list(FILES))
def test_a_hostile_data_file_is_one_problem_at_its_line(repo, tmp_path, which, how):
    rel, load = FILES[which]
    root = tmp_path / "repo"
    shutil.copytree(repo, root, symlinks=True)
    _plant(root / rel, how, tmp_path / "outside.yaml")
    with pytest.raises(DataFileError) as caught:
        load(root)
    said = "\n".join(caught.value.lines())
    assert said.startswith(f"{rel}:"), said
    assert WORDS[how] in said, said


def test_forge_check_refuses_an_alias_bomb_in_rings_with_one_error_line(repo, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(repo, root, symlinks=True)
    (root / "clusters/rings.yaml").write_text(BOMB, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--root", str(root)])
    assert result.exit_code == 2, result.output
    assert "clusters/rings.yaml:" in result.output and "aliases expand to too much" in result.output
    assert "Traceback" not in result.output

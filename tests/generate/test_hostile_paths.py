"""A repository as an attacker (or a careless user) can commit it: a swap journal, a symbolic link
where forge owns a tree, an inventory that is not a regular file. Each is refused with one
`error:` line naming the path, exit 2, and a folder outside the repository is never touched."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from forge.commands.main import main
from forge.generate.writer import STAGING
from tests.helpers import copy_repo_inputs


def outside_folder(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder beside the repository, with content whose survival the tests check."""
    victim = tmp_path / "outside"
    (victim / "sub").mkdir(parents=True)
    (victim / "keep.txt").write_text("precious\n")
    (victim / "sub" / "also.txt").write_text("also\n")
    return victim, snapshot(victim)


def snapshot(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_bytes().hex() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".cache" not in p.parts}


def forge(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    root = copy_repo_inputs(tmp_path / "repo")
    assert forge("generate", "--root", str(root)).exit_code == 0
    return root


def plant_journal(root: Path, entries: list[dict]) -> None:
    (root / STAGING).mkdir(exist_ok=True)
    (root / STAGING / "journal.json").write_text(json.dumps({"entries": entries}))


@pytest.mark.parametrize("entries", [
    # the case: "roll back" moves the outside folder into staging, which is then deleted
    [{"target": "../outside", "new": ".forge-staging/new/x", "old": None}],
    [{"target": "overlays", "new": None, "old": "../outside"}],
    [{"target": "overlays", "new": "../outside", "old": ".forge-staging/old/0"}],
    [{"target": "base", "new": None, "old": ".forge-staging/old/0"}],  # inside, but not generate's
], ids=["target-outside", "old-outside", "new-outside", "not-owned"])
@pytest.mark.parametrize("command", ["check", "generate"])
def test_a_planted_journal_never_touches_a_path_outside_the_repository(tmp_path, generated, entries, command):
    victim, before = outside_folder(tmp_path)
    plant_journal(generated, entries)
    tree_before = snapshot(generated)
    result = forge(command, "--root", str(generated))
    assert result.exit_code == 2, result.output
    assert "journal.json" in result.output and "nothing was renamed" in result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    assert snapshot(victim) == before
    assert snapshot(generated) == tree_before  # the journal is left for a person to look at


@pytest.mark.parametrize("text", ['{"entries": [{"target": 1}]}', '[1, 2]', '{"entries": "x"}', "\xff\xfe"])
def test_a_malformed_journal_is_one_error_line(generated, text):
    (generated / STAGING).mkdir()
    (generated / STAGING / "journal.json").write_bytes(text.encode("latin-1"))
    result = forge("check", "--root", str(generated))
    assert result.exit_code == 2 and "journal.json" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("error: ")


@pytest.mark.parametrize("link", ["overlays", "overlays/h200", "clusters/h200/argocd", ".forge-staging",
                                  "overlays/h200/gpu-operator"])
def test_a_committed_symlink_where_forge_owns_a_tree_is_refused(tmp_path, generated, link):
    victim, before = outside_folder(tmp_path)
    target = generated / link
    if target.exists():
        import shutil

        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(victim, target_is_directory=True)
    (generated / "clusters/h200/inventory.yaml").write_text(
        (generated / "clusters/h200/inventory.yaml").read_text() + "\n# an edit: generate has work to do\n")
    result = forge("generate", "--root", str(generated))
    assert result.exit_code == 2, result.output
    assert f"error: {link}: is a symbolic link" in result.output
    assert snapshot(victim) == before and target.is_symlink()


def test_a_dangling_symlink_inventory_does_not_retire_the_cluster(generated):
    inventory = generated / "clusters/h200/inventory.yaml"
    inventory.unlink()
    inventory.symlink_to(generated / "nowhere.yaml")
    files = snapshot(generated / "overlays/h200")
    result = forge("generate", "--root", str(generated))
    assert result.exit_code == 2, result.output
    assert "clusters/h200/inventory.yaml:1: <top>: is a symbolic link" in result.output
    assert snapshot(generated / "overlays/h200") == files


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_an_inventory_that_is_not_a_regular_file_is_refused_without_blocking(generated, kind):
    inventory = generated / "clusters/h200/inventory.yaml"
    inventory.unlink()
    if kind == "fifo":
        os.mkfifo(inventory)
    elif kind == "folder":
        inventory.mkdir()
    else:
        inventory.symlink_to("/dev/zero")
    for command in ("generate", "check"):
        result = forge(command, "--root", str(generated))
        assert result.exit_code == 2 and "clusters/h200/inventory.yaml:1:" in result.output, result.output


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "folder"])
def test_the_inventory_checker_reads_only_regular_files_up_to_the_cap(tmp_path, special):
    """`python -m forge.inventory FILE` (and every loader caller) on a path given by hand."""
    from forge.errors import InventoryError
    from forge.inventory import load_inventory

    path = tmp_path / "inventory.yaml"
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    else:
        path = Path(special)
    with pytest.raises(InventoryError) as caught:
        load_inventory(path, "inv.yaml")
    (problem,) = caught.value.problems
    assert problem.file == "inv.yaml" and problem.line == 1
    assert "regular file" in problem.message or "MiB" in problem.message or "folder" in problem.message


def test_a_cluster_folder_linked_outside_is_refused_before_anything_is_read(tmp_path, generated):
    victim, before = outside_folder(tmp_path)
    (victim / "inventory.yaml").write_text((generated / "clusters/h200/inventory.yaml").read_text())
    before = snapshot(victim)
    import shutil

    shutil.rmtree(generated / "clusters/h200")
    (generated / "clusters/h200").symlink_to(victim, target_is_directory=True)
    for command in ("check", "generate"):
        result = forge(command, "--root", str(generated))
        assert result.exit_code == 2, result.output
        assert result.output.startswith(("error: clusters/h200/inventory.yaml:1: <top>: h200/ is a symbolic link",
                                         "error: clusters/h200: is a symbolic link")), result.output
    assert snapshot(victim) == before and not (victim / "argocd").exists()


@pytest.mark.parametrize("link", ["build", "build/rendered"])
def test_a_linked_build_folder_is_refused_by_render(tmp_path, generated, link):
    victim, before = outside_folder(tmp_path)
    (generated / link).parent.mkdir(parents=True, exist_ok=True)
    (generated / link).symlink_to(victim, target_is_directory=True)
    result = forge("render", "--root", str(generated))
    assert result.exit_code == 2 and result.output.startswith(f"error: {link}: is a symbolic link"), result.output
    assert snapshot(victim) == before

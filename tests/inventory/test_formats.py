"""The inventory's format version (forge.inventory.formats) and `forge inventory migrate`: the loader
reads the current format only, an older one is refused with the command that rewrites it, and the
command rewrites older inventories in place, keeping every comment, idempotent, all or nothing."""
from __future__ import annotations

from pathlib import Path

import pytest

from forge.inventory import formats

from tests.helpers import CLUSTERS, H200_FILE, edit, forge, inventory_text, line_of, problems

FORMAT_LINE = f"format: {formats.CURRENT}  # the inventory's format (docs/inventory.md, \"Format versions\")\n"


def format_1(text: str) -> str:
    """The shipped inventory as it was written before forge stated a format (no `format:` key)."""
    return edit(text, FORMAT_LINE, "")


def test_the_shipped_inventories_state_the_current_format():
    for cluster in (*CLUSTERS, "h200-burst"):
        assert FORMAT_LINE in inventory_text(cluster), cluster


def test_the_loader_refuses_an_unversioned_inventory_pointing_at_migrate():
    found = problems(format_1(inventory_text("h200")))
    assert len(found) == 1, found  # alone: not a flood of what the newer format's rules say
    assert found[0].startswith(f"{H200_FILE}:1: format: no format version: this inventory is in format 1")
    assert "run `forge inventory migrate`" in found[0] and f"`format: {formats.CURRENT}`" in found[0]


@pytest.mark.parametrize("value, words", [
    ("3", "format 3 is newer than this forge knows (it reads format 2"),
    ("1", "format 1 is older than this forge reads (2): run `forge inventory migrate`"),
    ("two", "got 'two'; expected the format version 2"),
    ('"2"', "got '2'; expected the format version 2"),
    ("true", "got True; expected the format version 2"),
])
def test_the_loader_refuses_other_formats_naming_what_it_reads(value, words):
    text = edit(inventory_text("h200"), FORMAT_LINE, f"format: {value}\n")
    line = line_of(text, f"format: {value}", whole=True)
    found = problems(text)
    assert len(found) == 1 and found[0].startswith(f"{H200_FILE}:{line}: format: {words}"), found


def old_repo(repo: Path) -> dict[str, str]:
    """Every cluster of the repo written in format 1; the texts they must migrate to."""
    wanted = {}
    for path in sorted((repo / "clusters").glob("*/inventory.yaml")):
        wanted[path.relative_to(repo).as_posix()] = path.read_text()
        path.write_text(format_1(path.read_text()))
    return wanted


def texts(repo: Path) -> dict[str, str]:
    return {p.relative_to(repo).as_posix(): p.read_text() for p in sorted((repo / "clusters").glob("*/inventory.yaml"))}


def test_migrate_rewrites_in_place_keeping_every_comment_and_is_idempotent(repo_inputs: Path):
    wanted = old_repo(repo_inputs)
    result = forge(repo_inputs, "inventory", "migrate")
    assert result.exit_code == 0, result.output
    assert "migrated clusters/h200/inventory.yaml: format 1 -> 2" in result.output
    assert texts(repo_inputs) == wanted  # byte for byte the shipped files: comments, order, quotes kept
    again = forge(repo_inputs, "inventory", "migrate")
    assert again.exit_code == 0 and texts(repo_inputs) == wanted
    assert "clusters/h200/inventory.yaml: already format 2, unchanged" in again.output
    assert not list(repo_inputs.rglob("*.forge-tmp"))


def test_migrate_only_the_named_cluster(repo_inputs: Path):
    wanted = old_repo(repo_inputs)
    result = forge(repo_inputs, "inventory", "migrate", "--cluster", "a100")
    assert result.exit_code == 0, result.output
    after = texts(repo_inputs)
    assert after["clusters/a100/inventory.yaml"] == wanted["clusters/a100/inventory.yaml"]
    assert after["clusters/h200/inventory.yaml"] == format_1(wanted["clusters/h200/inventory.yaml"])
    unknown = forge(repo_inputs, "inventory", "migrate", "--cluster", "b200")
    assert unknown.exit_code == 2 and "no cluster 'b200'" in unknown.output


@pytest.mark.parametrize("garbage, words", [
    ("cluster: [unclosed\n", "clusters/a100/inventory.yaml:2: <top>: not valid YAML"),
    ("- just\n- a list\n", "clusters/a100/inventory.yaml:1: <top>: not an inventory: expected a mapping"),
    ("format: 9\ncluster: {name: a100}\n", "clusters/a100/inventory.yaml:1: format: got 9; `forge inventory migrate` "
                                           "rewrites format 1 into format 2: this one is newer than this forge"),
    ("format: x\ncluster: {name: a100}\n", "clusters/a100/inventory.yaml:1: format: got 'x'"),
    ("cluster:\n    name: a100\n    nope: 1\n", "clusters/a100/inventory.yaml:3: cluster.nope: unknown key 'nope'"),
])
def test_migrate_refuses_garbage_and_writes_nothing(repo_inputs: Path, garbage: str, words: str):
    old_repo(repo_inputs)
    (repo_inputs / "clusters/a100/inventory.yaml").write_text(garbage)
    before = texts(repo_inputs)
    result = forge(repo_inputs, "inventory", "migrate")
    assert result.exit_code == 2, result.output
    assert f"error: {words}" in result.output and "Traceback" not in result.output
    assert texts(repo_inputs) == before  # not even the good h200 inventory: all or nothing
    assert not list(repo_inputs.rglob("*.forge-tmp"))


def test_migrate_refuses_a_layout_it_would_reindent(repo_inputs: Path):
    old_repo(repo_inputs)
    path = repo_inputs / "clusters/a100/inventory.yaml"
    path.write_text(path.read_text().replace("\n  name: a100\n", "\n  name:   a100\n"))
    before = texts(repo_inputs)
    result = forge(repo_inputs, "inventory", "migrate", "--cluster", "a100")
    assert result.exit_code == 2 and "cannot reproduce exactly" in result.output and "add `format: 2`" in result.output
    assert texts(repo_inputs) == before


def test_the_next_format_is_one_migration(monkeypatch):
    """The registry: one more function makes format 3 current and migrate runs 1 -> 2 -> 3."""
    from ruamel.yaml import YAML

    monkeypatch.setattr(formats, "MIGRATIONS", dict(formats.MIGRATIONS))
    formats.migration(2)(lambda doc: doc["cluster"].insert(1, "power_budget_kw", 0))
    monkeypatch.setattr(formats, "CURRENT", 3)
    doc = YAML().load("# top\ncluster:\n  name: x  # kept\n")
    assert formats.migrate_document(doc, "f") == [2, 3]
    assert list(doc) == ["format", "cluster"] and doc["format"] == 3 and list(doc["cluster"]) == ["name", "power_budget_kw"]
    assert formats.migrate_document(doc, "f") == []

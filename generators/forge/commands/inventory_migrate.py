"""`forge inventory migrate`: rewrite older inventories in the current format, in place.

Each file is round-trip loaded with ruamel.yaml, as `forge node` edits it (comments, key order and
quoting survive), moved through forge.inventory.formats' migrations, and dumped with the
indentation that reproduces the original file byte for byte (a file no indentation reproduces is
refused: the rewrite would re-indent it). Every new text is checked with the inventory loader's
rules before any file is written; each file is then written atomically (next to it, renamed over
it) under the repository's writer lock, so a refused or interrupted run leaves every inventory as
it was. An inventory already in the current format is left untouched: running it twice is a no-op.
"""
from __future__ import annotations

import dataclasses
import difflib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from forge.files import textguard
from forge.commands.common import root_option, user_errors
from forge.errors import ForgeError, InventoryError, Problem
from forge.fleet import inventory_paths, load_plan_text
from forge.inventory import formats
from forge.inventory.loader import parse_yaml
from forge.files.lock import repo_lock
from forge.commands.node import inventory_file, write_atomically
from forge.nodes.yamltext import _INDENTS, _yaml


@dataclass(frozen=True)
class Outcome:
    file: str
    passed: list[int]  # the formats the file went through; empty: it was already current
    found: Any


def _dump(doc: Any, indent: tuple[int, int, int]) -> str:
    out = io.StringIO()
    _yaml(indent).dump(doc, out)
    return out.getvalue()


def _layout(text: str, file: str) -> tuple[CommentedMap, tuple[int, int, int]]:
    """The round-trip document and the indentation that dumps it back exactly as written."""
    try:
        doc = _yaml().load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InventoryError([Problem(file, mark.line + 1 if mark else 1, "",
                                      f"not valid YAML ({getattr(exc, 'problem', None) or exc}): fix it by hand, then migrate")]) from None
    if not isinstance(doc, CommentedMap):
        raise InventoryError([Problem(file, 1, "", "not an inventory: expected a mapping with cluster, profiles, nodes")])
    for indent in _INDENTS:
        if _dump(doc, indent) == text:
            return doc, indent
    raise InventoryError([Problem(file, 1, "", (
        "written in a layout (indentation, line ends) migrate cannot reproduce exactly, so rewriting it "
        f"would re-indent the file: add `{formats.FORMAT_KEY}: {formats.CURRENT}` as its first key by hand"))])


def migrated_text(text: str, file: str) -> tuple[str, Outcome]:
    """The text in the current format (the same text when it already is), checked by the loader."""
    doc, indent = _layout(text, file)
    found = formats.version_of(doc)
    passed = formats.migrate_document(doc, file)
    if not passed:
        return text, Outcome(file, passed, found)
    new = _dump(doc, indent)
    try:
        load_plan_text(new, file)  # every rule generate applies: nothing is written that generate refuses
    except InventoryError as exc:  # its lines are the new text's: say them as the file on disk has them
        where = _old_lines(text, new)
        raise InventoryError([dataclasses.replace(p, line=where.get(p.line, p.line)) for p in exc.problems]) from None
    return new, Outcome(file, passed, found)


def _old_lines(old: str, new: str) -> dict[int, int]:
    """1-based line of the new text -> the old text's line it stands for (an added line: the next one)."""
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    out = {}
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        for j in range(b0, b1):
            out[j + 1] = (a0 + (j - b0) if tag == "equal" else min(a0, max(a1 - 1, a0))) + 1
    return out


def _paths(root: Path, clusters: tuple[str, ...]) -> list[tuple[Path, str]]:
    if clusters:
        return [inventory_file(root, c) for c in dict.fromkeys(clusters)]
    paths = inventory_paths(root)
    if not paths:
        raise ForgeError(f"{root}: no clusters/*/inventory.yaml here: run forge in a forge repository (or pass --root)")
    return [(p, p.relative_to(root).as_posix()) for p in paths]


def migrate(root: Path, clusters: tuple[str, ...] = ()) -> list[Outcome]:
    """Migrate the clusters' inventories (all of them by default); all or none are written."""
    with repo_lock(root, "inventory migrate"):
        planned, problems = [], []
        for path, display in _paths(root, clusters):
            try:
                # the inventory's guards first (a regular file in the repository, 4 MiB, UTF-8, then
                # nesting and aliases by the C parser): ruamel's round trip recursed without end on a
                # 20,000-deep list and ran for minutes on 10 MB
                text = textguard.read_text(path, display, root=root, limit=textguard.MAX_INVENTORY_BYTES, what="an inventory")
                parse_yaml(text, display)
                new, outcome = migrated_text(text, display)
            except InventoryError as exc:
                problems += exc.problems
                continue
            except (OSError, UnicodeDecodeError) as exc:
                problems.append(Problem(display, 1, "", f"cannot read: {exc}"))
                continue
            planned.append((path, new, outcome))
        if problems:
            raise InventoryError(problems)
        for path, new, outcome in planned:
            if outcome.passed:
                write_atomically(path, new)
        return [outcome for _, _, outcome in planned]


@click.group("inventory")
def inventory() -> None:
    """The inventories (clusters/<cluster>/inventory.yaml): their format version."""


_HELP = f"""Rewrite older inventories in format {formats.CURRENT}, in place, keeping their comments and key order.

Each new text is checked with every rule `forge generate` applies before any file is written, and
each file is replaced atomically; an inventory already in format {formats.CURRENT} is left as it is, so
running it again changes nothing. The generated files do not change: `forge check` stays green.
"""


@inventory.command("migrate", help=_HELP)
@root_option
@click.option("--cluster", "clusters", multiple=True, metavar="NAME", help="Only this cluster (repeatable; default: every cluster).")
@user_errors
def migrate_command(root: Path, clusters: tuple[str, ...]) -> None:
    for outcome in migrate(root, clusters):
        if outcome.passed:
            steps = " -> ".join(map(str, [outcome.found, *outcome.passed]))
            click.echo(f"migrated {outcome.file}: format {steps}")
        else:
            click.echo(f"{outcome.file}: already format {formats.CURRENT}, unchanged")

"""`forge check`: the generated tree against what the inputs give, as text, JSON (a versioned
shape, docs/cli.md) or GitHub annotations. Exit 0 in step, 1 out of date."""
from __future__ import annotations

import json
from pathlib import Path

import click

from forge import ghactions
from forge.generate.tree import build_tree
from forge.generate.handedits import DISCARD, hand_edits
from forge.generate.writer import diff_tree, recover_interrupted

JSON_VERSION = 1


def run_check(root: Path, output: str = "text", fmt: str = "text") -> int:
    tree = build_tree(root)
    recover_interrupted(root)  # an interrupted generate: put the tree back whole before comparing
    problems = diff_tree(root, tree)
    edits = hand_edits(root, sorted({rel.split("/")[1] for rel in tree.files})) if problems else []
    if output == "json":
        click.echo(json.dumps({
            "kind": "forge.check", "version": JSON_VERSION, "ok": not problems,
            "out_of_date": [{"path": line.split(" (", 1)[0], "state": line.split(" (", 1)[1].split(":")[0].rstrip(")")}
                            for line in problems],
            "changed_by_hand": [{"path": line.split(": ", 1)[0], "message": line.split(": ", 1)[1]} for line in edits],
        }, indent=2, sort_keys=True))
        return 1 if problems else 0
    if not problems:
        click.echo("generated files are in step with the inventories")
        return 0
    for line in problems:
        if fmt == "github":
            path, _, state = line.partition(" (")
            click.echo(ghactions.command("error", f"out of date ({state}: run `make generate`", file=path, title="forge check"))
        click.echo(f"out of date: {line}", err=True)
    for line in edits:
        if fmt == "github":
            path, _, message = line.partition(": ")
            click.echo(ghactions.command("error", message, file=path, title="forge check: changed by hand"))
        click.echo(f"changed by hand: {line}", err=True)
    click.echo(f"{len(problems)} generated files differ from the inventory: "
               + (f"{len(edits)} changed by hand: move each change where it belongs, restore the file, then "
                  f"`make generate` (or `{DISCARD}` to lose them)" if edits else "run `make generate`"), err=True)
    return 1

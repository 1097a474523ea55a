"""The `forge diff` command."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from forge.errors import ForgeError
from forge.commands.common import EXIT_FOUND, cluster_option, root_option, user_errors


@click.command("diff")
@root_option
@click.option("--base", "ref", required=True, metavar="GIT-REF",
              help="The revision to compare the working tree with, e.g. origin/main or HEAD.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
              help="markdown: a pull-request comment (summary table, collapsible per-object diffs).")
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: one JSON document on stdout (kind forge.diff, version 1; docs/cli.md has its shape).")
@cluster_option
@click.option("--component", "components", multiple=True, metavar="NAME",
              help="Only this component's objects and risks (repeatable; argocd: the bootstrap).")
@click.option("--kind", "kinds", multiple=True, metavar="KIND",
              help="Only objects of this kind, e.g. PrometheusRule or HelmValues (repeatable).")
@click.option("--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the text format (removed red, added green, headings cyan); auto: when stdout is a "
                   "terminal and NO_COLOR is not set.")
@user_errors
def diff(root: Path, ref: str, fmt: str, output: str, only: tuple[str, ...], components: tuple[str, ...],
         kinds: tuple[str, ...], color: str) -> None:
    """Show what changes on each cluster between GIT-REF and the working tree, risks first.

    Renders both in temporary folders (the base through a temporary git worktree); nothing in
    your tree changes. Exit code: 0 no change, 1 changes, 2 error.
    """
    from forge.diff import diff_against
    from forge.diff.report import markdown, text

    if output == "json" and fmt != "text":
        raise ForgeError(f"-o json: goes without --format {fmt} (the JSON document is the whole output)")
    report = diff_against(root, ref, only, components, kinds)
    if output == "json":
        from forge.diff.json_report import dumps

        click.echo(dumps(report), nl=False)
    elif fmt == "markdown":
        click.echo(markdown(report), nl=False)
    else:
        painted = use_color(color)
        click.echo(text(report, painted), nl=False, color=painted)
    sys.exit(EXIT_FOUND if report.changed else 0)


def use_color(choice: str) -> bool:
    """--color: always, never, or (auto) when stdout is a terminal and NO_COLOR is unset or empty
    (no-color.org)."""
    if choice != "auto":
        return choice == "always"
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()

"""The `forge diff` command."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from forge.cli_common import EXIT_FOUND, cluster_option, root_option, user_errors


@click.command("diff")
@root_option
@click.option("--base", "ref", required=True, metavar="GIT-REF",
              help="The revision to compare the working tree with, e.g. origin/main or HEAD.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown"]), default="text", show_default=True,
              help="markdown: a pull-request comment (summary table, collapsible per-object diffs).")
@cluster_option
@user_errors
def diff(root: Path, ref: str, fmt: str, only: tuple[str, ...]) -> None:
    """Show what changes on each cluster between GIT-REF and the working tree, risks first.

    Renders both in temporary folders (the base through a temporary git worktree); nothing in
    your tree changes. Exit code: 0 no change, 1 changes, 2 error.
    """
    from forge.diff import diff_against
    from forge.diff.report import markdown, text

    report = diff_against(root, ref, only)
    click.echo(markdown(report) if fmt == "markdown" else text(report), nl=False)
    sys.exit(EXIT_FOUND if report.changed else 0)

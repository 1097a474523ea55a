"""`forge workflows`: the engineers' Flyte code in workflows/, compiled and judged."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from forge.commands.common import root_option, user_errors


@click.group()
def workflows() -> None:
    """The seed's workloads as Flyte code (workflows/, docs/workflows.md)."""


@workflows.command("check")
@root_option
@user_errors
def check_command(root: Path) -> None:
    """Compile workflows/ with the real flytekit and check every task of every target in
    workflows/targets.yaml against its cluster: PodTemplate, LocalQueue, priority classes,
    resources against flavors, quotas and nodes, the fabric of multi-node training, the image
    pin. Exit 0 when all pass, 1 listing each problem (task, field, cluster), 2 on bad input."""
    from forge.workflows.check import check

    verdict = check(root)
    for line in verdict.problems:
        click.echo(line)
    if verdict.problems:
        click.echo(f"{len(verdict.problems)} problem(s) in {verdict.checked} task(s) checked", err=True)
        sys.exit(1)
    click.echo(f"workflows: {verdict.checked} task(s) compiled with flytekit and checked, no problem")

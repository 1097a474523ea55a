"""What every forge command shares: the --root option and the one place errors reach people.

A ForgeError prints its lines and exits 2; anything else is a bug and keeps its traceback.
Exit codes: 0 fine, 1 the check found differences or failures, 2 bad input or environment.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from forge.errors import ForgeError

EXIT_FOUND = 1
EXIT_ERROR = 2


def user_errors(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ForgeError as exc:
            for line in exc.lines():
                click.echo(f"error: {line}" if not line[:1].isspace() else line, err=True)
            sys.exit(EXIT_ERROR)

    return wrapper


root_option = click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True,
    envvar="FORGE_ROOT", help="The forge repository to work on.",
)

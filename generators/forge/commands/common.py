"""What every forge command shares: the --root option and the one place errors reach people.

Exit codes, the same for every command:
  0    done, or no change;
  1    the check found changes (diff, check) or validation failures;
  2    bad input or usage (a ForgeError: its lines are printed, no traceback; click's usage errors);
  130  interrupted (Ctrl-C), whatever was running when it came: 128 + SIGINT, as shells report it.
Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import functools
import signal
import sys
from pathlib import Path

import click

from forge.progress import stop_all

from forge.errors import ForgeError

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_ERROR = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT

_interrupted = False  # set by the SIGINT handler: a child killed by the same Ctrl-C is not an error


def _on_sigint(signum, frame):
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _exit_interrupted() -> None:
    click.echo("interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


def _tolerant_streams() -> None:
    """Under a locale that is not UTF-8 (LC_ALL=POSIX without Python's UTF-8 mode), text forge
    prints (an inventory's description, a diff) is escaped rather than a UnicodeEncodeError;
    what forge reads and writes is UTF-8 whatever the locale (encoding= on every read)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


class ForgeGroup(click.Group):
    """The top-level command group: maps how a command ended to the exit codes above."""

    def main(self, *args, **kwargs):  # type: ignore[override]
        _tolerant_streams()
        try:
            previous = signal.signal(signal.SIGINT, _on_sigint)
        except ValueError:  # not the main thread (embedded): keep the handler there is
            previous = None
        try:
            self._run(*args, **kwargs)
        finally:
            if previous is not None:  # a test runner calling main() keeps its own handler
                signal.signal(signal.SIGINT, previous)

    def _run(self, *args, **kwargs) -> None:
        kwargs["standalone_mode"] = False
        kwargs.setdefault("complete_var", "_FORGE_COMPLETE")  # `forge completion` scripts set it, however forge was started
        try:
            result = super().main(*args, **kwargs)
        except (KeyboardInterrupt, click.Abort):
            _exit_interrupted()
        except click.ClickException as exc:  # usage errors: exit 2, with click's message
            exc.show()
            sys.exit(exc.exit_code)
        except BrokenPipeError:  # `forge diff | head`: the reader left; not an error of ours
            sys.exit(EXIT_OK)
        except Exception:
            if _interrupted:  # e.g. a kustomize child killed by the same Ctrl-C
                _exit_interrupted()
            raise
        # Not standalone, click returns the code given to ctx.exit() (--help: 0), else the command's value.
        sys.exit(result if isinstance(result, int) else EXIT_OK)


def user_errors(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ForgeError as exc:
            if _interrupted:
                _exit_interrupted()
            for line in exc.lines():
                click.echo(f"error: {line}" if not line[:1].isspace() else line, err=True)
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:
            raise  # the reader left (ForgeGroup: exit 0)
        except OSError as exc:
            # The disk or the system refused (read-only, full, a file where a folder belongs, a
            # tool that vanished): every write goes through a staged swap or an atomic replace,
            # and generate probes its cache before swapping, so the tree is whole. One line naming
            # the path, never a traceback.
            if _interrupted:
                _exit_interrupted()
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"error: {where}{exc.strerror or exc} (the tree is whole: each write is staged, then swapped in)", err=True)
            sys.exit(EXIT_ERROR)
        finally:
            stop_all()  # a stage the command left unfinished beats no more

    return wrapper


ROOT_MARKERS = ("clusters", "base", "charts/versions.yaml")  # what makes a folder a forge repository


def find_root(start: Path) -> Path:
    """The forge repository `start` is in: the nearest folder at or above it holding clusters/,
    base/ and charts/versions.yaml (as git finds .git); `start` itself when there is none (the
    command then says what it misses there)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if all((folder / marker).exists() for marker in ROOT_MARKERS):
            return folder
    return start


def _root(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    if ctx.get_parameter_source(param.name) is click.core.ParameterSource.DEFAULT:
        return find_root(Path.cwd())
    return value


root_option = click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), default=".", callback=_root,
    envvar="FORGE_ROOT", help="The forge repository to work on [default: the one the current folder is in, "
                              "found upwards as git finds its repository].",
)


# --cluster, the same on generate, render, validate and diff (docs/cli.md: what each does with
# the other clusters and with what the fleet shares).
def _complete_clusters(ctx: click.Context, param: click.Parameter, incomplete: str):
    """Shell completion of --cluster: the clusters of the repository the shell is in."""
    from click.shell_completion import CompletionItem

    root = find_root(Path.cwd())
    names = sorted(p.parent.name for p in (root / "clusters").glob("*/inventory.yaml"))
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


cluster_option = click.option(
    "--cluster", "only", multiple=True, metavar="NAME", shell_complete=_complete_clusters,
    help="Only this cluster (repeatable); the other clusters' files are left as they are.")

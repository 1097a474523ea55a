"""CI logs a line at least every 10 s of a long stage (issue 24): forge.progress's heartbeat when
its stream is not a terminal; FORGE_HEARTBEAT_S shortens it here."""
from __future__ import annotations

import io
import importlib
import time

import forge.progress as progress


def test_a_line_every_interval_while_a_stage_runs_off_a_terminal(monkeypatch):
    monkeypatch.setenv("FORGE_HEARTBEAT_S", "0.2")
    module = importlib.reload(progress)
    try:
        stream = io.StringIO()
        bar = module.Progress("render", stream=stream, live=False)
        bar(1, 4)
        time.sleep(0.75)
        bar(2, 4)
        bar.finish()
        lines = stream.getvalue().splitlines()
        beats = [line for line in lines if line.startswith("render: 1/4 clusters, ") and line.endswith("s so far")]
        assert len(beats) >= 2, lines
        assert lines[-1].startswith("render: 2/4 clusters in ")
        count = len(lines)
        time.sleep(0.5)
        assert len(stream.getvalue().splitlines()) == count  # finished: no more beats
        live = io.StringIO()
        module.Progress("render", stream=live, live=True).finish()
        assert "so far" not in live.getvalue()
    finally:
        monkeypatch.delenv("FORGE_HEARTBEAT_S")
        importlib.reload(progress)


def test_the_interval_is_ten_seconds_in_ci(monkeypatch):
    monkeypatch.delenv("FORGE_HEARTBEAT_S", raising=False)
    monkeypatch.setenv("CI", "true")
    try:
        assert importlib.reload(progress).HEARTBEAT_S == 10
        monkeypatch.delenv("CI")
        assert importlib.reload(progress).HEARTBEAT_S == 0
    finally:
        importlib.reload(progress)


def test_a_command_that_fails_mid_stage_leaves_no_heartbeat_running(monkeypatch):
    """A stage whose command fails never reaches finish(): its beat must still stop with the
    command (leaked beats into a test runner's captured output slowed a CI run to a crawl)."""
    import threading

    import click
    from click.testing import CliRunner

    from forge import progress
    from forge.commands.common import user_errors
    from forge.errors import ForgeError
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.05)

    @click.command()
    @user_errors
    def fails() -> None:
        progress.Progress("generate", live=False)
        raise ForgeError("no")

    assert CliRunner().invoke(fails).exit_code == 2
    assert not progress._RUNNING
    threading.Event().wait(0.2)
    assert not [t for t in threading.enumerate() if t.name == "progress-generate" and t.is_alive()]

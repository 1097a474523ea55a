"""Two forge runs on one machine (two boxes started at once, or a test beside `make twin`) may build
the same box program together. The first to finish wins; the other must not fail with "Directory
not empty" (seen: two builds of cyclonus, one crashed with a traceback). No Go is run here: the
build command is replaced by one that writes the binary, as `go build -o` would."""
from __future__ import annotations

from pathlib import Path

from forge.twin import binaries
from forge.twin.pins import box_pins

ROOT = Path(__file__).resolve().parents[2]


def _builder(tmp_path, run):
    builder = binaries.Builder(ROOT, box_pins(ROOT), lambda line: None)
    builder.cache = tmp_path / "cache"
    builder._run = run
    return builder, builder.pins.program("cyclonus")


def _write_binary(content):
    def run(cmd, cwd, env, what):
        out = Path(cmd[cmd.index("-o") + 1])
        (out / "netpol-verdicts").write_text(content)
    return run


def test_a_build_finished_meanwhile_by_another_run_is_kept_and_ours_dropped(tmp_path):
    def run(cmd, cwd, env, what):  # the other run completes the same folder while ours builds
        other = builder.folder(program)
        other.mkdir(parents=True)
        (other / "netpol-verdicts").write_text("the other run's")
        (other / binaries._DONE).write_text("go1.26\n")
        _write_binary("ours")(cmd, cwd, env, what)

    builder, program = _builder(tmp_path, run)
    builder._build(program, builder.folder(program))
    folder = builder.folder(program)
    assert (folder / "netpol-verdicts").read_text() == "the other run's"
    assert [p.name for p in builder.cache.iterdir()] == [folder.name]  # our temporary build is gone


def test_a_half_built_folder_left_by_a_crash_is_replaced(tmp_path):
    builder, program = _builder(tmp_path, _write_binary("ours"))
    folder = builder.folder(program)
    folder.mkdir(parents=True)
    (folder / "netpol-verdicts").write_text("half")  # no .complete: a build that was killed
    builder._build(program, folder)
    assert (folder / "netpol-verdicts").read_text() == "ours" and (folder / binaries._DONE).is_file()

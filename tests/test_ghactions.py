"""`--format github`: a hostile label, reason or file name stays inside its annotation (issue 36:
a line break reached the runner unescaped and started a workflow command of its own)."""
from __future__ import annotations

import re

from forge import ghactions
from forge.validate.failure import Failure
from forge.validate.locate import Place
from forge.validate.output import _github

HOSTILE = "x%0A\r\n::add-mask::secret\n::stop-commands::t"


def _unescape(text: str, prop: bool) -> str:
    """What the runner reads back (actions/runner ActionCommand: %0D, %0A, %3A, %2C, then %25)."""
    for code, char in ([("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if prop else []) + [("%25", "%")]):
        text = text.replace(code, char)
    return text


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    """The runner's parse: the command up to the first `::` after the opening one, then the data."""
    assert line.startswith("::") and "\n" not in line and "\r" not in line
    head, _, data = line[2:].partition("::")
    level, _, props = head.partition(" ")
    pairs = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return level, {k: _unescape(v, True) for k, v in pairs.items()}, _unescape(data, False)


def test_a_command_round_trips_whatever_its_text():
    line = ghactions.command("error", HOSTILE, file=f"overlays/a,b::c/{HOSTILE}.yaml", line=3, title="t: a, b")
    assert _parse(line) == ("error", {"file": f"overlays/a,b::c/{HOSTILE}.yaml", "line": "3", "title": "t: a, b"}, HOSTILE)


def test_a_validate_annotation_keeps_a_hostile_reason_and_file_inside_it():
    failure = Failure("h200", "lo\nki", "Pod/loki/x", "spec", HOSTILE)
    line = _github(failure, Place(file="build/rendered/h200/loki.yaml", line=4, source=f"clusters/h200/overrides/loki/{HOSTILE}.yaml",
                                  source_line=9), "error")
    level, props, data = _parse(line)
    assert props == {"file": f"clusters/h200/overrides/loki/{HOSTILE}.yaml", "line": "9", "title": "forge validate: h200 / lo\nki"}
    assert data == f"Pod/loki/x / spec / {HOSTILE}"
    assert not re.search(r"[\r\n]", line)
